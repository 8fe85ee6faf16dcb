using Magpie.Query.Rql;
using System.Runtime.CompilerServices;
using System.Text.Json;
using Magpie.Contracts.Search;
using Magpie.Contracts.Indexes;
using Magpie.Query.Shards;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// A SELECT over one index, run inside the engine. Rows: the WHERE becomes RQL, the columns a projection, ORDER BY and
/// LIMIT the query's, streamed page by page from one snapshot. Aggregates (count, sum, avg, min, max), with at most one
/// GROUP BY key — a column, or Grafana's time bucket <c>floor(extract(epoch from c)/N)*N</c> — are counted by the facet
/// engine over doc values in one pass (never by pulling rows out); their ORDER BY and LIMIT apply to the groups.
/// </summary>
public sealed class SqlRunner(IndexSchemas schemas, QueryCoordinator coordinator)
{
    private static readonly HashSet<string> Aggregates = ["count", "sum", "avg", "min", "max"];

    public async Task<PgOutcome> RunAsync(SqlSelect select, CancellationToken ct)
    {
        if (select.From is null) return Constants(select);
        var index = schemas.Resolve(select.From) ?? throw new PgException(PgException.UndefinedTable, $"relation \"{SqlText.Shorten(select.From)}\" does not exist (tables are Magpie's indexes)");
        var columns = await schemas.ColumnsAsync(index, ct);
        string Field(string name) => columns.FirstOrDefault(c => c.Name == name)?.Name
            ?? columns.FirstOrDefault(c => string.Equals(c.Name, name, StringComparison.OrdinalIgnoreCase))?.Name
            ?? throw new PgException(PgException.UndefinedColumn, $"column \"{SqlText.Shorten(name)}\" does not exist in \"{index}\"");
        PgType TypeOf(string field) => columns.First(c => c.Name == field).Type;
        var rql = new SqlToRql(Field, TypeOf);
        var condition = select.Where is null ? null : rql.Condition(select.Where);
        var matching = RqlQuery.OfIndex(index, condition);
        // Rows whose key is NULL (a field the document lacks, or an explicit null), as a query of their own: one group in SQL.
        RqlQuery NullKey(SqlColumn key) =>
            matching with { Where = condition is null ? rql.Condition(new SqlIsNull(key, false)) : new RqlAnd(condition, rql.Condition(new SqlIsNull(key, false))) };

        return select.GroupBy.Count > 0 || select.Items.Any(i => HasAggregate(i.Expr))
            ? await AggregateAsync(select, matching, NullKey, Field, TypeOf, ct)
            : Rows(select, matching, columns, Field, TypeOf);
    }

    /// <summary>
    /// The RQL condition for a WHERE clause (SQL text) over an index's columns, when the index answers it exactly; null
    /// when it doesn't (the caller then reads every row).
    /// </summary>
    public static RqlExpression? Condition(string where, IReadOnlyList<PgColumn> columns)
    {
        try
        {
            var select = SqlParser.Parse($"SELECT * FROM t WHERE {where}");
            if (select.Where is null) return null;
            string Field(string name) => columns.FirstOrDefault(c => c.Name == name)?.Name
                ?? columns.FirstOrDefault(c => string.Equals(c.Name, name, StringComparison.OrdinalIgnoreCase))?.Name
                ?? throw new PgException(PgException.UndefinedColumn, name);
            if (Calls(select).Any()) return null;   // search(), functions: the evaluator's
            return new SqlToRql(Field, f => columns.First(c => c.Name == f).Type).Condition(select.Where);
        }
        catch (PgException) { return null; }
    }

    /// <summary>
    /// Whether the index orders a statement's rows as PostgreSQL would. It sorts a field's terms with missing values first and text
    /// ignoring case; PostgreSQL puts NULLs last ascending (first descending), compares text byte by byte and timestamps as
    /// instants: a row query with ORDER BY is evaluated outside the index instead — unless it asks Magpie's own full text
    /// (<c>search</c>, <c>highlight</c>), which only the index answers.
    /// </summary>
    public static bool OrdersExactly(SqlSelect select) =>
        select.OrderBy.Count == 0 || select.GroupBy.Count > 0 || select.Items.Any(i => HasAggregate(i.Expr))
        || Calls(select).Any(c => c.Name is "search" or "highlight");

