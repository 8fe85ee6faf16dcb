using Magpie.Contracts;
using System.Text.RegularExpressions;
using Magpie.Contracts.Indexes;
using Magpie.Query.Rql;

namespace Magpie.Query.Shards;

/// <summary>
/// <c>from Collection</c> queries, as RavenDB answers them: through an automatic index over the fields the
/// query filters and sorts on, named <c>Auto/{Collection}/By{Field}And{Field}</c> (search fields end in
/// <c>_search</c>). An existing auto index of the collection that covers the fields is reused; otherwise
/// one is defined (durably, like any other) and the query runs on it — stale until it has caught up, so
/// <c>waitForNonStaleResults</c> applies as usual.
/// </summary>
/// <param name="connections">The embedding connections known here: an automatic index embedding with one that does not exist is
/// refused before it is made (null: not checked).</param>
public sealed partial class AutoIndexes(IIndexDefinitions definitions, Embeddings.Connections.EmbeddingConnections? connections = null)
{
    public async Task<string> IndexForAsync(RqlQuery query, CancellationToken ct)
    {
        // A connection just made on another process (Kafka mode: on its way through magpie.indexes) gets a few seconds to arrive.
        RqlVectorSearch? Unknown() => RqlConditionFields.Nodes(query.Where).OfType<RqlVectorSearch>().FirstOrDefault(v => v.Connection is { } c && !connections.All.ContainsKey(c));
        if (connections is not null && Unknown() is not null && !await Waits.UntilAsync(() => Unknown() is null, ConnectionArrival, ct) && Unknown() is { } unknown)
            throw new QueryProblem(ErrorKind.Invalid, $"there is no embedding connection '{unknown.Connection}' (PUT /embeddings/connections/{unknown.Connection} makes one)");
        var (indexName, definition, exact, search, vectors) = Plan(query);
        // A grouped query's index is named by its keys and aggregates: the same one serves every query that asks for those.
        if (query.GroupBy.Count > 0)
        {
            if (definitions.Current.ContainsKey(indexName)) return indexName;
        }
        else
        {
            var prefix = $"Auto/{Segment(query.From.Name)}/";
            foreach (var (name, d) in definitions.Current.Where(d => d.Key.StartsWith(prefix, StringComparison.OrdinalIgnoreCase)))
                if (Covers(d, exact, search, vectors)) return name;
        }
        try { await definitions.PutAsync(indexName, definition, ct); }
        catch (IndexDefinitionException e) { throw new QueryProblem(e.Kind, $"the automatic index {indexName} was refused: {e.Message}"); }
        return indexName;
    }

    private static readonly TimeSpan ConnectionArrival = TimeSpan.FromSeconds(5);

    /// <summary>The automatic index a query over a collection needs (its name and definition), whether or not it exists.</summary>
    public static (string Name, IndexDefinition Definition) DefinitionFor(RqlQuery query)
    {
        var (name, definition, _, _, _) = Plan(query);
        return (name, definition);
    }

