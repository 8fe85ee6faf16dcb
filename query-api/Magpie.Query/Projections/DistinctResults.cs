using Magpie.Contracts;
using System.IO.Hashing;
using System.Text.Json;

namespace Magpie.Query.Projections;

/// <summary>
/// <c>select distinct …</c>: each result once, by its JSON. Seen results are kept as 128-bit hashes, at most
/// <see cref="MaxDistinct"/> of them, so a query over many distinct values cannot take the process's memory.
/// </summary>
public sealed class DistinctResults
{
    public const int MaxDistinct = 1_000_000;

    private readonly HashSet<UInt128> _seen = [];

    public int Count => _seen.Count;

    /// <summary>True the first time a result is seen. Throws <see cref="QueryProblem"/> past <see cref="MaxDistinct"/>.</summary>
    public bool Add(JsonElement result)
    {
        var added = _seen.Add(XxHash128.HashToUInt128(JsonSerializer.SerializeToUtf8Bytes(result)));
        if (_seen.Count > MaxDistinct)
            throw new QueryProblem(ErrorKind.Invalid, $"select distinct found more than {MaxDistinct:N0} distinct results (the limit): narrow the query");
        return added;
    }
}
