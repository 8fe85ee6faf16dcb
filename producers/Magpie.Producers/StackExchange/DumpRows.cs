using System.Buffers;
using System.Globalization;
using System.Text.Json;
using System.Xml;

namespace Magpie.Producers.StackExchange;

/// <summary>Reads the <c>&lt;row …/&gt;</c> elements of one Stack Exchange dump file as JSON objects.</summary>
public static class DumpRows
{
    /// <summary>Attributes that stay strings even when they look like numbers.</summary>
    private static readonly HashSet<string> TextAttributes = new(StringComparer.Ordinal)
    {
        "DisplayName", "Title", "Body", "Text", "AboutMe", "Location", "WebsiteUrl", "Tags", "Name", "UserDisplayName",
        "OwnerDisplayName", "LastEditorDisplayName", "ContentLicense", "ProfileImageUrl", "Comment", "RevisionGUID",
    };

    public static IEnumerable<Dictionary<string, string>> Read(string path)
    {
        using var reader = XmlReader.Create(path, new XmlReaderSettings { DtdProcessing = DtdProcessing.Ignore, IgnoreWhitespace = true });
        while (reader.Read())
        {
            if (reader.NodeType != XmlNodeType.Element || reader.Name != "row") continue;
            var row = new Dictionary<string, string>(reader.AttributeCount, StringComparer.Ordinal);
            while (reader.MoveToNextAttribute()) row[reader.Name] = reader.Value;
            reader.MoveToElement();
            yield return row;
        }
    }

    /// <summary>Number of rows in a dump file (one row per line in Stack Exchange dumps), for progress totals.</summary>
    public static long Count(string path) => File.ReadLines(path).LongCount(l => l.AsSpan().TrimStart().StartsWith("<row"));

    /// <summary>Writes a row's attributes as JSON members: integers and decimals as numbers, True/False as booleans.</summary>
    public static void WriteMembers(Utf8JsonWriter w, Dictionary<string, string> row)
    {
        foreach (var (name, value) in row)
        {
            if (TextAttributes.Contains(name)) w.WriteString(name, value);
            else if (long.TryParse(value, NumberStyles.AllowLeadingSign, CultureInfo.InvariantCulture, out var n)) w.WriteNumber(name, n);
            else if (value is "True" or "False") w.WriteBoolean(name, value == "True");
            else w.WriteString(name, value);
        }
    }

    public static byte[] ToJson(Dictionary<string, string> row, Action<Utf8JsonWriter>? extra = null)
    {
        var buffer = new ArrayBufferWriter<byte>(512);
        using (var w = new Utf8JsonWriter(buffer, Magpie.Contracts.WireJson.Writer))
        {
            w.WriteStartObject();
            WriteMembers(w, row);
            extra?.Invoke(w);
            w.WriteEndObject();
        }
        return buffer.WrittenSpan.ToArray();
    }

    /// <summary>A one-operation JSON Patch appending <paramref name="row"/> to the array at <paramref name="arrayPath"/>.</summary>
    public static byte[] AppendPatch(string arrayPath, Dictionary<string, string> row, params string[] omit)
    {
        var buffer = new ArrayBufferWriter<byte>(512);
        using (var w = new Utf8JsonWriter(buffer, Magpie.Contracts.WireJson.Writer))
        {
            w.WriteStartArray();
            w.WriteStartObject();
            w.WriteString("op", "add");
            w.WriteString("path", arrayPath + "/-");
            w.WriteStartObject("value");
            WriteMembers(w, omit.Length == 0 ? row : row.Where(kv => !omit.Contains(kv.Key)).ToDictionary());
            w.WriteEndObject();
            w.WriteEndObject();
            w.WriteEndArray();
        }
        return buffer.WrittenSpan.ToArray();
    }
}
