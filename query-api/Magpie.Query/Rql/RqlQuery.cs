namespace Magpie.Query.Rql;

/// <summary>A parsed RQL query: <c>from index 'Name' | from Collection [where …] [order by …] [select …] [limit n [offset m]]</c>.</summary>
public sealed record RqlQuery(RqlSource From, RqlExpression? Where, IReadOnlyList<RqlOrder> OrderBy, IReadOnlyList<RqlProjection> Select, int? Limit, int? Offset)
{
    /// <summary><c>from index 'Name' [where …]</c>, built rather than parsed (the SQL engine's queries).</summary>
    public static RqlQuery OfIndex(string index, RqlExpression? where = null) => new(new RqlSource(index, IsIndex: true), where, [], [], null, null);

    /// <summary>
    /// The query with <paramref name="seed"/> given to each <c>random()</c> written without one: the coordinator draws one seed per
    /// query, so every owner (and every page of a stream) sorts by the same draw.
    /// </summary>
    public RqlQuery Seeded(string? seed) => seed is null || !OrderBy.Any(o => o.IsRandom && o.Seed is null) ? this
        : this with { OrderBy = [.. OrderBy.Select(o => o.IsRandom && o.Seed is null ? o with { Seed = seed } : o)] };

    /// <summary><c>select suggest(Title, 'esspreso')</c>: indexed terms close to each word asked, and nothing else (no results).</summary>
    public IReadOnlyList<RqlSuggest> Suggestions { get; init; } = [];

    /// <summary>Facets to count over the matching entries: <c>select facet(…)</c>, and those of the request body's <c>facets</c>.</summary>
    public IReadOnlyList<RqlFacet> Facets { get; init; } = [];

    /// <summary><c>select facet(…)</c> and nothing else: the answer is the facets (and the total), no results.</summary>
    public bool FacetsOnly { get; init; }

    /// <summary><c>from Posts as p</c>: the name a JavaScript projection reads the document by.</summary>
    public string? Alias { get; init; }

    /// <summary><c>declare function f(x) { … }</c>: each function's text, callable from the projection.</summary>
    public IReadOnlyList<string> Functions { get; init; } = [];

    /// <summary><c>load p.OwnerUserId as u</c>: documents read from the store for each result, named for the projection.</summary>
    public IReadOnlyList<RqlLoad> Loads { get; init; } = [];

    /// <summary><c>select distinct …</c>: each result once (paging and totals count distinct results).</summary>
    public bool Distinct { get; init; }

    /// <summary><c>select { … }</c>: the JavaScript object literal each result becomes.</summary>
    public string? Script { get; init; }

    /// <summary><c>include ParentId</c>: documents the results refer to, returned once each beside the page.</summary>
    public IReadOnlyList<string> Includes { get; init; } = [];

    /// <summary><c>include timings()</c>: the stages' milliseconds beside the answer.</summary>
    public bool Timings { get; init; }

    /// <summary><c>include explanations()</c>: Lucene's score explanation of each hit.</summary>
    public bool Explanations { get; init; }

    /// <summary><c>include highlight(Body, 128, 2)</c>: fragments of each hit's text with the matched words marked.</summary>
    public IReadOnlyList<RqlHighlight> Highlights { get; init; } = [];

    /// <summary><c>group by F, array(G)</c> on a collection: the query runs on an automatic map/reduce index over these keys.</summary>
    public IReadOnlyList<RqlGroupKey> GroupBy { get; init; } = [];

    /// <summary>With <see cref="GroupBy"/>: the aggregates the select asks for (<c>count()</c>, <c>sum(F)</c>).</summary>
    public IReadOnlyList<RqlAggregate> Aggregates { get; init; } = [];

    /// <summary><c>update { … }</c>: the JavaScript each matching document is patched with (set-based: <c>POST /operations/queries</c>).</summary>
    public string? Update { get; init; }

    /// <summary><c>delete</c>: every matching document is deleted (set-based: <c>POST /operations/queries</c>).</summary>
    public bool Delete { get; init; }

    /// <summary>An update or a delete by query: the query's text before its <c>update</c> or <c>delete</c> (what finds the documents).</summary>
    public string? ReadText { get; init; }

    /// <summary>An update or a delete by query: an operation, not a read.</summary>
    public bool IsOperation => Update is not null || Delete;

