using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Magpie.Contracts.Documents;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// <c>outputReduceToCollection</c>: each reduce result also becomes a document of the output collection, its id
/// derived from the reduce key (<see cref="IdOf"/>), rewritten when the result changes and deleted when the key goes
/// — so sinks and other indexes can use aggregates like any document. Written before the index commits: a replay
/// after a crash writes the same documents again. Each carries the version of the index that wrote it
/// (<c>@metadata.@index-version</c>): a version killed before it handed its collection over leaves documents that name it.
/// </summary>
public sealed class ReduceOutput(string collection, IDocumentOutput output, string version)
{
    public const string VersionMetadata = "@index-version";
    private readonly JsonElement _version = JsonSerializer.SerializeToElement(version);

    /// <summary>Writes the flush's results and deletes; returns (reduce key, reason) for each output document the store refused.</summary>
    public async Task<IReadOnlyList<(string Key, string Reason)>> WriteAsync(ReduceFlush flush, CancellationToken ct)
    {
        var keys = new Dictionary<string, string>(StringComparer.Ordinal);
        var documents = new List<OutputDocument>(flush.Results.Count + flush.Gone.Count);
        foreach (var (key, result) in flush.Results.Select(r => (r.Key, (string?)r.Result)).Concat(flush.Gone.Select(k => (k, (string?)null))))
        {
            var id = IdOf(collection, key);
            keys[id] = key;
            documents.Add(new OutputDocument(id, collection, result is null ? null : Tagged(result)));
        }
        var refused = await output.WriteAsync(documents, ct);
        // A key whose new result is refused loses its old document too: an output collection never shows a stale aggregate.
        if (refused.Count > 0) await output.WriteAsync([.. refused.Select(r => new OutputDocument(r.Id, collection, null))], ct);
        return [.. refused.Select(r => (keys[r.Id], $"the output document {r.Id} was refused: {r.Reason}"))];
    }

    private string Tagged(string result)
    {
        using var parsed = JsonDocument.Parse(result);
        return DocumentMetadata.With(parsed.RootElement, VersionMetadata, _version).GetRawText();
    }

    /// <summary>
    /// <c>DailySales/2024-01-02</c> for the key "2024-01-02", <c>DailySales/users/1/2024-01-02</c> for a composite key
    /// (its values in order); a key that would make an id over 512 bytes becomes a hash of the key.
    /// </summary>
    public static string IdOf(string collection, string keyJson)
    {
        using var key = JsonDocument.Parse(keyJson);
        var root = key.RootElement;
        var part = root.ValueKind switch
        {
            JsonValueKind.String => root.GetString()!,
            JsonValueKind.Object => string.Join('/', root.EnumerateObject().Select(p => Text(p.Value))),
            _ => Text(root),
        };
        var id = $"{collection}/{part}";
        return Encoding.UTF8.GetByteCount(id) <= 512 && !id.Any(char.IsControl)
            ? id
            : $"{collection}/{Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(keyJson)))[..32].ToLowerInvariant()}";
    }

    private static string Text(JsonElement e) => e.ValueKind == JsonValueKind.String ? e.GetString()! : e.GetRawText();
}
