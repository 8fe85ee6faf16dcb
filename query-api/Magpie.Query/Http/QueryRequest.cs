using Magpie.Contracts;
using System.Text.Json;

namespace Magpie.Query.Http;

/// <summary>The body of POST /queries and /streams/queries.</summary>
public sealed record QueryRequest
{
    public string Query { get; init; } = "";
    public Dictionary<string, JsonElement>? Parameters { get; init; }

    /// <summary>RavenDB's clients send the parameters as <c>QueryParameters</c> (the body's names are read case-insensitively).</summary>
    public Dictionary<string, JsonElement>? QueryParameters { get; init; }

    /// <summary>The parameters, under either name; both given is a 400.</summary>
    public Dictionary<string, JsonElement>? AllParameters => Parameters is not null && QueryParameters is not null
        ? throw new QueryProblem(ErrorKind.Invalid, "give the parameters once: \"parameters\" or RavenDB's \"QueryParameters\", not both")
        : Parameters ?? QueryParameters;
    public int PageSize { get; init; } = 25;
    public int Start { get; init; }
    public string? Cursor { get; init; }
    public bool WaitForNonStaleResults { get; init; }
    public int TimeoutMs { get; init; } = 15_000;

    /// <summary>Facets counted beside the results (<see cref="Facets.FacetJson"/>); RQL's <c>select facet(…)</c> gives facets instead of results.</summary>
    public List<JsonElement>? Facets { get; init; }

    /// <summary>With <see cref="Facets"/>: answer the facets and the total only, no page of results.</summary>
    public bool FacetsOnly { get; init; }

    /// <summary>
    /// Kafka mode, read your writes through Kafka: input partition → offset of <c>magpie.documents</c> (a produced message's offset + 1);
    /// the answer waits until every write before them is indexed, as <see cref="WaitForNonStaleResults"/> waits.
    /// </summary>
    public Dictionary<string, long>? WaitForInputOffsets { get; init; }

    public Shards.CoordinatorRequest ToCoordinator() => new()
    {
        Query = Query, Parameters = AllParameters, Start = Start, Cursor = Cursor, WaitForNonStaleResults = WaitForNonStaleResults,
        TimeoutMs = TimeoutMs, Facets = Facets, FacetsOnly = FacetsOnly, InputOffsets = WaitForInputOffsets,
    };
}