    /// <summary>
    /// The query reduced to its hits' scores, best first, each result its id (the coordinator's first pass of a sharded
    /// <c>vector.search</c>, <see cref="Shards.ShardQuery.ScoresOnly"/>).
    /// </summary>
    public RqlQuery ScoresOnly() => this with
    {
        OrderBy = [new RqlOrder(null, Descending: true, null)], Select = [new RqlProjection(RqlFields.Id, "Id")], Script = null, Loads = [],
        Includes = [], Highlights = [], Facets = [], FacetsOnly = false, Distinct = false, Timings = false, Explanations = false, Limit = null, Offset = null,
    };

    /// <summary>The query with its <c>hybrid(…)</c> replaced by one of its rankings (0: the text one, 1: the vector one).</summary>
    public RqlQuery Retriever(int which) => this with { Where = Retriever(Where, which) };

    private static RqlExpression? Retriever(RqlExpression? e, int which) => e switch
    {
        RqlHybrid h => which == 0 ? h.Text : h.Vector,
        RqlAnd a => new RqlAnd(Retriever(a.Left, which)!, Retriever(a.Right, which)!),
        _ => e,
    };

    /// <summary>Whether results need their documents read from a document store (loads and includes).</summary>
    public bool ReadsRelatedDocuments => Loads.Count > 0 || Includes.Count > 0;
}

/// <summary>A key of a dynamic group by: a field, or <c>array(F)</c> — one group per element of the array F holds.</summary>
public sealed record RqlGroupKey(string Field, bool Array);

/// <summary>A dynamic aggregate: <c>count()</c> (<see cref="Field"/> null) or <c>sum(F)</c>; <see cref="Name"/> is the result field it fills.</summary>
public sealed record RqlAggregate(string? Field)
{
    public const string CountName = "Count";

    public string Name => Field ?? CountName;
}

/// <summary>
/// <c>highlight(Field, fragmentLength, fragmentCount[, options])</c>; options (a <c>$parameter</c>, a JSON string or a <c>{ … }</c>
/// object) give <c>PreTags</c> and <c>PostTags</c>.
/// </summary>
public sealed record RqlHighlight(string Field, RqlValue Length, RqlValue Count, RqlValue? Options);

/// <summary>
/// <c>suggest(Field, 'word'[, options]) [as Name]</c>; options (a <c>$parameter</c>, a JSON string or a <c>{ … }</c> object) give
/// <c>PageSize</c>, <c>Accuracy</c>, <c>Distance</c> and <c>SortMode</c> as RavenDB names them, and <c>MaxEdits</c>.
/// </summary>
public sealed record RqlSuggest(string Field, RqlValue Word, RqlValue? Options, string Name);

/// <summary><c>load Path as Alias</c>: the path holds an id (or an array of ids).</summary>
public sealed record RqlLoad(string Path, string Alias);

public sealed record RqlSource(string Name, bool IsIndex);

/// <summary>
/// <c>order by f [as long|double|string|alphanumeric] [asc|desc]</c>, <c>score()</c>, or <c>random([seed])</c> (<see cref="As"/>
/// "random", the seed in <see cref="Seed"/>: the same seed gives the same order).
/// </summary>
public sealed record RqlOrder(string? Field, bool Descending, string? As)
{
    public bool IsScore => Field is null && As is null;

    public bool IsRandom => As == RandomOrder;

    public string? Seed { get; init; }

    public const string RandomOrder = "random", Alphanumeric = "alphanumeric";
}

public sealed record RqlProjection(string Field, string Alias);

/// <summary>The fields a condition reads, each with whether it reads it as full text (search, proximity, lucene).</summary>
public static class RqlConditionFields
{
    /// <summary>Whether a condition ranks documents against each other (vector.search, moreLikeThis, hybrid) rather than matching each alone.</summary>
    public static bool Ranks(RqlExpression? e) => Nodes(e).Any(n => n is RqlVectorSearch or RqlMoreLikeThis or RqlHybrid);

    /// <summary>Every node of a condition, itself first, through and/or/not/boost and both rankings of a hybrid.</summary>
    public static IEnumerable<RqlExpression> Nodes(RqlExpression? e) => e switch
    {
        null => [],
        RqlAnd a => [a, .. Nodes(a.Left), .. Nodes(a.Right)],
        RqlOr o => [o, .. Nodes(o.Left), .. Nodes(o.Right)],
        RqlNot n => [n, .. Nodes(n.Inner)],
        RqlBoost b => [b, .. Nodes(b.Inner)],
        RqlHybrid h => [h, .. Nodes(h.Text), h.Vector],
        _ => [e],
    };

    /// <summary>The conditions every result meets: the operands of the top-level chain of <c>and</c>.</summary>
    public static IEnumerable<RqlExpression> Conjuncts(RqlExpression? e) => e switch
    {
        null => [],
        RqlAnd a => Conjuncts(a.Left).Concat(Conjuncts(a.Right)),
        _ => [e],
    };

