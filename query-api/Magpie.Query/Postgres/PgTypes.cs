using System.Buffers.Binary;
using System.Globalization;
using System.Text;
using System.Text.Json;

namespace Magpie.Query.Postgres;

/// <summary>The PostgreSQL types Magpie answers with, by OID, and how a value is written in text or binary format.</summary>
public enum PgType
{
    Bool = 16, Int8 = 20, Int4 = 23, Text = 25, Json = 114, Float8 = 701, TextArray = 1009, Varchar = 1043, TimestampTz = 1184,
}

public sealed record PgColumn(string Name, PgType Type);

public static class PgValues
{
    private static readonly DateTime PgEpoch = new(2000, 1, 1, 0, 0, 0, DateTimeKind.Utc);

    public static short Length(PgType t) => t switch
    {
        PgType.Bool => 1, PgType.Int4 => 4, PgType.Int8 or PgType.Float8 or PgType.TimestampTz => 8, _ => -1,
    };

    /// <summary>A value as the column's type wants it in text format (what psql shows).</summary>
    public static byte[] Text(PgType type, object value) => Encoding.UTF8.GetBytes(type switch
    {
        PgType.Bool => Convert.ToBoolean(value, CultureInfo.InvariantCulture) ? "t" : "f",
        PgType.Int8 or PgType.Int4 => Convert.ToInt64(value, CultureInfo.InvariantCulture).ToString(CultureInfo.InvariantCulture),
        PgType.Float8 => Double(Convert.ToDouble(value, CultureInfo.InvariantCulture)),
        // As PostgreSQL prints it: the fraction without trailing zeros, none at all on a whole second.
        PgType.TimestampTz => ((DateTime)value).ToUniversalTime().ToString("yyyy-MM-dd HH:mm:ss.FFFFFF", CultureInfo.InvariantCulture) + "+00",
        PgType.TextArray when value is System.Collections.IList list => ArrayText(list),
        _ => value as string ?? Convert.ToString(value, CultureInfo.InvariantCulture) ?? "",
    });

    /// <summary>Binary format (Npgsql asks for it): big-endian numbers, timestamps as microseconds since 2000-01-01.</summary>
    public static byte[] Binary(PgType type, object value)
    {
        switch (type)
        {
            case PgType.Bool: return [Convert.ToBoolean(value, CultureInfo.InvariantCulture) ? (byte)1 : (byte)0];
            case PgType.Int4:
            {
                var b = new byte[4];
                BinaryPrimitives.WriteInt32BigEndian(b, Convert.ToInt32(value, CultureInfo.InvariantCulture));
                return b;
            }
            case PgType.Int8:
            {
                var b = new byte[8];
                BinaryPrimitives.WriteInt64BigEndian(b, Convert.ToInt64(value, CultureInfo.InvariantCulture));
                return b;
            }
            case PgType.Float8:
            {
                var b = new byte[8];
                BinaryPrimitives.WriteDoubleBigEndian(b, Convert.ToDouble(value, CultureInfo.InvariantCulture));
                return b;
            }
            case PgType.TimestampTz:
            {
                var b = new byte[8];
                BinaryPrimitives.WriteInt64BigEndian(b, (((DateTime)value).ToUniversalTime() - PgEpoch).Ticks / 10);
                return b;
            }
            case PgType.TextArray when value is System.Collections.IList list:
            {
                // One dimension of text elements: ndim, has-nulls, element type, then size and lower bound, then each element.
                var elements = list.Cast<object?>().Select(e => e is null ? null : Encoding.UTF8.GetBytes(ElementText(e))).ToList();
                var b = new byte[20 + elements.Sum(e => 4 + (e?.Length ?? 0))];
                BinaryPrimitives.WriteInt32BigEndian(b, 1);
                BinaryPrimitives.WriteInt32BigEndian(b.AsSpan(4), elements.Any(e => e is null) ? 1 : 0);
                BinaryPrimitives.WriteInt32BigEndian(b.AsSpan(8), (int)PgType.Text);
                BinaryPrimitives.WriteInt32BigEndian(b.AsSpan(12), elements.Count);
                BinaryPrimitives.WriteInt32BigEndian(b.AsSpan(16), 1);
                var at = 20;
                foreach (var e in elements)
                {
                    BinaryPrimitives.WriteInt32BigEndian(b.AsSpan(at), e?.Length ?? -1);
                    at += 4;
                    if (e is null) continue;
                    e.CopyTo(b, at);
                    at += e.Length;
                }
                return b;
            }
            default: return Text(type, value);
        }
    }

