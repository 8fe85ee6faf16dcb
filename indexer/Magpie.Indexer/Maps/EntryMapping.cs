using System.Globalization;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Indexer.Engine;
using static Magpie.Contracts.Indexes.EntryFields;

namespace Magpie.Indexer.Maps;

/// <summary>
/// How a mapped value becomes index fields, named as <see cref="EntryFields"/> says. An entry the engine would refuse
/// is refused here, before any of it is written (<see cref="EntryRefusedException"/>): it fails its document only.
/// </summary>
public static class EntryMapping
{
    /// <summary>Lucene's longest term (<c>IndexWriter.MAX_TERM_LENGTH</c>), in UTF-8 bytes; exact values are one term each.</summary>
    public const int MaxTermBytes = 32766;

    /// <summary>Longest field name, in UTF-16 units (at most 3 UTF-8 bytes each: a name and its suffixes stay well inside a term).</summary>
    public const int MaxFieldNameLength = 1_024;

    /// <summary>
    /// Most index values one entry may hold (each array element is one): far past what a search needs, and what one document
    /// may cost the indexer (an array of a million strings would take gigabytes and minutes, holding up every other document).
    /// </summary>
    public const int MaxValuesPerEntry = 100_000;

    public static IndexEntry From(MappedEntry entry, IndexDefinition definition)
    {
        var fields = new List<IndexField>();
        foreach (var (name, value) in entry.Values)
        {
            // '@' starts the names Magpie writes beside the user's (@id, @exists, @source, F@cs, F@num, …): a field named
            // so would overwrite them or change their kind, which Lucene refuses for the whole index.
            if (name.Length == 0 || name.Contains('@'))
                throw new EntryRefusedException(name.Length == 0
                    ? "the map returned a field with an empty name"
                    : $"the map returned a field named '{Shorten(name)}': names containing '@' are reserved for the index's own fields");
            // A name is part of terms (@exists holds every field name of the entry): a name Lucene could not hold fails its document.
            if (name.Length > MaxFieldNameLength)
                throw new EntryRefusedException(string.Create(CultureInfo.InvariantCulture, $"the map returned a field name of {name.Length:N0} characters ('{Shorten(name)}'), over the limit of {MaxFieldNameLength:N0}"));
            var options = definition.FieldOptions(name);
            if (value is VectorValue or EmbeddingValue || value is List<object?> vectors && vectors.Any(v => v is VectorValue or EmbeddingValue))
            {
                fields.Add(Vector(name, value, options));
                continue;
            }
            if (options.Indexing != IndexFieldOptions.No)
            {
                if (value is List<object?> list) foreach (var item in list) Add(fields, name, item, options);
                else Add(fields, name, value, options);
            }
            if (options.Store) fields.Add(new StoredField(name + Stored, JsonOf(value)));
        }
        return new IndexEntry(fields);
    }

    /// <summary>One vector per field of an entry (a map emitting several makes one entry each), of the dimensions the field declares.</summary>
    private static IndexField Vector(string name, object? value, IndexFieldOptions options)
    {
        var scanOnly = options.Vector?.Quantization == VectorFieldOptions.Binary;
        if (value is EmbeddingValue embedding) return new EmbeddingField(name, embedding.Text, embedding.Connection) { ScanOnly = scanOnly };
        if (value is not VectorValue vector) throw new EntryRefusedException($"the field '{Shorten(name)}' holds more than one vector or a vector beside other values: one vector per field of an entry");
        if (options.Vector?.Dimensions is { } dimensions && dimensions != vector.Values.Length)
            throw new EntryRefusedException($"the field '{Shorten(name)}' is declared with {dimensions} dimensions; this vector has {vector.Values.Length}");
        return new VectorField(name, vector.Values) { ScanOnly = scanOnly };
    }

    private static void Add(List<IndexField> fields, string name, object? value, IndexFieldOptions options)
    {
        if (fields.Count >= MaxValuesPerEntry)
            throw new EntryRefusedException(string.Create(CultureInfo.InvariantCulture,
                $"the entry holds more than {MaxValuesPerEntry:N0} index values (at '{Shorten(name)}'): index fewer values per document, or set the field's indexing to \"no\""));
        // Lucene wants one kind of indexing per field name: a search field takes every non-number as text.
        var search = options.Indexing == IndexFieldOptions.Search;
        IndexField Term(string text) => search ? new TextField(name, text) : new KeywordField(name, Checked(name, text).ToLowerInvariant());
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
            case double d:
                fields.Add(new DoubleField(name + Number, d));
                // A double past 2^53 is an integer: the engine's (a JavaScript number) is kept exactly too, as the value it is.
                if (ExactIntegers.Holds(d)) fields.Add(new LongField(name + Integer, (long)d));
                break;
            case long l:
                // An integer read exactly from the document (FieldProjection), past 2^53.
                fields.Add(new DoubleField(name + Number, ExactIntegers.TowardZero(l)));
                fields.Add(new LongField(name + Integer, l));
                break;
            case NestedJson j: fields.Add(Term(j.Json)); break;
            case List<object?> nested: foreach (var item in nested) Add(fields, name, item, options); break;
            case string s:
                fields.Add(Term(s));
                if (!search) fields.Add(new KeywordField(name + CaseSensitive, s));
                if (TicksOf(s) is { } ticks) fields.Add(new LongField(name + Ticks, ticks));
                break;
        }
    }

    /// <summary>An exact value is one term: past Lucene's limit it is refused with a reason the user can act on.</summary>
    private static string Checked(string name, string text)
    {
        // 3 UTF-8 bytes a UTF-16 char at most: shorter strings need no count. Both the lower-cased term and the one with its case (F@cs) are written.
        if (text.Length * 3 > MaxTermBytes
            && Math.Max(System.Text.Encoding.UTF8.GetByteCount(text), System.Text.Encoding.UTF8.GetByteCount(text.ToLowerInvariant())) is var bytes && bytes > MaxTermBytes)
            throw new EntryRefusedException(string.Create(CultureInfo.InvariantCulture, $"the field '{Shorten(name)}' has a {bytes:N0}-byte value: an exact field takes at most {MaxTermBytes:N0} bytes (index it as \"search\", or with \"indexing\": \"no\")"));
        return text;
    }

    private static string Shorten(string name) => name.Length <= 64 ? name : name[..64] + "…";

    private static string JsonOf(object? value) => value switch
    {
        null => "null",
        string s => JsonSerializer.Serialize(s),
        bool b => b ? "true" : "false",
        double d => d.ToString("R", CultureInfo.InvariantCulture),
        long l => l.ToString(CultureInfo.InvariantCulture),
        NestedJson j => j.Json,
        List<object?> list => "[" + string.Join(",", list.Select(JsonOf)) + "]",
        _ => JsonSerializer.Serialize(value),
    };
}
