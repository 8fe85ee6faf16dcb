using System.Buffers.Binary;
using System.Globalization;
using System.Text;
using System.Text.Json;

namespace Magpie.Query.Postgres;

/// <summary>The PostgreSQL types Magpie answers with, by OID, and how a value is written in text or binary format.</summary>
public enum PgType
{
    Bool = 16, Int8 = 20, Int4 = 23, Text = 25, Json = 114, Float8 = 701, Varchar = 1043, TimestampTz = 1184,
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
            default: return Text(type, value);
        }
    }

    /// <summary>A parameter sent by the client (text, or binary for the types it names), as an SQL literal to put in the statement.</summary>
    public static string Literal(int oid, bool binary, ReadOnlySpan<byte> data)
    {
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
