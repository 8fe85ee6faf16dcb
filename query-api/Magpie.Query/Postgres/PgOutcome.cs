namespace Magpie.Query.Postgres;

/// <summary>What a statement gives: rows (columns known before the first row, rows streamed), a command tag, or nothing (an empty query).</summary>
public abstract record PgOutcome;

public sealed record PgRows(IReadOnlyList<PgColumn> Columns, IAsyncEnumerable<object?[]> Rows) : PgOutcome
{
    public static PgRows Of(IReadOnlyList<PgColumn> columns, IEnumerable<object?[]> rows) => new(columns, rows.ToAsyncEnumerable());
}

public sealed record PgCommand(string Tag) : PgOutcome;

public sealed record PgEmptyQuery : PgOutcome;

/// <summary>Who a session is, as its startup message named it: what current_user, current_database() and the settings answer.</summary>
public sealed record PgSessionInfo(string User, string Database, string ApplicationName = "");

/// <summary>Runs one SQL statement (or RQL query) for a session.</summary>
public interface IPgStatements
{
    Task<PgOutcome> RunAsync(string statement, PgSessionInfo session, CancellationToken ct);
}