    private static (string Name, IndexDefinition Definition, SortedSet<string> Exact, SortedSet<string> Search, SortedSet<string> Vectors) Plan(RqlQuery query)
    {
        var collection = query.From.Name;
        if (!CollectionPattern().IsMatch(collection) && collection != AllDocs) throw new QueryProblem(ErrorKind.Invalid, $"'{collection}' is not a collection name this version can index automatically");
        if (query.GroupBy.Count > 0) { var (n, d, e, s) = GroupedPlan(query); return (n, d, e, s, []); }
        var exact = new SortedSet<string>(StringComparer.Ordinal);
        var search = new SortedSet<string>(StringComparer.Ordinal);
        Collect(query.Where, exact, search);
        var searches = RqlConditionFields.Nodes(query.Where).OfType<RqlVectorSearch>().Where(v => v.Field != RqlFields.Id).ToList();
        // embedding.text(Title) reads Title's text into a field of its own: Title itself is indexed only when something else asks for it.
        var conditions = RqlConditionFields.Of(query.Where).ToList();
        foreach (var field in searches.Where(v => v.Embedding is not null).Select(v => v.Field).Distinct())
            if (conditions.Count(f => f.Field == field) == searches.Count(s => s.Embedding is not null && s.Field == field)) exact.Remove(field);
        foreach (var o in query.OrderBy.Select(o => o.Field).OfType<string>().Where(f => f != RqlFields.Id)) if (!search.Contains(o)) exact.Add(o);
        // Suggestions come from the words of the text (a search field), as a search would match them.
        foreach (var s in query.Suggestions) if (s.Field != RqlFields.Id) { exact.Remove(s.Field); search.Add(s.Field); }
        // Facets count the values of their fields, ranges and aggregated fields: those are indexed (exact) too.
        foreach (var f in query.Facets)
        {
            if (f.Field is { } field && !search.Contains(field)) exact.Add(field);
            foreach (var r in f.Ranges) Collect(r.Expression, exact, search);
            foreach (var a in f.Aggregations) if (!search.Contains(a.Field)) exact.Add(a.Field);
        }
        // vector.search's field holds vectors: the map makes one of each document's array (or base64 string), or, for
        // embedding.text(Field), one the embedding model makes of its text, in a field of its own (Field_embedding).
        var vectors = new SortedSet<string>(searches.Where(v => v.Embedding is null).Select(v => v.Field), StringComparer.Ordinal);
        var embedded = new SortedSet<string>(searches.Where(v => v.Embedding is not null).Select(v => v.EmbeddingField), StringComparer.Ordinal);
        // Each embedded field's search: its source field, connection and quantization, as the map and the field read them (the field's name is
        // not parsed back: either may hold '_embedding').
        var embeddings = searches.Where(v => v.Embedding is not null).GroupBy(v => v.EmbeddingField).ToDictionary(g => g.Key, g => g.First());
        var sources = embeddings.ToDictionary(e => e.Key, e => (e.Value.Field, e.Value.Connection));
        exact.ExceptWith(vectors);
        search.ExceptWith(vectors);
        if (exact.Concat(search).Concat(vectors).Concat(embedded).FirstOrDefault(f => !FieldPattern().IsMatch(f)) is { } bad)
            throw new QueryProblem(ErrorKind.Invalid, $"'{bad}' can't be indexed automatically: fields are letters, digits, '_' and '.' paths");

        var fields = exact.Select(f => (Field: f, Kind: ""))
            .Concat(search.Select(f => (Field: f, Kind: "_search")))
            .Concat(vectors.Select(f => (Field: f, Kind: "_vector")))
            .Concat(embedded.Select(f => (Field: f, Kind: "_text")))
            .OrderBy(f => f.Field, StringComparer.Ordinal).ToList();
        var indexName = $"Auto/{Segment(collection)}/" + (fields.Count == 0 ? "All" : "By" + string.Join("And", fields.Select(f => NameOf(f.Field) + (f.Kind == "_text" ? "" : f.Kind))));
        var definition = new IndexDefinition
        {
            Maps = [Map(collection, fields.Select(f => (f.Field, f.Kind)), sources)],
            Fields = fields.Where(f => f.Kind != "").ToDictionary(f => f.Field, f => f.Kind switch
            {
                "_search" => new IndexFieldOptions { Indexing = IndexFieldOptions.Search },
                "_text" => new IndexFieldOptions
                {
                    Indexing = IndexFieldOptions.No,
                    Vector = new VectorFieldOptions { Quantization = embeddings[f.Field].Quantization },
                },
                _ => new IndexFieldOptions { Indexing = IndexFieldOptions.No, Vector = new VectorFieldOptions() },
            }),
        };
        vectors.UnionWith(embedded);
        return (indexName, definition, exact, search, vectors);
    }

    /// <summary>
    /// <c>from Posts group by OwnerUserId select key(), count(), sum(Score)</c>, as RavenDB answers it: through an automatic map/reduce
    /// index <c>Auto/Posts/ByCountAndScoreReducedByOwnerUserId</c>, the same for every query with those keys and aggregates. The
    /// query's conditions, sorting and selection then read the index's results: the keys, <c>Count</c> and each summed field.
    /// </summary>
    private static (string Name, IndexDefinition Definition, SortedSet<string> Exact, SortedSet<string> Search) GroupedPlan(RqlQuery query)
    {
        var keys = query.GroupBy;
        if (keys.Select(k => k.Field).Distinct().Count() != keys.Count) throw new QueryProblem(ErrorKind.Invalid, "group by names a key twice");
        var aggregates = query.Aggregates.Count > 0 ? query.Aggregates.OrderBy(a => a.Name, StringComparer.Ordinal).ToList() : [new RqlAggregate(null)];
        if (aggregates.FirstOrDefault(a => a.Field is { } f && keys.Any(k => k.Field == f)) is { } summedKey)
            throw new QueryProblem(ErrorKind.Invalid, $"sum({summedKey.Field}) sums a group key");
        var each = EachElement(keys, aggregates);
        if (keys.Select(k => k.Field).Concat(aggregates.Select(a => a.Field).OfType<string>()).FirstOrDefault(f => !FieldPattern().IsMatch(f)) is { } bad)
            throw new QueryProblem(ErrorKind.Invalid, $"'{bad}' can't be grouped automatically: fields are letters, digits, '_' and '.' paths");
        var results = keys.Select(k => k.Field).Concat(aggregates.Select(a => a.Name)).ToHashSet(StringComparer.Ordinal);
        var asked = RqlConditionFields.Of(query.Where).Select(f => f.Field).Concat(query.OrderBy.Select(o => o.Field).OfType<string>());
        if (asked.FirstOrDefault(f => !results.Contains(f)) is { } other)
            throw new QueryProblem(ErrorKind.Invalid, $"a grouped query filters and sorts its results: '{other}' is not one of their fields ({string.Join(", ", results)})");
        var (map, reduce) = GroupedScripts(query.From.Name, keys, aggregates, each);
        // Per element and whole-array keys have suffixes of their own: earlier versions gave Field and Field_array the other meanings.
        var name = $"Auto/{Segment(query.From.Name)}/By{string.Join("And", aggregates.Select(a => NameOf(a.Name)))}ReducedBy{string.Join("And", keys.Select(k => NameOf(k.Field) + (k.Array ? "_content" : each is not null && k.Field.StartsWith(each, StringComparison.Ordinal) ? "_values" : "")))}";
        return (name, new IndexDefinition { Maps = [map], Reduce = reduce }, [], []);
    }