    public static IEnumerable<(string Field, bool Text)> Of(RqlExpression? e) => e switch
    {
        null => [],
        RqlAnd a => Of(a.Left).Concat(Of(a.Right)),
        RqlOr o => Of(o.Left).Concat(Of(o.Right)),
        RqlNot n => Of(n.Inner),
        RqlBoost b => Of(b.Inner),
        RqlSearch s => [(s.Field, true)],
        RqlProximity p => [(p.Search.Field, true)],
        RqlLucene l => [(l.Field, true)],
        RqlCompare c => [(c.Field, false)],
        RqlBetween b => [(b.Field, false)],
        RqlIn i => [(i.Field, false)],
        RqlStartsWith s => [(s.Field, false)],
        RqlEndsWith s => [(s.Field, false)],
        RqlExists x => [(x.Field, false)],
        RqlMoreLikeThis m => m.Fields.Select(f => (f, true)),
        RqlVectorSearch v => [(v.Field, false)],
        RqlHybrid h => Of(h.Text).Concat(Of(h.Vector)),
        RqlFuzzy f => [(f.Field, false)],
        RqlRegex r => [(r.Field, false)],
        _ => throw new ArgumentOutOfRangeException(nameof(e), e.GetType().Name),
    };
}

/// <summary>Field names with a meaning of their own.</summary>
public static class RqlFields
{
    /// <summary><c>id()</c>: the document's id (as written; compared exactly).</summary>
    public const string Id = "id()";
}

public abstract record RqlExpression;

public sealed record RqlAnd(RqlExpression Left, RqlExpression Right) : RqlExpression;
public sealed record RqlOr(RqlExpression Left, RqlExpression Right) : RqlExpression;
public sealed record RqlNot(RqlExpression Inner) : RqlExpression;

/// <summary><c>where true</c>: every document. Only the parser sees it (it folds it away: true and X is X).</summary>
public sealed record RqlTrue : RqlExpression
{
    public static readonly RqlTrue Instance = new();
}

/// <summary><c>f = v</c>, <c>f != v</c>, <c>f &lt; v</c>, …; <see cref="Exact"/> inside <c>exact(…)</c>.</summary>
public sealed record RqlCompare(string Field, string Operator, RqlValue Value, bool Exact = false) : RqlExpression;
public sealed record RqlBetween(string Field, RqlValue Low, RqlValue High, bool Exact = false) : RqlExpression;
/// <summary><c>f in (…)</c>: any of the values; <c>f all in (…)</c> (<see cref="All"/>): every one of them (the field's values hold them all).</summary>
public sealed record RqlIn(string Field, IReadOnlyList<RqlValue> Values, bool Exact = false, bool All = false) : RqlExpression;
public sealed record RqlStartsWith(string Field, RqlValue Prefix) : RqlExpression;
/// <summary><c>search(F, 'text' [, and|or])</c>: the text in RavenDB's search syntax (<c>FullTextQuery</c>); <see cref="AllWords"/> with <c>and</c>.</summary>
public sealed record RqlSearch(string Field, RqlValue Terms, bool AllWords = false) : RqlExpression;

/// <summary><c>proximity(search(F, 'a b'), n)</c>: the words within n positions of each other.</summary>
public sealed record RqlProximity(RqlSearch Search, RqlValue Distance) : RqlExpression;

/// <summary><c>fuzzy(F = 'value', factor)</c>: terms within some edits of the value (factor: edits 1–2, or a similarity below 1).</summary>
public sealed record RqlFuzzy(string Field, RqlValue Value, RqlValue? Factor) : RqlExpression;

/// <summary><c>boost(expression, factor)</c>: the expression's scores multiplied.</summary>
public sealed record RqlBoost(RqlExpression Inner, RqlValue Factor) : RqlExpression;

public sealed record RqlEndsWith(string Field, RqlValue Suffix) : RqlExpression;

/// <summary><c>regex(F, 'pattern')</c>: a .NET regular expression over the field's terms.</summary>
public sealed record RqlRegex(string Field, RqlValue Pattern) : RqlExpression;

/// <summary><c>lucene(F, 'text')</c>: Lucene's query syntax with F as the default field.</summary>
public sealed record RqlLucene(string Field, RqlValue Text) : RqlExpression;
public sealed record RqlExists(string Field) : RqlExpression;

