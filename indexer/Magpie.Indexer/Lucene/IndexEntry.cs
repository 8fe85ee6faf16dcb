namespace Magpie.Indexer.Lucene;

/// <summary>How one value of an index entry goes into Lucene.</summary>
public abstract record IndexField(string Name, bool Stored)
{
    internal abstract void Write(FrameWriter w);
}

/// <summary>Full text: StandardAnalyzer tokens, for <c>search()</c>.</summary>
public sealed record TextField(string Name, string Value, bool Stored = false) : IndexField(Name, Stored)
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.FieldText).String(Name).Bool(Stored).String(Value);
}

/// <summary>One exact term (callers lower-case it for case-insensitive fields), sortable as a string.</summary>
public sealed record KeywordField(string Name, string Value, bool Stored = false) : IndexField(Name, Stored)
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.FieldKeyword).String(Name).Bool(Stored).String(Value);
}

/// <summary>A 64-bit integer for ranges and sorting (also dates, as ticks).</summary>
public sealed record LongField(string Name, long Value, bool Stored = false) : IndexField(Name, Stored)
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.FieldLong).String(Name).Bool(Stored).Long(Value);
}

public sealed record DoubleField(string Name, double Value, bool Stored = false) : IndexField(Name, Stored)
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.FieldDouble).String(Name).Bool(Stored).Double(Value);
}

/// <summary>Kept for projections only, not searchable.</summary>
public sealed record StoredField(string Name, string Value) : IndexField(Name, true)
{
    internal override void Write(FrameWriter w) => w.Byte(LuceneProtocol.FieldStored).String(Name).Bool(true).String(Value);
}

/// <summary>One Lucene document; a source document may produce several (a map returning an array).</summary>
public sealed record IndexEntry(IReadOnlyList<IndexField> Fields);

/// <summary>A source document's entries: writing it replaces whatever entries the id had.</summary>
public sealed record IndexedDocument(string Id, IReadOnlyList<IndexEntry> Entries);

/// <summary>
/// An index's own state kept beside its results (one map result of a map/reduce index: reduce key, source document,
/// the values as a JSON array, or null where only the key is kept). Written as an entry searches never match
/// (LuceneHost's <c>@state</c>), so it commits atomically with the results and the position.
/// </summary>
public sealed record StateEntry(string Key, string Source, string? Values)
{
    /// <summary>The entry's Lucene id: one per (key, source); control characters never occur in keys or document ids.</summary>
    public string Id => IdOf(Key, Source);

    public static string IdOf(string key, string source) => $"\u0001{key}\u0001{source}";

    public IndexedDocument ToDocument()
    {
        List<IndexField> fields = [new KeywordField("@state", "1"), new StoredField("@state.key", Key), new StoredField("@state.source", Source)];
        if (Values is not null) fields.Add(new StoredField("@state.values", Values));
        return new IndexedDocument(Id, [new IndexEntry(fields)]);
    }
}
