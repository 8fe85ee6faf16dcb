namespace Magpie.Query;

/// <summary>A query that can't run, as the HTTP problem it becomes (RQL errors carry line and column).</summary>
public sealed class QueryProblem(int status, string detail, int? line = null, int? column = null) : Exception(detail)
{
    public int Status { get; } = status;
    public int? Line { get; } = line;
    public int? Column { get; } = column;
}
