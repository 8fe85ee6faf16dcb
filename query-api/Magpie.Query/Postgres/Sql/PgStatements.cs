using System.Runtime.CompilerServices;
using System.Text.Json;
using Magpie.Query.Shards;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// What a statement is and who answers it: session commands (SET, BEGIN, …) are acknowledged (the endpoint is read-only),
/// SHOW and pg_sleep go to <see cref="PgCatalog"/>, RQL (<c>from …</c>) runs as-is, SELECT goes to <see cref="SqlRunner"/> — in
/// the index, what it answers exactly — and what that refuses, or what reads the catalogs, to <see cref="DuckDbEvaluator"/>.
/// </summary>
public sealed class PgStatements(SqlRunner sql, DuckDbEvaluator evaluator, QueryCoordinator coordinator) : IPgStatements
{
    private static readonly Dictionary<string, string> SessionCommands = new(StringComparer.OrdinalIgnoreCase)
    {
        ["set"] = "SET", ["reset"] = "RESET", ["begin"] = "BEGIN", ["start"] = "START TRANSACTION", ["commit"] = "COMMIT", ["end"] = "COMMIT",
        ["rollback"] = "ROLLBACK", ["discard"] = "DISCARD ALL", ["deallocate"] = "DEALLOCATE", ["close"] = "CLOSE CURSOR", ["listen"] = "LISTEN", ["unlisten"] = "UNLISTEN",
    };

    private static readonly HashSet<string> Writes = new(StringComparer.OrdinalIgnoreCase)
        { "insert", "update", "delete", "create", "drop", "alter", "truncate", "copy", "grant", "revoke", "vacuum", "merge" };

    public async Task<PgOutcome> RunAsync(string statement, PgSessionInfo session, CancellationToken ct)
    {
        var text = statement.Trim().TrimEnd(';').Trim();
        if (SqlText.Split(text).Count == 0) return new PgEmptyQuery();
        var first = text.Split([' ', '\n', '\r', '\t', '('], 2)[0];
        if (SessionCommands.TryGetValue(first, out var tag)) return new PgCommand(tag);
        if (Writes.Contains(first))
            throw new PgException("25006", "Magpie's PostgreSQL endpoint is read-only: write documents over HTTP (/docs, /bulk_docs) or to the magpie.documents topic");
        if (first.Equals("from", StringComparison.OrdinalIgnoreCase)) return await RqlAsync(text, ct);
        if (await PgCatalog.AnswerAsync(text, session, ct) is { } answer) return answer;
        if (first.Equals("select", StringComparison.OrdinalIgnoreCase) || first.Equals("with", StringComparison.OrdinalIgnoreCase)) return await SelectAsync(text, session, ct);
        throw new PgException(PgException.SyntaxError, $"syntax error at or near \"{SqlText.Shorten(first)}\": Magpie answers SELECT over its indexes, RQL (from …), SHOW and SET");
    }

    /// <summary>In the index when its SQL reads the statement exactly; anything it refuses (its grammar or its plans) evaluated over the index's rows.</summary>
    private async Task<PgOutcome> SelectAsync(string text, PgSessionInfo session, CancellationToken ct)
    {
        if (PgDialect.ReadsCatalog(text)) return await evaluator.RunAsync(text, session, ct);
        SqlSelect select;
        try { select = SqlParser.Parse(text); }
        catch (PgException e) when (e.SqlState is PgException.SyntaxError or PgException.FeatureNotSupported) { return await evaluator.RunAsync(text, session, ct); }
        if (!SqlRunner.OrdersExactly(select)) return await evaluator.RunAsync(text, session, ct);
        try { return await sql.RunAsync(select, ct); }
        // The index's SQL reads aggregates only as whole select items: an aggregate inside an expression (round(avg(x))) it
        // reports as ungrouped (42803), which the evaluator answers — or reports with the same SQLSTATE where it truly is.
        catch (PgException e) when (e.SqlState is PgException.FeatureNotSupported or "42803") { return await evaluator.RunAsync(text, session, ct); }
    }

    /// <summary>
    /// RQL as RavenDB users write it: with <c>select</c>, one column per projection; without, the document id and the
    /// document as json; with <c>select facet(…)</c>, one row per facet value.
    /// </summary>
    private async Task<PgOutcome> RqlAsync(string rql, CancellationToken ct)
    {
        var request = new CoordinatorRequest { Query = rql };
        var query = LocalShardOwner.Parse(rql, null, null);
        if (query.Facets.Count > 0)
        {
            // A query's problem becomes its SQLSTATE where every statement's failure is answered (PgSession).
            var page = await coordinator.PageAsync(request, query, 1, 0, null, false, ct);
            var facets = Facets.FacetResults.Shape(query.Facets, page.Facets!);
            return PgRows.Of([new("facet", PgType.Text), new("value", PgType.Text), new("count", PgType.Int8)],
                facets.SelectMany(f => f.Values.Select(v => new object?[] { f.Name, v.Value is null ? null : Convert.ToString(v.Value, System.Globalization.CultureInfo.InvariantCulture), v.Count })));
        }
        List<PgColumn> columns = query.Select.Count > 0
            ? [.. query.Select.Select(s => new PgColumn(s.Alias, PgType.Json))]
            : [new("id", PgType.Text), new("document", PgType.Json)];
        return new PgRows(columns, RqlRowsAsync(request, query, ct));
    }

    private async IAsyncEnumerable<object?[]> RqlRowsAsync(CoordinatorRequest request, Rql.RqlQuery query, [EnumeratorCancellation] CancellationToken ct = default)
    {
        await foreach (var hit in QueryHits.StreamAsync(coordinator, request, query, ct))
        {
            var r = hit.Result;
            if (query.Select.Count > 0)
                yield return [.. query.Select.Select(s => r.TryGetProperty(s.Alias, out var v) && v.ValueKind != JsonValueKind.Null ? (object?)v.GetRawText() : null)];
            else
                yield return [r.TryGetProperty("@metadata", out var m) && m.TryGetProperty("@id", out var id) ? id.GetString() : null, r.GetRawText()];
        }
    }
}
