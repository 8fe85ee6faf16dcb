namespace Magpie.Contracts.Indexes;

/// <summary>
/// An index in RavenDB's JavaScript form: <c>{ "maps": ["map('Posts', p => ({ … }))", …], "reduce": null,
/// "fields": { "Body": { "indexing": "search", "store": true } } }</c>. Fields not listed are exact
/// (case-insensitive keyword), not stored; numbers are always indexed for ranges and sorting.
/// </summary>
public sealed record IndexDefinition
{
    public List<string> Maps { get; init; } = [];
    public string? Reduce { get; init; }

    /// <summary>
    /// Map/reduce only: the reduce results are also written back as documents of this collection (RavenDB's
    /// <c>outputReduceToCollection</c>), one per reduce key, updated and deleted as the results change.
    /// </summary>
    public string? OutputReduceToCollection { get; init; }
    public Dictionary<string, IndexFieldOptions> Fields { get; init; } = [];

    public IndexFieldOptions FieldOptions(string name) => Fields.TryGetValue(name, out var o) ? o : IndexFieldOptions.Default;

    /// <summary>
    /// 16 hex digits that change whenever the definition does (what an index's commit and its mapped topic are tied to, and the
    /// version a query pins). Computed once per instance: queries ask for it on every page, and definitions are not changed once
    /// made (<c>with</c> makes a new instance, fingerprinted anew).
    /// </summary>
    public string Fingerprint() => Fingerprints.GetValue(this, d =>
        Convert.ToHexString(System.Security.Cryptography.SHA256.HashData(System.Text.Json.JsonSerializer.SerializeToUtf8Bytes(d)))[..16]);

    private static readonly System.Runtime.CompilerServices.ConditionalWeakTable<IndexDefinition, string> Fingerprints = new();
}

public sealed record IndexFieldOptions
{
    public const string Search = "search", Exact = "exact", No = "no";

    public static IndexFieldOptions Default { get; } = new();

    /// <summary><c>search</c> (StandardAnalyzer full text), <c>exact</c> (default: one term, case-insensitive), <c>no</c> (not searchable).</summary>
    public string Indexing { get; init; } = Exact;
    public bool Store { get; init; }
    public bool Facet { get; init; }

    /// <summary>A field of vectors (<c>createVector([…])</c> in the map): their dimensions, and how searches hold them in memory.</summary>
    public VectorFieldOptions? Vector { get; init; }
}

/// <summary>How a search compares a field's vectors: as float32, as int8 copies (approximate), or as bits (one per dimension).</summary>
public enum VectorQuantization { None, Int8, Binary }

/// <summary>
/// A vector field: every vector has <see cref="Dimensions"/> numbers (null: as many as the first one indexed), and searches hold them
/// as float32 (<see cref="None"/>: exact), as <see cref="Int8"/> (a quarter of the memory, similarities approximate) or as
/// <see cref="Binary"/> (one bit per dimension, its sign: a thirty-second of the memory, scored as RavenDB scores binary vectors,
/// 1 − differing bits / bits, always by scanning).
/// </summary>
public sealed record VectorFieldOptions
{
    public const string None = "none", Int8 = "int8", Binary = "binary";
    public const int MaxDimensions = 4_096;

    public int? Dimensions { get; init; }
    public string Quantization { get; init; } = None;

    /// <summary>How searches compare the field's vectors (<see cref="Quantization"/> as the engine reads it).</summary>
    public VectorQuantization Compared() => Quantization switch
    {
        Int8 => VectorQuantization.Int8,
        Binary => VectorQuantization.Binary,
        _ => VectorQuantization.None,
    };

    /// <summary>
    /// Why a vector cannot be searched exactly, or null. Similarities are computed in float32: a vector whose squared length
    /// overflows it (elements past ~1.8e19) or underflows it to nothing (only elements under ~1e-19) would score as infinity or 0,
    /// so cosine similarity would no longer ignore scale. Such a vector is refused; scaling it does not change its cosine.
    /// </summary>
    public static string? Unsearchable(ReadOnlySpan<float> vector)
    {
        double squares = 0;
        var anyNonZero = false;
        foreach (var x in vector)
        {
            if (!float.IsFinite(x)) return "holds a value that is not a finite float32";
            squares += (double)x * x;
            anyNonZero |= x != 0;
        }
        if (squares > float.MaxValue) return "is too long for float32 arithmetic (its squared length passes 3.4e38): scale it down";
        if (anyNonZero && squares < 1e-36) return "is too short for float32 arithmetic (its squared length is under 1e-36): scale it up";
        return null;
    }
}
