using System.Text.Json;
using Magpie.Query.Rql;

namespace Magpie.Query.Shards;

/// <summary>
/// What <see cref="QueryCoordinator"/> runs, whoever asked (HTTP, the PostgreSQL endpoint): the RQL text and parameters
/// (sent on to remote owners, which parse them again), where to start, the facets of a request body, and staleness wishes.
/// </summary>
public sealed record CoordinatorRequest
{
    public required string Query { get; init; }

    /// <summary>The request of a query built as a tree: its text is what the owners are sent (<see cref="RqlWriter"/>).</summary>
    public static CoordinatorRequest Of(RqlQuery query) => new() { Query = RqlWriter.Write(query) };
    public Dictionary<string, JsonElement>? Parameters { get; init; }
    public int Start { get; init; }
    public string? Cursor { get; init; }
    public bool WaitForNonStaleResults { get; init; }
    public int TimeoutMs { get; init; } = 15_000;
    public List<JsonElement>? Facets { get; init; }
    public bool FacetsOnly { get; init; }

    /// <summary>Kafka mode: input partition of <c>magpie.documents</c> → an offset; the answer covers every write before it (<see cref="InputOffsets"/>).</summary>
    public Dictionary<string, long>? InputOffsets { get; init; }
}