    private static IEnumerable<SqlCall> Calls(SqlSelect select) =>
        select.Items.Select(i => i.Expr).Concat(select.Where is null ? [] : [select.Where]).SelectMany(CallsIn);

    private static IEnumerable<SqlCall> CallsIn(SqlExpr e) => e switch
    {
        SqlCall c => c.Args.SelectMany(CallsIn).Prepend(c),
        SqlBinary b => CallsIn(b.Left).Concat(CallsIn(b.Right)),
        SqlNot n => CallsIn(n.Inner),
        SqlNegate n => CallsIn(n.Inner),
        SqlBetween b => CallsIn(b.Value).Concat(CallsIn(b.Low)).Concat(CallsIn(b.High)),
        SqlIn i => CallsIn(i.Value).Concat(i.List.SelectMany(CallsIn)),
        SqlIsNull n => CallsIn(n.Value),
        SqlCast c => CallsIn(c.Value),
        SqlExtractEpoch x => CallsIn(x.Of),
        _ => [],
    };

    // ---- rows ----

    private PgRows Rows(SqlSelect select, RqlQuery from, IReadOnlyList<PgColumn> columns, Func<string, string> field, Func<string, PgType> typeOf)
    {
        var outputs = new List<(string Field, string Name, PgType Type)>();
        var highlights = new Dictionary<int, (string Field, int Length, int Count)>();
        foreach (var item in select.Items)
        {
            switch (item.Expr)
            {
                // highlight(column, length, count): the column's fragments the WHERE's search() matched, marked, joined by " … ".
                case SqlCall { Name: "highlight", Args: [SqlColumn h, SqlLiteral { Value: double length }, SqlLiteral { Value: double count }] }:
                    var highlighted = field(h.Name);
                    highlights[outputs.Count] = (highlighted, (int)length, (int)count);
                    outputs.Add((highlighted, item.Alias ?? "highlight", PgType.Text));
                    break;
                case SqlStar:
                    outputs.AddRange(columns.Select(c => (c.Name, c.Name, c.Type)));
                    break;
                case SqlColumn or SqlCast { Value: SqlColumn }:
                    var name = item.Expr is SqlColumn c ? c.Name : ((SqlColumn)((SqlCast)item.Expr).Value).Name;
                    var f = field(name);
                    outputs.Add((f, item.Alias ?? name, typeOf(f)));
                    break;
                default:
                    throw new PgException(PgException.FeatureNotSupported, "without GROUP BY or aggregates, the select list takes columns, * and highlight(column, length, count)");
            }
        }
        // LIMIT 0: the columns and no row (RQL's limit 0 would still page).
        if (select.Limit == 0) return PgRows.Of(outputs.Select(o => new PgColumn(o.Name, o.Type)).ToList(), []);
        var query = Projected(from, outputs.Select(o => o.Field)) with
        {
            OrderBy = [.. select.OrderBy.Select(o => new RqlOrder(OrderField(o.Expr, select, outputs, field), o.Descending, null))],
            // Numbers as the parser reads them (doubles): the planner takes the tree as if parsed.
            Highlights = [.. highlights.Values.Distinct().Select(h => new RqlHighlight(h.Field, new RqlValue((double)h.Length), new RqlValue((double)h.Count), null))],
            // No index holds more rows than an int counts: a larger LIMIT is no limit.
            Limit = select.Limit is { } limit ? (int)Math.Min(limit, int.MaxValue) : select.Offset is not null ? int.MaxValue : null,
            Offset = select.Offset is { } offset ? offset <= int.MaxValue ? (int)offset
                : throw new PgException(PgException.ProgramLimitExceeded, $"OFFSET {offset} is past the most rows an index holds ({int.MaxValue})") : null,
        };
        return new PgRows(outputs.Select(o => new PgColumn(o.Name, o.Type)).ToList(), StreamAsync(query, outputs.Select(o => o.Type).ToList(), highlights));
    }

