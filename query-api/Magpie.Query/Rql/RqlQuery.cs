namespace Magpie.Query.Rql;

/// <summary>A parsed RQL query: <c>from index 'Name' | from Collection [where …] [order by …] [select …] [limit n [offset m]]</c>.</summary>
public sealed record RqlQuery(RqlSource From, RqlExpression? Where, IReadOnlyList<RqlOrder> OrderBy, IReadOnlyList<RqlProjection> Select, int? Limit, int? Offset)
{
    /// <summary>Facets to count over the matching entries: <c>select facet(…)</c>, and those of the request body's <c>facets</c>.</summary>
    public IReadOnlyList<RqlFacet> Facets { get; init; } = [];

    /// <summary><c>select facet(…)</c> and nothing else: the answer is the facets (and the total), no results.</summary>
    public bool FacetsOnly { get; init; }
}

public sealed record RqlSource(string Name, bool IsIndex);

/// <summary><c>order by f [as long|double|string] [asc|desc]</c>, or <c>score()</c>.</summary>
public sealed record RqlOrder(string? Field, bool Descending, string? As)
{
    public bool IsScore => Field is null;
}

public sealed record RqlProjection(string Field, string Alias);

public abstract record RqlExpression;

public sealed record RqlAnd(RqlExpression Left, RqlExpression Right) : RqlExpression;
public sealed record RqlOr(RqlExpression Left, RqlExpression Right) : RqlExpression;
public sealed record RqlNot(RqlExpression Inner) : RqlExpression;

/// <summary><c>f = v</c>, <c>f != v</c>, <c>f &lt; v</c>, …; <see cref="Exact"/> inside <c>exact(…)</c>.</summary>
public sealed record RqlCompare(string Field, string Operator, RqlValue Value, bool Exact = false) : RqlExpression;
public sealed record RqlBetween(string Field, RqlValue Low, RqlValue High, bool Exact = false) : RqlExpression;
public sealed record RqlIn(string Field, IReadOnlyList<RqlValue> Values, bool Exact = false) : RqlExpression;
public sealed record RqlStartsWith(string Field, RqlValue Prefix) : RqlExpression;
public sealed record RqlSearch(string Field, RqlValue Terms) : RqlExpression;
public sealed record RqlExists(string Field) : RqlExpression;

/// <summary>A literal (string, number, boolean, null) or a <c>$parameter</c> resolved at execution.</summary>
public sealed record RqlValue(object? Literal, string? Parameter = null, int Position = 0)
{
    public bool IsParameter => Parameter is not null;
}

/// <summary>A query that does not parse: what was expected, at which line and column.</summary>
public sealed class RqlException(string message, int line, int column) : Exception($"{message} (line {line}, column {column})")
{
    public int Line { get; } = line;
    public int Column { get; } = column;
}
