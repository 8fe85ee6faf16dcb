using System.Text;

namespace Magpie.Contracts.Documents;

/// <summary>The rules for document ids and the collection derived from them (see ARCHITECTURE.md, Contracts).</summary>
public static class DocumentId
{
    public const int MaxUtf8Bytes = 512;

    /// <summary>Collection of documents whose id has no prefix and that carry no explicit collection.</summary>
    public const string EmptyCollection = "@empty";

    /// <summary>Returns null when the id is acceptable, otherwise the reason it is not.</summary>
    public static string? Validate(string? id)
    {
        if (string.IsNullOrEmpty(id)) return "document id is empty";
        if (Encoding.UTF8.GetByteCount(id) > MaxUtf8Bytes) return $"document id is longer than {MaxUtf8Bytes} UTF-8 bytes";
        foreach (var c in id)
        {
            if (char.IsControl(c)) return $"document id contains the control character U+{(int)c:X4}";
            if (char.IsSurrogate(c) && !IsWellFormed(id)) return "document id is not well-formed UTF-16";
        }
        return null;
    }

    /// <summary>
    /// Ids compare case-insensitively, as RavenDB's do (<c>Orders/42</c> is <c>orders/42</c>): the store keys documents by this
    /// form and keeps each id as it was first written. Invariant lower case, which keeps an id's length.
    /// </summary>
    public static string Fold(string id) => id.ToLowerInvariant();

    /// <summary>A stable 64-bit hash (FNV-1a) of the id exactly as written: tells the store whether a write spells a stored id the same way.</summary>
    public static long SpellingHash(string id)
    {
        var hash = 14695981039346656037UL;
        foreach (var c in id)
        {
            hash = (hash ^ (byte)c) * 1099511628211UL;
            hash = (hash ^ (byte)(c >> 8)) * 1099511628211UL;
        }
        return (long)hash;
    }

    /// <summary>Null when a collection name is acceptable (same length and character rules as ids), else the reason.</summary>
    public static string? ValidateCollection(string name)
    {
        if (Encoding.UTF8.GetByteCount(name) > MaxUtf8Bytes) return $"collection name is longer than {MaxUtf8Bytes} UTF-8 bytes";
        foreach (var c in name)
            if (char.IsControl(c)) return $"collection name contains the control character U+{(int)c:X4}";
        return null;
    }

    /// <summary>
    /// The id as a URL path (<c>users/José</c> → <c>users/Jos%C3%A9</c>): each segment percent-encoded, the slashes kept, so it can
    /// go into a header (<c>Location</c>), which carries ASCII only.
    /// </summary>
    public static string UrlPath(string id) => string.Join('/', id.Split('/').Select(Uri.EscapeDataString));

    /// <summary>`users/1` → `users`; an id with no `/` (or a leading one) belongs to <see cref="EmptyCollection"/>.</summary>
    public static string CollectionOf(string id)
    {
        var slash = id.IndexOf('/');
        return slash > 0 ? id[..slash] : EmptyCollection;
    }

    private static bool IsWellFormed(string s)
    {
        for (var i = 0; i < s.Length; i++)
        {
            if (char.IsHighSurrogate(s[i]))
            {
                if (i + 1 >= s.Length || !char.IsLowSurrogate(s[i + 1])) return false;
                i++;
            }
            else if (char.IsLowSurrogate(s[i])) return false;
        }
        return true;
    }
}