    private static string OrderField(SqlExpr e, SqlSelect select, List<(string Field, string Name, PgType Type)> outputs, Func<string, string> field) => e switch
    {
        SqlLiteral { Value: double n } when n >= 1 && n <= outputs.Count => outputs[(int)n - 1].Field,
        SqlColumn c when outputs.FirstOrDefault(o => o.Name == c.Name) is { Field: not null } o => o.Field,
        SqlColumn c => field(c.Name),
        _ => throw new PgException(PgException.FeatureNotSupported, "ORDER BY takes columns, aliases or positions here"),
    };

    /// <summary>The query with each field projected under its position (<c>c0…cN</c>), so two outputs of one field (or an alias equal to another field) stay apart.</summary>
    internal static RqlQuery Projected(RqlQuery query, IEnumerable<string> fields) =>
        query with { Select = [.. fields.Select((f, i) => new RqlProjection(f, "c" + i))] };

    /// <summary>Each hit of <paramref name="query"/> as a row: its projection <c>c0…cN</c> converted to the columns' types (or a highlight's fragments).</summary>
    internal async IAsyncEnumerable<object?[]> StreamAsync(RqlQuery query, List<PgType> types, Dictionary<int, (string Field, int Length, int Count)> highlights,
        [EnumeratorCancellation] CancellationToken ct = default)
    {
        await foreach (var hit in QueryHits.StreamAsync(coordinator, CoordinatorRequest.Of(query), query, ct))
        {
            var row = new object?[types.Count];
            for (var i = 0; i < types.Count; i++)
                row[i] = highlights.TryGetValue(i, out var h)
                    ? hit.Highlights?.GetValueOrDefault(h.Field) is { } fragments ? string.Join(" … ", fragments) : null
                    : PgValues.FromJson(hit.Result.ValueKind == JsonValueKind.Object && hit.Result.TryGetProperty("c" + i, out var v) ? v : null, types[i]);
            yield return row;
        }
    }

    // ---- aggregates ----

    private sealed record Output(string Name, PgType Type, Func<FacetBucket, object?> Value, SqlExpr Expr);

