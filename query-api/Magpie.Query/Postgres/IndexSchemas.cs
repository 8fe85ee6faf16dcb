using Magpie.Query.Rql;
using System.Text.Json;
using Magpie.Contracts.Search;
using Magpie.Contracts.Indexes;
using Magpie.Query.Shards;

namespace Magpie.Query.Postgres;

/// <summary>
/// Indexes seen as tables: each index's fields as columns with a PostgreSQL type — read from the Lucene index's field names
/// where this process holds a shard (<c>F@ticks</c> → timestamptz, only <c>F@num</c> → float8, else text); a query process
/// without shards (Kafka mode) infers them from the first results instead.
/// </summary>
public sealed class IndexSchemas(IIndexDefinitions definitions, ILocalShards? local, QueryCoordinator coordinator)
{
    public IReadOnlyList<string> Tables => definitions.Current.Keys.Order(StringComparer.Ordinal).ToList();

    /// <summary>The index a table name means (exact, else case-insensitive; a <c>public.</c> prefix is allowed); null if none.</summary>
    public string? Resolve(string table)
    {
        if (table.StartsWith("public.", StringComparison.OrdinalIgnoreCase)) table = table[7..];
        if (definitions.Current.ContainsKey(table)) return table;
        return definitions.Current.Keys.FirstOrDefault(k => string.Equals(k, table, StringComparison.OrdinalIgnoreCase));
    }

    public async Task<IReadOnlyList<PgColumn>> ColumnsAsync(string index, CancellationToken ct)
    {
        if (local?.Shards(index).Select(w => w.Searcher).OfType<IShardSearcher>().FirstOrDefault() is { } shard)
            return FromFieldNames(shard.FieldNames());
        return await SampleAsync(index, ct);
    }

    public static IReadOnlyList<PgColumn> FromFieldNames(IEnumerable<string> names)
    {
        var kinds = new Dictionary<string, HashSet<string>>(StringComparer.Ordinal);
        foreach (var name in names)
        {
            if (name.StartsWith('@')) continue;
            var at = name.LastIndexOf('@');
            var (field, suffix) = at > 0 ? (name[..at], name[at..]) : (name, "");
            if (!kinds.TryGetValue(field, out var set)) kinds[field] = set = [];
            set.Add(suffix);
        }
        return kinds.OrderBy(k => k.Key, StringComparer.Ordinal).Select(k => new PgColumn(k.Key,
            k.Value.Contains(EntryFields.Ticks) ? PgType.TimestampTz
            : k.Value.Contains(EntryFields.Number) && !k.Value.Contains("") && !k.Value.Contains(EntryFields.CaseSensitive) ? PgType.Float8
            : PgType.Text)).ToList();
    }

    private async Task<IReadOnlyList<PgColumn>> SampleAsync(string index, CancellationToken ct)
    {
        var query = RqlQuery.OfIndex(index);
        var page = await coordinator.PageAsync(CoordinatorRequest.Of(query), query, 200, 0, null, false, ct);
        var types = new Dictionary<string, PgType>(StringComparer.Ordinal);
        foreach (var hit in page.Hits)
        {
            if (hit.Result.ValueKind != JsonValueKind.Object) continue;
            foreach (var p in hit.Result.EnumerateObject())
            {
                if (p.Name.StartsWith('@')) continue;
                var t = p.Value.ValueKind switch
                {
                    JsonValueKind.Number => PgType.Float8,
                    JsonValueKind.String when EntryFields.TicksOf(p.Value.GetString()!) is not null => PgType.TimestampTz,
                    JsonValueKind.Null => (PgType?)null,
                    _ => PgType.Text,
                };
                if (t is null) continue;
                types[p.Name] = types.TryGetValue(p.Name, out var seen) && seen != t ? PgType.Text : t.Value;
            }
        }
        return types.OrderBy(t => t.Key, StringComparer.Ordinal).Select(t => new PgColumn(t.Key, t.Value)).ToList();
    }

    /// <summary>The name information_schema gives a type (Grafana's query builder reads it).</summary>
    public static string DataType(PgType t) => t switch
    {
        PgType.Float8 => "double precision", PgType.Int8 => "bigint", PgType.Int4 => "integer", PgType.Bool => "boolean",
        PgType.TimestampTz => "timestamp with time zone", PgType.Json => "json", _ => "text",
    };
}