    /// <summary><c>from @all_docs</c>: every collection (the maps' <c>map('@all_docs', …)</c>).</summary>
    public const string AllDocs = "@all_docs";

    /// <summary>A collection as index names spell it (<c>@all_docs</c>: <c>AllDocs</c>).</summary>
    private static string Segment(string collection) => collection == AllDocs ? "AllDocs" : collection;

    /// <summary>A field as index names spell it (<c>Lines[].Product</c>: <c>Lines-all.Product</c>).</summary>
    private static string NameOf(string field) => field.Replace("[]", "-all", StringComparison.Ordinal);

    private static string Map(string collection, IEnumerable<(string Field, string Kind)> fields, Dictionary<string, (string Field, string? Connection)> sources) =>
        $"map('{collection}', function (d) {{ {AutoMaps.Get}" + (fields.Any(f => f.Kind == "_vector") ? Vec : "") + (fields.Any(f => f.Kind == "_text") ? Emb : "") +
        $"return {{ {string.Join(", ", fields.Select(f => f.Kind switch
        {
            "_vector" => $"'{f.Field}': vec(get(d, '{f.Field}'))",
            "_text" => $"'{f.Field}': emb(get(d, '{sources[f.Field].Field}'){(sources[f.Field].Connection is { } c ? $", '{c}'" : "")})",
            _ => $"'{f.Field}': get(d, '{f.Field}')",
        }))} }}; }})";

    /// <summary>A document's vector: its array of numbers or base64 string as a vector, nothing when it has neither.</summary>
    private const string Vec = "function vec(v) { return Array.isArray(v) || typeof v === 'string' ? createVector(v) : undefined; } ";

    /// <summary>The embedding model's vector of a document's text (or array of texts), nothing when it has none.</summary>
    private const string Emb = "function emb(v, c) { return Array.isArray(v) || typeof v === 'string' ? createVector(c ? embedding.text(v, ai.task(c)) : embedding.text(v)) : undefined; } ";

    /// <summary>
    /// RavenDB's group by over arrays: a key through an array (<c>group by Lines[].Product</c>) makes one group per element, with
    /// every key and sum through the same array read from that element (<c>sum(Lines[].Quantity)</c> sums each line's own) and
    /// a sum of a document's field counted once per element, as RavenDB's fan-out does (<c>sum(Freight)</c> per product: the
    /// freight of the orders holding it, twice for an order that lists it twice); <c>array(Lines[].Product)</c> makes one group
    /// per whole array content. Returns the array the keys go through
    /// (<c>Lines[]</c>), or null when no key does; what can't be answered that way is refused.
    /// </summary>
    private static string? EachElement(IReadOnlyList<RqlGroupKey> keys, IReadOnlyList<RqlAggregate> aggregates)
    {
        var through = keys.Where(k => !k.Array && k.Field.Contains("[]", StringComparison.Ordinal)).ToList();
        if (through.Count == 0) return null;
        var array = through[0].Field[..(through[0].Field.IndexOf("[]", StringComparison.Ordinal) + 2)];
        if (through.FirstOrDefault(k => !Within(k.Field, array)) is { } other)
            throw new QueryProblem(ErrorKind.Invalid, $"group by {other.Field} and {through[0].Field}: keys through arrays must go through the same one, once (Lines[].Product, Lines[].Discount)");
        return array;
    }

    /// <summary>Whether a path goes through <paramref name="array"/> (<c>Lines[]</c>) and no other array.</summary>
    private static bool Within(string path, string array) =>
        (path == array || path.StartsWith(array + ".", StringComparison.Ordinal)) && path.IndexOf("[]", array.Length, StringComparison.Ordinal) < 0;

    /// <summary>
    /// A dynamic group by's map/reduce: the map emits each document's keys (one entry per element of the array the keys go
    /// through, none for an empty or missing array; a missing plain key is null; an array() key is the whole array, null when
    /// missing), 1 as <c>Count</c> and the summed fields (a number, the numbers of an array added up, else 0); the reduce adds them up per key.
    /// </summary>
    private static (string Map, string Reduce) GroupedScripts(string collection, IReadOnlyList<RqlGroupKey> keys, IReadOnlyList<RqlAggregate> aggregates, string? each)
    {
        // Inside an element: the path after the array ('' for the element itself).
        string Read(string field) => each is not null && Within(field, each)
            ? field == each ? "e" : $"get(e, '{field[(each.Length + 1)..]}')"
            : $"get(d, '{field}')";
        var fields = string.Join(", ", keys.Select(k => $"'{k.Field}': {(k.Array ? $"whole({Read(k.Field)})" : $"key({Read(k.Field)})")}")
            .Concat(aggregates.Select(a => a.Field is { } f ? $"'{f}': num({Read(f)})" : $"'{RqlAggregate.CountName}': 1")));
        var body = each is not null
            ? $"var a = get(d, '{each[..^2]}'); return (Array.isArray(a) ? a : []).map(function (e) {{ return {{ {fields} }}; }});"
            : $"return {{ {fields} }};";
        var map = $"map('{collection}', function (d) {{ {AutoMaps.Get}function key(v) {{ return v === undefined ? null : v; }} " +
                  "function whole(v) { return v === undefined ? null : Array.isArray(v) ? v : [v]; } " +
                  "function num(v) { return typeof v === 'number' ? v : Array.isArray(v) ? v.reduce(function (n, x) { return n + (typeof x === 'number' ? x : 0); }, 0) : 0; } " +
                  $"{body} }})";
        var groupKey = keys.Count == 1 ? $"x['{keys[0].Field}']" : $"({{ {string.Join(", ", keys.Select(k => $"'{k.Field}': x['{k.Field}']"))} }})";
        string KeyOut(RqlGroupKey k) => keys.Count == 1 ? "g.key" : $"g.key['{k.Field}']";
        var outputs = keys.Select(k => $"'{k.Field}': {KeyOut(k)}")
            .Concat(aggregates.Select(a => $"'{a.Name}': g.values.reduce((n, v) => n + v['{a.Name}'], 0)"));
        return (map, $"groupBy(x => {groupKey}).aggregate(g => ({{ {string.Join(", ", outputs)} }}))");
    }

    /// <summary>An auto index of this version's map (an older one wrote null for a missing field) with every field, each indexed as asked.</summary>
    private static bool Covers(IndexDefinition d, IReadOnlySet<string> exact, IReadOnlySet<string> search, IReadOnlySet<string> vectors) =>
        d.Maps.Count == 1 && d.Reduce is null && d.Maps[0].Contains("/* auto v2 */", StringComparison.Ordinal) && exact.All(f => d.Maps[0].Contains($"'{f}': get(") && d.FieldOptions(f).Indexing == IndexFieldOptions.Exact)
        && search.All(f => d.Maps[0].Contains($"'{f}': get(") && d.FieldOptions(f).Indexing == IndexFieldOptions.Search)
        && vectors.All(f => d.Maps[0].Contains($"'{f}': vec(get(") || d.Maps[0].Contains($"'{f}': emb(get("));

    private static void Collect(RqlExpression? e, ISet<string> exact, ISet<string> search)
    {
        // id() is every entry's own term: no field of the map.
        foreach (var (field, text) in RqlConditionFields.Of(e).Where(f => f.Field != RqlFields.Id))
            if (text)
            {
                search.Add(field);
                exact.Remove(field);
            }
            else if (!search.Contains(field)) exact.Add(field);
    }

    [GeneratedRegex("^[A-Za-z0-9_][A-Za-z0-9_.-]{0,60}$")]
    private static partial Regex CollectionPattern();

    [GeneratedRegex("^[A-Za-z_][A-Za-z0-9_]*(\\[\\])?(\\.[A-Za-z_][A-Za-z0-9_]*(\\[\\])?)*$")]
    private static partial Regex FieldPattern();
}