    private async Task<PgOutcome> AggregateAsync(SqlSelect select, RqlQuery from, Func<SqlColumn, RqlQuery> nullKey, Func<string, string> field, Func<string, PgType> typeOf,
        CancellationToken ct)
    {
        if (select.GroupBy.Count > 1) throw new PgException(PgException.FeatureNotSupported, "GROUP BY takes one key here (a column or a time bucket)");
        SqlExpr? key = select.GroupBy.Count == 0 ? null : ItemFor(select.GroupBy[0], select) ?? select.GroupBy[0];
        string? keyField = null;
        SqlColumn? keyColumn = null;
        long? interval = null;
        string? calendar = null;
        switch (key)
        {
            case null: break;
            case SqlColumn c: keyField = field(c.Name); keyColumn = c; break;
            case SqlCall { Name: "date_trunc", Args: [SqlLiteral { Value: string unit }, SqlColumn t] }:
                keyField = field(t.Name);
                keyColumn = t;
                if (typeOf(keyField) != PgType.TimestampTz)
                    throw new PgException("42883", $"function date_trunc(unknown, {SqlToRql.TypeName(typeOf(keyField))}) does not exist");
                calendar = unit.Trim().ToLowerInvariant();
                if (!HistogramFacetSpec.CalendarUnits.Contains(calendar))
                    throw new PgException("22023", $"unit \"{SqlText.Shorten(unit)}\" not recognized for type timestamp with time zone (Magpie buckets by {string.Join(", ", HistogramFacetSpec.CalendarUnits)})");
                break;
            case SqlBinary { Op: "*", Left: SqlCall { Name: "floor", Args: [SqlBinary { Op: "/", Left: SqlExtractEpoch { Of: SqlColumn t }, Right: SqlLiteral { Value: double n } }] }, Right: SqlLiteral { Value: double m } }
                when n == m && n >= 1 && n == Math.Floor(n):
                keyField = field(t.Name);
                keyColumn = t;
                if (typeOf(keyField) != PgType.TimestampTz) throw new PgException(PgException.FeatureNotSupported, $"column \"{t.Name}\" holds no dates to bucket by time");
                interval = (long)n;
                break;
            default: throw new PgException(PgException.FeatureNotSupported, "GROUP BY takes a column or floor(extract(epoch from column)/N)*N here");
        }

        var aggregated = new List<string>();
        // A timestamp column is aggregated over its dates (@ticks, as epoch seconds): count, min and max, as PostgreSQL has them.
        int Aggregated(string f, string fn)
        {
            var type = typeOf(f);
            if (type == PgType.TimestampTz && fn is "sum" or "avg")
                throw new PgException("42883", $"function {fn}(timestamp with time zone) does not exist");
            if (type is not (PgType.Float8 or PgType.TimestampTz))
                throw new PgException(PgException.FeatureNotSupported, $"column \"{f}\" is not numeric: sum/avg/min/max/count(column) take numbers (min/max/count also dates)");
            var name = type == PgType.TimestampTz ? f + EntryFields.Ticks : f;
            if (!aggregated.Contains(name)) aggregated.Add(name);
            return aggregated.IndexOf(name);
        }
        var keyType = calendar is not null ? PgType.TimestampTz : interval is not null ? PgType.Float8
            : keyField is null ? PgType.Text : typeOf(keyField) == PgType.Float8 ? PgType.Float8 : PgType.Text;
        var outputs = new List<Output>();
        foreach (var item in select.Items)
        {
            var e = item.Expr;
            if (key is not null && Same(e, key))
            {
                outputs.Add(new Output(item.Alias ?? (e is SqlColumn c ? c.Name : e is SqlCall { Name: var call } ? call : "?column?"), keyType,
                    calendar is not null ? b => b.Number is { } start ? EpochSeconds(start) : null
                    : b => b.Number is { } num ? num : b.Text == EntryFields.NullValue ? null : b.Text, e));
                continue;
            }
            if (e is not SqlCall { Name: var fn, Args: [var arg] } || !Aggregates.Contains(fn))
                throw new PgException("42803", $"column \"{Describe(e)}\" must appear in the GROUP BY clause or be used in an aggregate function");
            var name = item.Alias ?? fn;
            if (fn == "count" && arg is SqlStar) { outputs.Add(new Output(name, PgType.Int8, b => b.Count, e)); continue; }
            if (arg is not SqlColumn col) throw new PgException(PgException.FeatureNotSupported, $"{fn}() takes a column here");
            var at = Aggregated(field(col.Name), fn);
            var dates = typeOf(field(col.Name)) == PgType.TimestampTz;
            outputs.Add(fn switch
            {
                "count" => new Output(name, PgType.Int8, b => b.Fields[at].N, e),
                "sum" => new Output(name, PgType.Float8, b => b.Fields[at].N > 0 ? b.Fields[at].Sum : null, e),
                "avg" => new Output(name, PgType.Float8, b => b.Fields[at].N > 0 ? b.Fields[at].Sum / b.Fields[at].N : null, e),
                "min" when dates => new Output(name, PgType.TimestampTz, b => b.Fields[at].N > 0 ? EpochSeconds(b.Fields[at].Min) : null, e),
                "max" when dates => new Output(name, PgType.TimestampTz, b => b.Fields[at].N > 0 ? EpochSeconds(b.Fields[at].Max) : null, e),
                "min" => new Output(name, PgType.Float8, b => b.Fields[at].N > 0 ? b.Fields[at].Min : null, e),
                _ => new Output(name, PgType.Float8, b => b.Fields[at].N > 0 ? b.Fields[at].Max : null, e),
            });
        }

        // One facet over the query's matches: the groups and their aggregates, counted in the index.
        async Task<IReadOnlyList<FacetBucket>> BucketsAsync(RqlQuery query, Dictionary<string, object> facet)
        {
            var request = CoordinatorRequest.Of(query) with { Facets = [JsonSerializer.SerializeToElement(facet)], FacetsOnly = true };
            var page = await coordinator.PageAsync(request, query with { Facets = Facets.FacetJson.Read(request.Facets), FacetsOnly = true }, 1, 0, null, false, ct);
            return page.Facets![0];
        }
        var facet = new Dictionary<string, object> { ["name"] = "sql", ["sum"] = aggregated };
        if (keyField is not null) facet["field"] = keyField;
        if (interval is { } seconds) facet["interval"] = seconds;
        if (calendar is not null) facet["calendar"] = calendar;
        var buckets = await BucketsAsync(from, facet);
        if (keyColumn is not null && !ExcludesNull(select.Where, keyColumn))
        {
            // The key's NULL group holds the rows without the field as well as those with an explicit null: counted by a query of
            // its own (the facet's buckets are values), with the same aggregates and no key.
            buckets = [.. buckets.Where(b => b.Text != EntryFields.NullValue)];
            var nulls = await BucketsAsync(nullKey(keyColumn), new Dictionary<string, object> { ["name"] = "sql", ["sum"] = aggregated });
            if (nulls.FirstOrDefault(b => b.Count > 0) is { } group) buckets = [.. buckets, group with { Text = null, Number = null }];
        }
        var rows = buckets.Select(b => outputs.Select(o => o.Value(b)).ToArray()).ToList();

        // ORDER BY over the groups (by position, alias or the same expression); without one, by the key ascending.
        var order = select.OrderBy.Select(o => (Column: OutputIndex(o.Expr, select, outputs), o.Descending)).ToList();
        if (order.Count == 0 && key is not null && outputs.FindIndex(o => Same(o.Expr, key)) is >= 0 and var k) order.Add((k, false));
        rows.Sort((a, b) =>
        {
            foreach (var (column, descending) in order)
            {
                var c = Compare(a[column], b[column]);
                if (c != 0) return descending ? -c : c;
            }
            return 0;
        });
        IEnumerable<object?[]> result = rows;
        if (select.Offset is { } offset) result = result.Skip((int)Math.Min(offset, int.MaxValue));
        if (select.Limit is { } limit) result = result.Take((int)Math.Min(limit, int.MaxValue));
        return PgRows.Of(outputs.Select(o => new PgColumn(o.Name, o.Type)).ToList(), result);
    }

