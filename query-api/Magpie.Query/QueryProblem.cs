using Magpie.Contracts;

namespace Magpie.Query;

/// <summary>A query that can't run and what kind of refusal it is (RQL errors carry line and column); the endpoints say it as an HTTP problem or a SQLSTATE.</summary>
public sealed class QueryProblem(ErrorKind kind, string detail, int? line = null, int? column = null) : Exception(detail)
{
    public ErrorKind Kind { get; } = kind;
    public int? Line { get; } = line;
    public int? Column { get; } = column;

    /// <summary>A machine-readable reason the coordinator acts on (<see cref="VersionReplaced"/>), carried as the problem's <c>code</c>.</summary>
    public string? Code { get; init; }

    /// <summary>The index version a query was pinned to was replaced by its side-by-side rebuild: ask again with the serving version.</summary>
    public const string VersionReplaced = "index-version-replaced";
}