    /// <summary>A list as PostgreSQL writes an array in text: <c>{a,"b c",NULL}</c>.</summary>
    public static string ArrayText(System.Collections.IList list)
    {
        var b = new StringBuilder("{");
        foreach (var item in list)
        {
            if (b.Length > 1) b.Append(',');
            var text = item switch { null => null, System.Collections.IList inner => ArrayText(inner), bool v => v ? "t" : "f", _ => ElementText(item) };
            if (text is null) b.Append("NULL");
            else if (item is System.Collections.IList || (text.Length > 0 && !text.Equals("NULL", StringComparison.OrdinalIgnoreCase) && text.All(c => c is not ('{' or '}' or ',' or '"' or '\\') && !char.IsWhiteSpace(c)))) b.Append(text);
            else b.Append('"').Append(text.Replace("\\", "\\\\").Replace("\"", "\\\"")).Append('"');
        }
        return b.Append('}').ToString();
    }

    private static string ElementText(object item) => item switch
    {
        bool v => v ? "t" : "f",
        double d => Double(d),
        DateTime t => Encoding.UTF8.GetString(Text(PgType.TimestampTz, t)),
        DateTimeOffset o => Encoding.UTF8.GetString(Text(PgType.TimestampTz, o.UtcDateTime)),
        System.Collections.IList inner => ArrayText(inner),
        _ => Convert.ToString(item, CultureInfo.InvariantCulture) ?? "",
    };


    /// <summary>A parameter sent by the client (text, or binary for the types it names), as an SQL literal to put in the statement.</summary>
    public static string Literal(int oid, bool binary, ReadOnlySpan<byte> data)
    {
        if (ElementOf(oid) != 0) return ArrayLiteral(oid, binary, data);
        if (!binary) return Quote(Encoding.UTF8.GetString(data), oid);
        // A binary value of the wrong width is the client's error, as PostgreSQL's "incorrect binary data format".
        if (oid switch { 16 => 1, 21 => 2, 23 or 700 => 4, 20 or 701 or 1114 or 1184 => 8, _ => data.Length } != data.Length)
            throw new PgException("22P03", $"incorrect binary data format in bind parameter of type {oid}: {data.Length} bytes");
        return oid switch
        {
            16 => data[0] != 0 ? "true" : "false",
            21 => BinaryPrimitives.ReadInt16BigEndian(data).ToString(CultureInfo.InvariantCulture),
            23 => BinaryPrimitives.ReadInt32BigEndian(data).ToString(CultureInfo.InvariantCulture),
            20 => BinaryPrimitives.ReadInt64BigEndian(data).ToString(CultureInfo.InvariantCulture),
            700 => Double(BinaryPrimitives.ReadSingleBigEndian(data)),
            701 => Double(BinaryPrimitives.ReadDoubleBigEndian(data)),
            1114 or 1184 => Quote(Timestamp(BinaryPrimitives.ReadInt64BigEndian(data)), 25),
            _ => Quote(Encoding.UTF8.GetString(data), oid),
        };
    }

    /// <summary>The element type of the array types a client binds (Npgsql sends a string[] as text[] in binary).</summary>
    private static int ElementOf(int oid) => oid switch
    {
        1000 => 16, 1005 => 21, 1007 => 23, 1016 => 20, 1021 => 700, 1022 => 701, 1009 => 25, 1015 => 1043, 1185 => 1184, 1115 => 1114, _ => 0,
    };

    /// <summary>An array parameter as <c>ARRAY[…]</c>: binary (dimensions, then each element by its type) or text (<c>{a,"b c",NULL}</c>).</summary>
    private static string ArrayLiteral(int oid, bool binary, ReadOnlySpan<byte> data)
    {
        var element = ElementOf(oid);
        var items = new List<string>();
        if (binary)
        {
            if (data.Length < 12) throw new PgException("22P03", "incorrect binary data format in array parameter");
            var dimensions = BinaryPrimitives.ReadInt32BigEndian(data);
            if (dimensions > 1) throw new PgException(PgException.FeatureNotSupported, "arrays of more than one dimension are not answered by Magpie's endpoint yet");
            var at = 12;
            var count = 0;
            if (dimensions == 1)
            {
                if (data.Length < 20) throw new PgException("22P03", "incorrect binary data format in array parameter");
                count = BinaryPrimitives.ReadInt32BigEndian(data[at..]);
                at += 8;
            }
            for (var i = 0; i < count; i++)
            {
                if (data.Length < at + 4) throw new PgException("22P03", "incorrect binary data format in array parameter");
                var length = BinaryPrimitives.ReadInt32BigEndian(data[at..]);
                at += 4;
                if (length < 0) { items.Add("NULL"); continue; }
                if (data.Length < at + length) throw new PgException("22P03", "incorrect binary data format in array parameter");
                items.Add(Literal(element, true, data.Slice(at, length)));
                at += length;
            }
        }
        else
        {
            var text = Encoding.UTF8.GetString(data).Trim();
            if (text.Length < 2 || text[0] != '{' || text[^1] != '}') throw new PgException("22P02", $"malformed array literal: \"{SqlText.Shorten(text)}\"");
            var body = text[1..^1];
            var current = new StringBuilder();
            bool quoted = false, wasQuoted = false;
            for (var i = 0; i <= body.Length; i++)
            {
                if (i == body.Length || (!quoted && body[i] == ','))
                {
                    if (body.Length == 0) break;
                    var value = current.ToString();
                    items.Add(!wasQuoted && value.Trim().Equals("NULL", StringComparison.OrdinalIgnoreCase) ? "NULL" : Quote(wasQuoted ? value : value.Trim(), element));
                    current.Clear();
                    wasQuoted = false;
                }
                else if (body[i] == '"') { quoted = !quoted; wasQuoted = true; }
                else if (body[i] == '\\' && i + 1 < body.Length) current.Append(body[++i]);
                else if (body[i] is '{' or '}' && !quoted) throw new PgException(PgException.FeatureNotSupported, "arrays of more than one dimension are not answered by Magpie's endpoint yet");
                else current.Append(body[i]);
            }
        }
        return "ARRAY[" + string.Join(", ", items) + "]";
    }

