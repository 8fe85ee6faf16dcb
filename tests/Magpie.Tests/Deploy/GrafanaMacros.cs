using System.Globalization;
using System.Text.RegularExpressions;

namespace Magpie.Tests.Deploy;

/// <summary>
/// Grafana's PostgreSQL macro engine (pkg/tsdb/grafana-postgresql-datasource/macros.go), ported so the tests send
/// Magpie exactly what Grafana would: the same regex, the same "," rule for <c>$__timeGroup</c>, RFC3339Nano times,
/// and Go's <c>%v</c> for the interval seconds (2592000 prints as <c>2.592e+06</c>).
/// </summary>
public static partial class GrafanaMacros
{
    [GeneratedRegex(@"\$([_a-zA-Z0-9]+)\(([^\)]*)\)")]
    private static partial Regex Macro();

    public static string Expand(string sql, DateTime from, DateTime to) => Macro().Replace(sql, m =>
    {
        var name = m.Groups[1].Value;
        // As Grafana: $__timeGroup directly followed by ',' is the pre-5.3 form that also aliases the column.
        var end = sql.IndexOf(m.Value, StringComparison.Ordinal) + m.Value.Length;
        if (name == "__timeGroup" && end < sql.Length && sql[end] == ',') name = "__timeGroupAlias";
        var args = m.Groups[2].Value.Split(',').Select(a => a.Trim(' ')).ToArray();
        return Evaluate(name, args, from, to);
    });

    private static string Evaluate(string name, string[] args, DateTime from, DateTime to) => name switch
    {
        "__time" => $"{args[0]} AS \"time\"",
        "__timeEpoch" => $"extract(epoch from {args[0]}) as \"time\"",
        "__timeFilter" => $"{args[0]} BETWEEN '{Rfc3339Nano(from)}' AND '{Rfc3339Nano(to)}'",
        "__timeFrom" => $"'{Rfc3339Nano(from)}'",
        "__timeTo" => $"'{Rfc3339Nano(to)}'",
        "__timeGroup" => $"floor(extract(epoch from {args[0]})/{GoFloat(Interval(args[1]))})*{GoFloat(Interval(args[1]))}",
        "__timeGroupAlias" => Evaluate("__timeGroup", args, from, to) + " AS \"time\"",
        "__unixEpochFilter" => $"{args[0]} >= {Unix(from)} AND {args[0]} <= {Unix(to)}",
        _ => throw new ArgumentException($"macro {name} is not ported"),
    };

    /// <summary>Go's time.RFC3339Nano: trailing zeros of the fraction (and a zero fraction) dropped, Z for UTC.</summary>
    public static string Rfc3339Nano(DateTime t)
    {
        var fraction = t.ToString("fffffff", CultureInfo.InvariantCulture).TrimEnd('0');
        return t.ToString("yyyy-MM-ddTHH:mm:ss", CultureInfo.InvariantCulture) + (fraction.Length > 0 ? "." + fraction : "") + "Z";
    }

    private static long Unix(DateTime t) => (long)(t - DateTime.UnixEpoch).TotalSeconds;

    /// <summary>gtime.ParseInterval for the units dashboards use: s, m, h, d, w.</summary>
    public static double Interval(string text)
    {
        var t = text.Trim('\'');
        var n = double.Parse(t[..^1], CultureInfo.InvariantCulture);
        return n * t[^1] switch { 's' => 1, 'm' => 60, 'h' => 3600, 'd' => 86400, 'w' => 604800, _ => throw new ArgumentException(t) };
    }

    /// <summary>Go's %v of a float64 (strconv 'g' with shortest precision): exponent form when the exponent is below -4 or at least 6.</summary>
    public static string GoFloat(double v)
    {
        if (v == 0) return "0";
        var exponent = (int)Math.Floor(Math.Log10(Math.Abs(v)));
        if (exponent is >= -4 and < 6) return v.ToString("R", CultureInfo.InvariantCulture);
        var mantissa = (v / Math.Pow(10, exponent)).ToString("R", CultureInfo.InvariantCulture);
        return $"{mantissa}e{(exponent < 0 ? '-' : '+')}{Math.Abs(exponent):00}";
    }
}
