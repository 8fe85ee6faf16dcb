namespace Magpie.Query;

/// <summary>A query that can't run, as the HTTP problem it becomes (RQL errors carry line and column).</summary>
public sealed class QueryProblem(int status, string detail, int? line = null, int? column = null) : Exception(detail)
{
    public int Status { get; } = status;
    public int? Line { get; } = line;
    public int? Column { get; } = column;

    /// <summary>A machine-readable reason the coordinator acts on (<see cref="VersionReplaced"/>), carried as the problem's <c>code</c>.</summary>
    public string? Code { get; init; }

    /// <summary>The index version a query was pinned to was replaced by its side-by-side rebuild: ask again with the serving version.</summary>
    public const string VersionReplaced = "index-version-replaced";
}
