using System.Globalization;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Engine;
using static Magpie.Contracts.Indexes.EntryFields;

namespace Magpie.Indexer.Maps;

/// <summary>How a mapped value becomes index fields, named as <see cref="EntryFields"/> says.</summary>
public static class EntryMapping
{
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
}
