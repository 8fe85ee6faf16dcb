namespace Magpie.Contracts.Documents;

/// <summary>HTTP representation of etags: a quoted decimal, e.g. <c>"42"</c>; unquoted input is accepted too.</summary>
public static class Etag
{
    public static string ToHeader(long etag) => $"\"{etag}\"";

    public static bool TryParse(string? value, out long etag)
    {
        etag = 0;
        if (string.IsNullOrWhiteSpace(value)) return false;
        var v = value.Trim();
        if (v.StartsWith("W/", StringComparison.Ordinal)) v = v[2..];
        v = v.Trim('"');
        return long.TryParse(v, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out etag) && etag > 0;
    }
}