    /// <summary>
    /// Whether the WHERE leaves out rows whose <paramref name="column"/> is NULL: one of its AND-ed conditions compares the column
    /// (a comparison with NULL is never true) or says <c>IS NOT NULL</c> — Grafana's <c>$__timeFilter(time)</c> does, so a time
    /// series needs no NULL group.
    /// </summary>
    private static bool ExcludesNull(SqlExpr? where, SqlColumn column) => where switch
    {
        SqlBinary { Op: "and" } b => ExcludesNull(b.Left, column) || ExcludesNull(b.Right, column),
        SqlBinary { Op: "=" or "<>" or "!=" or "<" or "<=" or ">" or ">=" } b =>
            b.Left is SqlColumn l && Same(l, column) && b.Right is SqlLiteral or SqlCast { Value: SqlLiteral }
            || b.Right is SqlColumn r && Same(r, column) && b.Left is SqlLiteral or SqlCast { Value: SqlLiteral },
        SqlBetween { Value: SqlColumn v } => Same(v, column),
        SqlIn { Value: SqlColumn v } => Same(v, column),
        SqlIsNull { Value: SqlColumn v, Negated: true } => Same(v, column),
        _ => false,
    };

    private static SqlExpr? ItemFor(SqlExpr e, SqlSelect select) => e switch
    {
        SqlLiteral { Value: double n } when n >= 1 && n <= select.Items.Count => select.Items[(int)n - 1].Expr,
        SqlColumn c => select.Items.FirstOrDefault(i => i.Alias == c.Name)?.Expr,
        _ => null,
    };

