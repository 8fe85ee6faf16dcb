namespace Magpie.Indexer.Engine;

/// <summary>How one value of an index entry goes into the engine.</summary>
public abstract record IndexField(string Name, bool Stored);

/// <summary>Full text: analyzed tokens, for <c>search()</c>; sortable by its lower-cased start.</summary>
public sealed record TextField(string Name, string Value, bool Stored = false) : IndexField(Name, Stored);

/// <summary>One exact term (callers lower-case it for case-insensitive fields), sortable and countable as a string.</summary>
public sealed record KeywordField(string Name, string Value, bool Stored = false) : IndexField(Name, Stored);

/// <summary>A 64-bit integer for ranges, sorting and date histograms (dates as ticks).</summary>
public sealed record LongField(string Name, long Value, bool Stored = false) : IndexField(Name, Stored);

/// <summary>A number for ranges, sorting, facets and aggregations.</summary>
public sealed record DoubleField(string Name, double Value, bool Stored = false) : IndexField(Name, Stored);

/// <summary>A vector (float32) for nearest-neighbour search; one per field per entry.</summary>
public sealed record VectorField(string Name, float[] Values) : IndexField(Name, false)
{
    /// <summary>Who made the vector of a text (<c>Magpie.Embeddings.Embedders</c>), recorded so a query embedding with another is refused; null: numbers the map gave.</summary>
    public string? Embedder { get; init; }

    /// <summary>Searched by scanning only (a binary field: its bits are compared faster than a graph could be walked), so no graph is built.</summary>
    public bool ScanOnly { get; init; }
}

/// <summary>
/// A vector still to be made from text by the embedding model (<c>embedding.text(…)</c>): the map stage embeds a batch's texts
/// together and puts a <see cref="VectorField"/> in its place, so an engine never receives one.
/// </summary>
public sealed record EmbeddingField(string Name, string Text, string? Connection) : IndexField(Name, false)
{
    /// <summary>As <see cref="VectorField.ScanOnly"/>.</summary>
    public bool ScanOnly { get; init; }
}

/// <summary>Kept for projections only, not searchable.</summary>
public sealed record StoredField(string Name, string Value) : IndexField(Name, true);

/// <summary>
/// Kept for projections only: JSON as UTF-8, stored as the bytes given and read back as a <c>byte[]</c>. A Kafka-mode map index keeps
/// each document this way; as a string it was decoded to UTF-16 here and encoded back to UTF-8 by the writer, and again both ways
/// when a query read it.
/// </summary>
public sealed record StoredJsonField(string Name, ReadOnlyMemory<byte> Utf8) : IndexField(Name, true);

/// <summary>One engine document; a source document may produce several (a map returning an array).</summary>
public sealed record IndexEntry(IReadOnlyList<IndexField> Fields);

/// <summary>
/// A source document's entries: writing it replaces whatever entries the id had (an engine may skip looking for old ones where
/// it knows it never held the id).
/// </summary>
public sealed record IndexedDocument(string Id, IReadOnlyList<IndexEntry> Entries);

/// <summary>
/// An index's own state kept beside its results (one map result of a map/reduce index: reduce key, source document,
/// the values as a JSON array, or null where only the key is kept). Written as an entry searches never match
/// (<see cref="StateTerm"/>), so it commits atomically with the results and the position.
/// </summary>
public sealed record StateEntry(string Key, string Source, string? Values)
{
    /// <summary>The term that marks state entries (field, value): engines leave them out of searches, counts and facets.</summary>
    public const string StateField = "@state", StateValue = "1", KeyField = "@state.key", SourceField = "@state.source", ValuesField = "@state.values";

    /// <summary>The entry's id: one per (key, source); control characters never occur in keys or document ids.</summary>
    public string Id => IdOf(Key, Source);

    public static string IdOf(string key, string source) => $"\u0001{key}\u0001{source}";

    /// <summary>State entries' ids start with this character: engines write them lean (no sort values, no exists terms).</summary>
    public static bool IsStateId(string id) => id.StartsWith('\u0001');

    public IndexedDocument ToDocument()
    {
        List<IndexField> fields = [new KeywordField(StateField, StateValue), new StoredField(KeyField, Key), new StoredField(SourceField, Source)];
        if (Values is not null) fields.Add(new StoredField(ValuesField, Values));
        return new IndexedDocument(Id, [new IndexEntry(fields)]);
    }
}