    /// <summary>Microseconds since 2000-01-01, as PostgreSQL sends timestamps; outside what .NET holds is out of range.</summary>
    private static string Timestamp(long micros)
    {
        var max = (DateTime.MaxValue - PgEpoch).Ticks / 10;
        var min = (DateTime.MinValue - PgEpoch).Ticks / 10;
        if (micros > max || micros < min) throw new PgException("22008", "timestamp out of range");
        return (PgEpoch + TimeSpan.FromTicks(micros * 10)).ToString("yyyy-MM-dd'T'HH:mm:ss.FFFFFFF'Z'", CultureInfo.InvariantCulture);
    }

    /// <summary>
    /// A text parameter as it goes into the statement: numbers and booleans bare (they must be one), everything else quoted.
    /// A numeric parameter whose text is not a number is refused (22P02): substituted bare, it would become SQL.
    /// </summary>
    private static string Quote(string text, int oid)
    {
        if (oid is 20 or 21 or 23 or 700 or 701 or 1700 or 16 && text.Length > 0)
        {
            var valid = oid == 16
                ? text.ToLowerInvariant() is "true" or "false" or "t" or "f" or "1" or "0" or "yes" or "no" or "on" or "off"
                : double.TryParse(text, NumberStyles.Float, CultureInfo.InvariantCulture, out _);
            if (!valid) throw new PgException("22P02", $"invalid input syntax for type {(oid == 16 ? "boolean" : "numeric")}: \"{SqlText.Shorten(text)}\"");
            return oid == 16 ? text.ToLowerInvariant() switch { "true" or "t" or "1" or "yes" or "on" => "true", _ => "false" } : text;
        }
        return "'" + text.Replace("'", "''") + "'";
    }

    /// <summary>A literal of <see cref="Literal"/> as RQL writes it: a string re-quoted with backslash escapes, the rest as it is.</summary>
    public static string AsRqlLiteral(string sqlLiteral) =>
        sqlLiteral.Length >= 2 && sqlLiteral[0] == '\'' && sqlLiteral[^1] == '\''
            ? "'" + sqlLiteral[1..^1].Replace("''", "'").Replace("\\", "\\\\").Replace("'", "\\'") + "'"
            : sqlLiteral == "NULL" ? "null" : sqlLiteral;

    private static string Double(double d) =>
        double.IsPositiveInfinity(d) ? "Infinity" : double.IsNegativeInfinity(d) ? "-Infinity" : double.IsNaN(d) ? "NaN" : d.ToString("R", CultureInfo.InvariantCulture);

    /// <summary>A JSON value converted for a column of <paramref name="type"/>; null when absent or not convertible.</summary>
    public static object? FromJson(JsonElement? value, PgType type)
    {
        if (value is not { } v || v.ValueKind is JsonValueKind.Null or JsonValueKind.Undefined) return null;
        switch (type)
        {
            case PgType.Float8: return v.ValueKind == JsonValueKind.Number ? v.GetDouble() : null;
            case PgType.Int8: return v.ValueKind == JsonValueKind.Number && v.TryGetInt64(out var l) ? l : null;
            case PgType.Bool: return v.ValueKind is JsonValueKind.True or JsonValueKind.False ? v.GetBoolean() : null;
            case PgType.TimestampTz:
                return v.ValueKind == JsonValueKind.String && DateTime.TryParse(v.GetString(), CultureInfo.InvariantCulture,
                    DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var d) ? d : null;
            case PgType.Json: return v.GetRawText();
            default: return v.ValueKind == JsonValueKind.String ? v.GetString() : v.GetRawText();
        }
    }
}