    private static int OutputIndex(SqlExpr e, SqlSelect select, List<Output> outputs)
    {
        if (e is SqlLiteral { Value: double n } && n >= 1 && n <= outputs.Count) return (int)n - 1;
        if (e is SqlColumn c && outputs.FindIndex(o => o.Name == c.Name) is >= 0 and var byName) return byName;
        var same = outputs.FindIndex(o => Same(o.Expr, e));
        return same >= 0 ? same : throw new PgException(PgException.FeatureNotSupported, "ORDER BY over groups takes output columns, aliases or positions");
    }

    /// <summary>A date the facet engine gave as epoch seconds, to the microsecond PostgreSQL keeps.</summary>
    private static DateTime EpochSeconds(double seconds) =>
        DateTime.UnixEpoch.AddTicks((long)Math.Round(seconds * 1_000_000) * 10);

    private static int Compare(object? a, object? b) => (a, b) switch
    {
        (null, null) => 0,
        (null, _) => 1,    // nulls last
        (_, null) => -1,
        (double x, double y) => x.CompareTo(y),
        (long x, long y) => x.CompareTo(y),
        (DateTime x, DateTime y) => x.CompareTo(y),
        _ => string.CompareOrdinal(Convert.ToString(a, System.Globalization.CultureInfo.InvariantCulture), Convert.ToString(b, System.Globalization.CultureInfo.InvariantCulture)),
    };

    private static bool HasAggregate(SqlExpr e) => e switch
    {
        SqlCall c => Aggregates.Contains(c.Name) || c.Args.Any(HasAggregate),
        SqlBinary b => HasAggregate(b.Left) || HasAggregate(b.Right),
        SqlCast c => HasAggregate(c.Value),
        _ => false,
    };

    /// <summary>Structural equality (records compare lists by reference).</summary>
    private static bool Same(SqlExpr a, SqlExpr b) => (a, b) switch
    {
        (SqlColumn x, SqlColumn y) => string.Equals(x.Name, y.Name, StringComparison.OrdinalIgnoreCase),
        (SqlLiteral x, SqlLiteral y) => Equals(x.Value, y.Value),
        (SqlCall x, SqlCall y) => x.Name == y.Name && x.Args.Count == y.Args.Count && x.Args.Zip(y.Args).All(p => Same(p.First, p.Second)),
        (SqlBinary x, SqlBinary y) => x.Op == y.Op && Same(x.Left, y.Left) && Same(x.Right, y.Right),
        (SqlExtractEpoch x, SqlExtractEpoch y) => Same(x.Of, y.Of),
        (SqlCast x, SqlCast y) => x.Type == y.Type && Same(x.Value, y.Value),
        (SqlStar, SqlStar) => true,
        _ => false,
    };

    private static string Describe(SqlExpr e) => e is SqlColumn c ? c.Name : e.GetType().Name[3..].ToLowerInvariant();

    /// <summary>SELECT without FROM: literals only (drivers' and tools' probes, <c>SELECT 1</c>).</summary>
    private static PgOutcome Constants(SqlSelect select)
    {
        var columns = new List<PgColumn>();
        var row = new List<object?>();
        foreach (var item in select.Items)
        {
            var value = item.Expr switch
            {
                SqlLiteral l => l.Value,
                SqlNegate { Inner: SqlLiteral { Value: double d } } => -d,
                SqlCast { Value: SqlLiteral l } => l.Value,
                _ => throw new PgException(PgException.FeatureNotSupported, "without FROM, the select list takes literals"),
            };
            var type = value switch { double d when d == Math.Floor(d) && Math.Abs(d) < int.MaxValue => PgType.Int4, double => PgType.Float8, bool => PgType.Bool, _ => PgType.Text };
            columns.Add(new PgColumn(item.Alias ?? "?column?", type));
            row.Add(type == PgType.Int4 ? (int)(double)value! : value);
        }
        return PgRows.Of(columns, [[.. row]]);
    }
}
