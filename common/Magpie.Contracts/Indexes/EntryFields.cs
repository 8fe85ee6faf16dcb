using System.Globalization;
using System.Text.RegularExpressions;

namespace Magpie.Contracts.Indexes;

/// <summary>
/// The field names a mapped value becomes in an index (the indexer writes them, queries read them). For an index field <c>F</c>:
/// <list type="bullet">
/// <item><c>F</c>: strings as one lower-cased term (exact, the default) or as analyzed text (search);
/// booleans as <c>true</c>/<c>false</c>, null as <c>NULL_VALUE</c> (RavenDB's token), objects as their JSON text.</item>
/// <item><c>F@cs</c>: exact strings with their case, for <c>exact()</c> and facets (also booleans and nulls, so a facet reads every non-number value there).</item>
/// <item><c>F@num</c>: numbers, for ranges and numeric sorting (a double; past 2^53 rounded toward zero, so it never crosses ±2^63).</item>
/// <item><c>F@long</c>: integers from 2^53 to 2^63 in magnitude, exactly (where neighbouring integers share a double): equality,
/// ranges and sort ties past 2^53 read it (<see cref="ExactIntegers"/>).</item>
/// <item><c>F@ticks</c>: ISO-8601 dates, for ranges.</item>
/// <item><c>F@stored</c>: the value as JSON, when the field is stored (projections).</item>
/// </list>
/// Arrays give one value per element. Lucene needs one doc-values type per field name, hence the suffixes.
/// </summary>
public static partial class EntryFields
{
    public const string NullValue = "NULL_VALUE";
    public const string CaseSensitive = "@cs", Number = "@num", Ticks = "@ticks", Stored = "@stored", Integer = "@long";

    /// <summary>Every entry's source document id, as written (one exact term).</summary>
    public const string Id = "@id";

    /// <summary>The ids a document's maps loaded (a JSON array), kept on its first entry: what maps it again when one of them changes.</summary>
    public const string Loads = "@loads";

    /// <summary>The whole document (or reduce result) kept in its entries, where no store is beside the index (Kafka mode, reduce results).</summary>
    public const string Source = "@source";

    /// <summary>
    /// Where integers stop fitting a double exactly, and how a number is kept past it: from 2^53 (…992 and …993 share a double) to
    /// 2^63 an integer is also written exactly (<see cref="Integer"/>), and its double (<see cref="Number"/>) is rounded toward zero —
    /// so the doubles of those integers stay inside ±2^63 and a range over doubles alone never takes one it should not.
    /// </summary>
    public static class ExactIntegers
    {
        /// <summary>2^53.</summary>
        public const double Limit = 9_007_199_254_740_992d;

        /// <summary>2^63: past it, numbers are doubles only.</summary>
        public const double Beyond = 9_223_372_036_854_775_808d;

        /// <summary>Whether a double past 2^53 names one of the integers <see cref="Integer"/> holds (every double past 2^53 is an integer).</summary>
        public static bool Holds(double d) => Math.Abs(d) >= Limit && d >= -Beyond && d < Beyond;

        /// <summary>The double an integer's <see cref="Number"/> field holds: the nearest one, or the next one toward zero where the nearest is farther out.</summary>
        public static double TowardZero(long value)
        {
            var d = (double)value;
            if (d >= Beyond || (d > 0 && (long)d > value)) return Math.BitDecrement(d);
            if (d < 0 && (long)d < value) return Math.BitIncrement(d);
            return d;
        }
    }

    /// <summary>An ISO-8601 date or date-time (what JSON documents carry), as UTC ticks; null for anything else.</summary>
    public static long? TicksOf(string s)
    {
        // Most strings a map emits are not dates: the dashes the pattern needs rule them out before a Match is allocated.
        if (s.Length is < 10 or > 40 || s[4] != '-' || s[7] != '-' || !char.IsAsciiDigit(s[0]) || IsoDate().Match(s) is not { Success: true } m) return null;
        // Fractions past 100 ns (RFC 3339 nanoseconds, as Grafana writes them) are cut to what .NET ticks hold.
        if (m.Groups[3].Length > 8) s = s.Remove(m.Groups[3].Index + 8, m.Groups[3].Length - 8);
        return DateTime.TryParse(s, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var d) ? d.Ticks : null;
    }

    [GeneratedRegex(@"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$")]
    private static partial Regex IsoDate();
}