/// <summary>
/// <c>vector.search(Field, vector, minimumSimilarity, k[, options])</c> (RavenDB 7's): the k entries nearest the vector — a JSON array
/// of numbers or base64 of little-endian float32s, usually a <c>$parameter</c> — at least that similar; options give the
/// <c>Similarity</c> (<c>cosine</c>, <c>dot</c>, <c>euclidean</c>).
/// </summary>
/// <summary>
/// <c>hybrid(text condition, vector.search(…)[, options])</c>: both rankings fused by reciprocal rank fusion (options
/// <c>RankConstant</c>, default 60, and <c>Window</c>, each ranking's top taken, default 100).
/// </summary>
public sealed record RqlHybrid(RqlExpression Text, RqlVectorSearch Vector, RqlValue? Options, int Position) : RqlExpression;

public sealed record RqlVectorSearch(string Field, RqlValue Vector, RqlValue? MinimumSimilarity, RqlValue? K, RqlValue? Options, int Position) : RqlExpression
{
    /// <summary>RavenDB's forms of a field whose vectors the embedding model makes of its text.</summary>
    public static readonly string[] Embeddings = ["embedding.text", "embedding.text_i8", "embedding.text_i1"];

    /// <summary><c>embedding.text</c> (or a quantized form) when the field is written <c>embedding.text(Field)</c>: the value is text to embed.</summary>
    public string? Embedding { get; init; }

    /// <summary><c>exact(vector.search(…))</c>: compare every vector rather than walk the nearest-neighbour graph.</summary>
    public bool Exact { get; init; }

    /// <summary>
    /// <c>vector.search(Field, embedding.forDoc($id))</c>: <see cref="Vector"/> is a document id, and the vector searched for is the one
    /// the index holds for that document in the field (RavenDB's "documents like this one"; the document itself is among them).
    /// </summary>
    public bool ForDocument { get; init; }

    /// <summary>This vector.search's place among the query's, from 0.</summary>
    public int Number { get; init; }

    /// <summary>The parameter the coordinator puts the vector of <c>embedding.forDoc</c>'s document in (empty: it has none), for every owner to plan with.</summary>
    public string Resolved => $"@forDoc{Number}";

    /// <summary>The parameter the coordinator puts the vector of the query's text in (<c>embedding.text</c>), for every owner to plan with.</summary>
    public string Embedded => $"@embedded{Number}";

    /// <summary><c>embedding.text(Field, ai.task('name'))</c>: the embedding connection that makes the vectors (null: the built-in model).</summary>
    public string? Connection { get; init; }

    public const string EmbeddingSuffix = "_embedding", Int8Suffix = "_embedding_i8", BinarySuffix = "_embedding_i1", ConnectionInfix = "_by_";

    /// <summary>
    /// The automatic index's field holding the embedding model's vectors of <c>embedding.text(Field)</c>: <c>Field_embedding</c>
    /// (<c>Field_embedding_i8</c> held as int8, <c>Field_embedding_i1</c> as bits; <c>…_by_name</c> made by the connection <c>name</c>).
    /// </summary>
    public string EmbeddingField => Field + Embedding switch { "embedding.text_i8" => Int8Suffix, "embedding.text_i1" => BinarySuffix, _ => EmbeddingSuffix }
        + (Connection is null ? "" : ConnectionInfix + Connection);

    /// <summary>How the automatic index holds <see cref="EmbeddingField"/> (<see cref="Magpie.Contracts.Indexes.VectorFieldOptions.Quantization"/>).</summary>
    public string Quantization => Embedding switch
    {
        "embedding.text_i8" => Magpie.Contracts.Indexes.VectorFieldOptions.Int8,
        "embedding.text_i1" => Magpie.Contracts.Indexes.VectorFieldOptions.Binary,
        _ => Magpie.Contracts.Indexes.VectorFieldOptions.None,
    };
}

/// <summary>
/// <c>moreLikeThis(id() = 'posts/1'[, options])</c> (the document's own text, it left out of the results) or with the document given
/// (<see cref="Document"/>: JSON, field → text); <see cref="Number"/> counts the query's moreLikeThis clauses from 0.
/// </summary>
public sealed record RqlMoreLikeThis(RqlValue? Id, RqlValue? Document, RqlValue? Options, int Number) : RqlExpression
{
    /// <summary>The parameter the coordinator puts the document of <c>id() = …</c> in (its text as the index holds it), for every owner to plan with.</summary>
    public string Resolved => $"@moreLikeThis{Number}";

    /// <summary>The options' <c>Fields</c> (empty: every search field of a static index).</summary>
    public IReadOnlyList<string> Fields { get; init; } = [];
}

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
