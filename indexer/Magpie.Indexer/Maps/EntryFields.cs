using System.Globalization;
using System.Text.Json;
using System.Text.RegularExpressions;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Engine;

namespace Magpie.Indexer.Maps;

/// <summary>
/// How a mapped value becomes Lucene fields. For an index field <c>F</c>:
/// <list type="bullet">
/// <item><c>F</c>: strings as one lower-cased term (exact, the default) or as analyzed text (search);
/// booleans as <c>true</c>/<c>false</c>, null as <c>NULL_VALUE</c> (RavenDB's token), objects as their JSON text.</item>
/// <item><c>F@cs</c>: exact strings with their case, for <c>exact()</c> and facets (also booleans and nulls, so a facet reads every non-number value there).</item>
/// <item><c>F@num</c>: numbers, for ranges and numeric sorting.</item>
/// <item><c>F@ticks</c>: ISO-8601 dates, for ranges.</item>
/// <item><c>F@stored</c>: the value as JSON, when the field is stored (projections).</item>
/// </list>
/// Arrays give one value per element. Lucene needs one doc-values type per field name, hence the suffixes.
/// </summary>
public static partial class EntryFields
{
    public const string NullValue = "NULL_VALUE";
    public const string CaseSensitive = "@cs", Number = "@num", Ticks = "@ticks", Stored = "@stored";

    /// <summary>The whole document (or reduce result) kept in its entries, where no store is beside the index (Kafka mode, reduce results).</summary>
    public const string Source = "@source";

    public static IndexEntry From(MappedEntry entry, IndexDefinition definition)
    {
        var fields = new List<IndexField>();
        foreach (var (name, value) in entry.Values)
        {
            var options = definition.FieldOptions(name);
            if (options.Indexing != IndexFieldOptions.No)
            {
                if (value is List<object?> list) foreach (var item in list) Add(fields, name, item, options);
                else Add(fields, name, value, options);
            }
            if (options.Store) fields.Add(new StoredField(name + Stored, JsonOf(value)));
        }
        return new IndexEntry(fields);
    }

    private static void Add(List<IndexField> fields, string name, object? value, IndexFieldOptions options)
    {
        // Lucene wants one kind of indexing per field name: a search field takes every non-number as text.
        var search = options.Indexing == IndexFieldOptions.Search;
        IndexField Term(string text) => search ? new TextField(name, text) : new KeywordField(name, text.ToLowerInvariant());
        switch (value)
        {
            case null:
                fields.Add(search ? new TextField(name, NullValue) : new KeywordField(name, NullValue));
                if (!search) fields.Add(new KeywordField(name + CaseSensitive, NullValue));
                break;
            case bool b:
                fields.Add(Term(b ? "true" : "false"));
                if (!search) fields.Add(new KeywordField(name + CaseSensitive, b ? "true" : "false"));
                break;
            case double d: fields.Add(new DoubleField(name + Number, d)); break;
            case NestedJson j: fields.Add(Term(j.Json)); break;
            case List<object?> nested: foreach (var item in nested) Add(fields, name, item, options); break;
            case string s:
                fields.Add(Term(s));
                if (!search) fields.Add(new KeywordField(name + CaseSensitive, s));
                if (TicksOf(s) is { } ticks) fields.Add(new LongField(name + Ticks, ticks));
                break;
        }
    }

    /// <summary>An ISO-8601 date or date-time (what JSON documents carry), as UTC ticks; null for anything else.</summary>
    public static long? TicksOf(string s)
    {
        if (s.Length is < 10 or > 40 || IsoDate().Match(s) is not { Success: true } m) return null;
        // Fractions past 100 ns (RFC 3339 nanoseconds, as Grafana writes them) are cut to what .NET ticks hold.
        if (m.Groups[3].Length > 8) s = s.Remove(m.Groups[3].Index + 8, m.Groups[3].Length - 8);
        return DateTime.TryParse(s, CultureInfo.InvariantCulture, DateTimeStyles.AdjustToUniversal | DateTimeStyles.AssumeUniversal, out var d) ? d.Ticks : null;
    }

    private static string JsonOf(object? value) => value switch
    {
        null => "null",
        string s => JsonSerializer.Serialize(s),
        bool b => b ? "true" : "false",
        double d => d.ToString("R", CultureInfo.InvariantCulture),
        NestedJson j => j.Json,
        List<object?> list => "[" + string.Join(",", list.Select(JsonOf)) + "]",
        _ => JsonSerializer.Serialize(value),
    };

    [GeneratedRegex(@"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?)?$")]
    private static partial Regex IsoDate();
}
