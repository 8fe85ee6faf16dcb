using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using LuceneTermQuery = Magpie.Contracts.Search.TermQuery;

namespace Magpie.Query.Rql;

/// <summary>
/// Turns an RQL <c>where</c> into a Lucene query over the fields <see cref="EntryFields"/> wrote: strings
/// compare lower-cased on the field (case-sensitive on <c>F@cs</c> inside <c>exact()</c>), numbers on
/// <c>F@num</c>, ISO dates compare as dates on <c>F@ticks</c> for ranges, <c>null</c> is RavenDB's
/// <c>NULL_VALUE</c>; search fields go through the analyzer.
/// </summary>
/// <param name="numberFields">Fields the index holds numbers for (an <c>F@num</c> exists; read only when a range has a string): a range on one with a string that is
/// neither a number nor an ISO date is refused rather than answered with nothing; a numeric string (<c>'10'</c>) compares as the
/// number, as PostgreSQL coerces a literal to its column's type.</param>
/// <param name="embedders">Who embeds the text of <c>vector.search(embedding.text(…), $q)</c>: the built-in model, or a connection
/// named by <c>ai.task</c> (null: the built-in model only).</param>
public sealed class QueryPlanner(IndexDefinition definition, IReadOnlyDictionary<string, JsonElement>? parameters,
    Lazy<IReadOnlySet<string>>? numberFields = null, Embeddings.Connections.EmbeddingConnections? embedders = null)
{
    /// <summary>The fields <paramref name="fieldNames"/> (an index's) hold numbers for.</summary>
    public static IReadOnlySet<string> NumberFieldsOf(IEnumerable<string> fieldNames) =>
        fieldNames.Where(n => n.EndsWith(EntryFields.Number, StringComparison.Ordinal)).Select(n => n[..^EntryFields.Number.Length]).ToHashSet(StringComparer.Ordinal);

    public SearchQuery Where(RqlExpression? where)
    {
        if (where is null) return SearchQuery.All;
        // vector.search takes the k nearest among what the rest of the query matches: it is one of the conditions every result
        // meets (a conjunct), never under or/not, where "the k nearest" would have no set to be taken from.
        var conjuncts = RqlConditionFields.Conjuncts(where).ToList();
        if (conjuncts.OfType<RqlHybrid>().FirstOrDefault() is { } hybrid) return Hybrid(hybrid, conjuncts);
        var vectors = conjuncts.OfType<RqlVectorSearch>().ToList();
        if (Nested(where) is { } nested) throw new RqlException("vector.search is a condition every result meets: join it to the others with and, not under or or not", 1, nested.Position + 1);
        if (vectors.Count > 1) throw new RqlException("one vector.search per query", 1, vectors[1].Position + 1);
        if (vectors.Count == 0) return Plan(where);
        var rest = conjuncts.Where(c => c is not RqlVectorSearch).ToList();
        var filter = rest.Count == 0 ? SearchQuery.All : Plan(rest.Aggregate((a, b) => new RqlAnd(a, b)));
        return VectorSearch(vectors[0], filter);
    }


    /// <summary>The parameter the coordinator passes a hybrid query's fused scores in (id → score).</summary>
    public const string HybridScores = "@hybrid";

    /// <summary>
    /// <c>hybrid(…)</c> as an owner answers it: the entries of the ids the coordinator fused, each with its fused score (the two
    /// rankings were taken over every shard, with the rest of the query's conditions, through <see cref="RqlQuery.Retriever"/>).
    /// </summary>
    private SearchQuery Hybrid(RqlHybrid hybrid, List<RqlExpression> conjuncts)
    {
        if (conjuncts.Count(c => c is RqlHybrid or RqlVectorSearch) > 1) throw new RqlException("one hybrid(…) or vector.search per query", 1, hybrid.Position + 1);
        HybridOptions(hybrid);
        if (parameters?.GetValueOrDefault(HybridScores) is not { ValueKind: JsonValueKind.Object } fused)
            throw new RqlException("hybrid(…) is answered through the query coordinator, which fuses the rankings of every shard first", 1, hybrid.Position + 1);
        return new ScoredIdsQuery(fused.EnumerateObject().ToDictionary(p => p.Name, p => p.Value.GetSingle(), StringComparer.Ordinal));
    }

    /// <summary>A hybrid query's rank constant (Elasticsearch's default 60) and each ranking's window (the top taken of each; 100, at most 1,024).</summary>
    public (int RankConstant, int Window) HybridOptions(RqlHybrid hybrid)
    {
        var (rankConstant, window) = (60, 100);
        if (hybrid.Options is { } given)
            foreach (var option in Options(given, "hybrid").EnumerateObject())
                switch (option.Name.ToLowerInvariant())
                {
                    case "rankconstant" when Whole(option.Value, out var c) && c is >= 1 and <= 10_000: rankConstant = c; break;
                    case "window" when Whole(option.Value, out var w) && w is >= 1 and <= VectorSearchQuery.MaxK: window = w; break;
                    case "rankconstant": throw Bad(given, "hybrid's RankConstant must be a whole number from 1 to 10,000");
                    case "window": throw Bad(given, $"hybrid's Window must be a whole number from 1 to {VectorSearchQuery.MaxK:N0}");
                    default: throw Bad(given, $"hybrid's options are RankConstant and Window, not '{option.Name}'");
                }
        return (rankConstant, window);
    }

    /// <summary>A vector.search under an or, a not or a boost (not a conjunct of the whole condition).</summary>
    private static RqlVectorSearch? Nested(RqlExpression e, bool under = false) => e switch
    {
        RqlVectorSearch v => under ? v : null,
        RqlAnd a => Nested(a.Left, under) ?? Nested(a.Right, under),
        RqlOr o => Nested(o.Left, true) ?? Nested(o.Right, true),
        RqlNot n => Nested(n.Inner, true),
        RqlBoost b => Nested(b.Inner, true),
        _ => null,
    };

    /// <summary>The parameter the coordinator passes a sharded vector.search's global k-th similarity in.</summary>
    public const string VectorThreshold = "@vectorThreshold";

    /// <summary>RavenDB's default threshold of <c>vector.search</c> (cosine) and its default number of candidates.</summary>
    public const float DefaultMinimumSimilarity = 0.75f;
    public const int DefaultK = 16;

    /// <summary>A vector.search's k: how many nearest it answers (<see cref="DefaultK"/> when not given).</summary>
    public int K(RqlVectorSearch v) => v.K is { } kv ? WholeNumber(kv, "vector.search's k", 1, VectorSearchQuery.MaxK) : DefaultK;

    /// <summary>
    /// The index field a vector.search searches. <c>embedding.text(Title)</c>: an automatic index holds the model's vectors in
    /// <c>Title_embedding</c>; a static index in the field its map filled with <c>createVector(embedding.text(…))</c>.
    /// </summary>
    public string VectorField(RqlVectorSearch v)
    {
        var field = NotId(v.Field, "vector.search");
        return v.Embedding is not null && v.EmbeddingField is var embedded && definition.Fields.ContainsKey(embedded) ? embedded : field;
    }

    private SearchQuery VectorSearch(RqlVectorSearch v, SearchQuery filter)
    {
        var at = new RqlValue(null, Position: v.Position);
        var field = VectorField(v);
        var similarity = VectorSimilarity.Cosine;
        if (v.Options is { } given)
            foreach (var option in Options(given, "vector.search").EnumerateObject())
                similarity = option.Name.Equals("Similarity", StringComparison.OrdinalIgnoreCase) && option.Value.ValueKind == JsonValueKind.String
                    ? option.Value.GetString()!.ToLowerInvariant() switch
                    {
                        "cosine" => VectorSimilarity.Cosine,
                        "dot" or "dotproduct" => VectorSimilarity.DotProduct,
                        "euclidean" or "l2" => VectorSimilarity.Euclidean,
                        _ => throw Bad(given, "vector.search's Similarity is \"cosine\", \"dot\" or \"euclidean\""),
                    }
                    : throw Bad(given, $"vector.search's option is Similarity (\"cosine\", \"dot\" or \"euclidean\"), not '{option.Name}'");
        var minimum = v.MinimumSimilarity is { } m
            ? (float)Number(m, "vector.search's minimum similarity", similarity == VectorSimilarity.Cosine ? -1 : similarity == VectorSimilarity.Euclidean ? 0 : -1e30, similarity == VectorSimilarity.DotProduct ? 1e30 : 1)
            : similarity == VectorSimilarity.Cosine ? DefaultMinimumSimilarity : float.NegativeInfinity;
        var k = K(v);
        var quantization = definition.FieldOptions(field).Vector?.Compared() ?? VectorQuantization.None;
        if (quantization == VectorQuantization.Binary && similarity != VectorSimilarity.Cosine)
            throw Bad(v.Options!, $"the field '{field}' holds binary vectors: they are compared by the bits that differ (RavenDB's score for them), so Similarity does not apply");
        // Sharded: the coordinator's k-th best similarity over every shard (a shard keeps only what the global k nearest can hold).
        if (parameters?.GetValueOrDefault(VectorThreshold) is { ValueKind: JsonValueKind.Number } threshold) minimum = Math.Max(minimum, threshold.GetSingle());
        var vector = v.ForDocument ? DocumentVector(v) : v.Embedding is null ? VectorOf(v.Vector) : EmbeddingOf(v);
        // A document that does not exist, or holds no vector in the field, is like none.
        if (vector is null) return new BoolQuery([SearchQuery.All], [], [SearchQuery.All]);
        return new VectorSearchQuery(field, vector, minimum, k, similarity, quantization, filter)
        {
            Exact = v.Exact,
            Embedder = v.Embedding is not null && !v.ForDocument ? Embeddings.Embedders.Of(v.Connection) : null,
        };
    }

    /// <summary>
    /// Embeds the texts of the query's <c>vector.search(embedding.text(…), $q)</c>s ahead of planning, without holding a thread
    /// while a provider answers: planning then finds them in the cache. A provider that cannot answer throws
    /// <see cref="Embeddings.Connections.EmbeddingUnavailableException"/>, a refusal is the query's refusal; what is wrong with the
    /// query itself (a missing parameter, a value not text) is left for planning to say.
    /// </summary>
    public async Task EmbedTextsAsync(RqlExpression? where, CancellationToken ct)
    {
        foreach (var v in RqlConditionFields.Nodes(where).OfType<RqlVectorSearch>().Where(v => v.Embedding is not null && !v.ForDocument && parameters?.ContainsKey(v.Embedded) != true))
        {
            JsonElement text;
            try { text = JsonOf(v.Vector); }
            catch (RqlException) { continue; }
            if (text.ValueKind != JsonValueKind.String || v.Connection is not null && embedders is null) continue;
            try { await (embedders?.QueriesFor(v.Connection) ?? Embeddings.QueryEmbeddings.BuiltIn).VectorOfAsync(text.GetString()!, ct); }
            catch (Embeddings.Connections.EmbeddingRefusedException e) { throw Bad(v.Vector, e.Message); }
        }
    }

    /// <summary><c>embedding.forDoc($id)</c>'s vector, as the coordinator read it from whichever shard holds the document (null: none).</summary>
    private float[]? DocumentVector(RqlVectorSearch v)
    {
        Text(v.Vector, "embedding.forDoc's document id");
        if (parameters?.GetValueOrDefault(v.Resolved) is not { ValueKind: JsonValueKind.Array } vector)
            throw Bad(v.Vector, "embedding.forDoc is answered through the query coordinator, which reads the document's vector first");
        return vector.GetArrayLength() == 0 ? null : [.. vector.EnumerateArray().Select(x => x.GetSingle())];
    }

    /// <summary>
    /// The vector of each <c>vector.search(embedding.text(…), $q)</c>'s text, embedded (awaited) for the query coordinator to hand to
    /// every owner (<see cref="RqlVectorSearch.Embedded"/>): a query asks a provider once, however many processes hold its shards.
    /// </summary>
    public async Task<Dictionary<string, float[]>> QueryVectorsAsync(RqlExpression? where, CancellationToken ct)
    {
        await EmbedTextsAsync(where, ct);
        return RqlConditionFields.Nodes(where).OfType<RqlVectorSearch>().Where(v => v.Embedding is not null && !v.ForDocument)
            .ToDictionary(v => v.Embedded, EmbeddingOf);
    }

    /// <summary>The vector of the query's text as the coordinator embedded it, when it did.</summary>
    private float[]? Coordinated(RqlVectorSearch v) =>
        parameters?.GetValueOrDefault(v.Embedded) is { ValueKind: JsonValueKind.Array } given ? [.. given.EnumerateArray().Select(x => x.GetSingle())] : null;

    /// <summary>
    /// The vector the built-in model (or the connection) makes of the query's text (made once per distinct text, then cached), or the
    /// one the coordinator made. A provider that cannot answer now throws <see cref="Embeddings.Connections.EmbeddingUnavailableException"/> (503).
    /// </summary>
    private float[] EmbeddingOf(RqlVectorSearch search)
    {
        if (Coordinated(search) is { } coordinated) return coordinated;
        var (v, connection) = (search.Vector, search.Connection);
        var json = JsonOf(v);
        if (json.ValueKind != JsonValueKind.String) throw Bad(v, "embedding.text searches for text: the query's value must be a string");
        if (connection is not null && embedders is null) throw Bad(v, $"embedding connections are not known here: ai.task('{connection}') can't embed the text");
        try
        {
            return (embedders?.QueriesFor(connection) ?? Embeddings.QueryEmbeddings.BuiltIn).VectorOfAsync(json.GetString()!, CancellationToken.None).GetAwaiter().GetResult()
                ?? throw Bad(v, "the text to search for is empty");
        }
        catch (Embeddings.Connections.EmbeddingRefusedException e) { throw Bad(v, e.Message); }
    }

    /// <summary>A vector.search's value as JSON: the parameter's, or the literal written in the query.</summary>
    private JsonElement JsonOf(RqlValue v) => v.IsParameter
        ? parameters is not null && parameters.TryGetValue(v.Parameter!, out var p) ? p : throw Bad(v, $"parameter ${v.Parameter} is not in \"parameters\"")
        : JsonSerializer.SerializeToElement(v.Literal);

    /// <summary>The query's vector: a JSON array of numbers, or base64 of little-endian float32s.</summary>
    private float[] VectorOf(RqlValue v)
    {
        var json = JsonOf(v);
        float[] vector;
        if (json.ValueKind == JsonValueKind.Array)
        {
            vector = new float[json.GetArrayLength()];
            var i = 0;
            foreach (var x in json.EnumerateArray())
                vector[i++] = x.ValueKind == JsonValueKind.Number && x.TryGetDouble(out var d) && float.IsFinite((float)d) ? (float)d : throw Bad(v, $"the query's vector holds something not a float32 number at {i}");
        }
        else if (json.ValueKind == JsonValueKind.String)
        {
            byte[] bytes;
            try { bytes = Convert.FromBase64String(json.GetString()!); }
            catch (FormatException) { throw Bad(v, "the query's vector is neither an array of numbers nor base64"); }
            if (bytes.Length % 4 != 0) throw Bad(v, "the query's base64 vector is not whole float32s");
            vector = System.Runtime.InteropServices.MemoryMarshal.Cast<byte, float>(bytes).ToArray();
            if (vector.Any(x => !float.IsFinite(x))) throw Bad(v, "the query's base64 vector holds a value that is not a finite number");
        }
        else throw Bad(v, "the query's vector is a JSON array of numbers or a base64 string (of little-endian float32s)");
        if (vector.Length is 0 or > VectorFieldOptions.MaxDimensions)
            throw Bad(v, $"the query's vector has {vector.Length:N0} dimensions: 1 to {VectorFieldOptions.MaxDimensions:N0}");
        return VectorFieldOptions.Unsearchable(vector) is { } problem ? throw Bad(v, $"the query's vector {problem}") : vector;
    }

    /// <summary>
    /// <c>highlight(F, length, count[, options])</c> with its sizes checked and its tags read. A static index highlights what it
    /// stores (<c>"store": true</c>): its fields are what its maps made, which the document's text at that name need not be.
    /// </summary>
    public HighlightSpec Highlight(RqlHighlight h, bool staticIndex)
    {
        var field = NotId(h.Field, "highlight");
        if (staticIndex && !definition.FieldOptions(field).Store)
            throw new RqlException($"highlight({field}) on a static index reads the text the index stores: give the field \"store\": true (\"fields\": {{ \"{field}\": {{ \"indexing\": \"search\", \"store\": true }} }})", 1, 1);
        var length = WholeNumber(h.Length, "highlight's fragment length", HighlightSpec.MinFragmentLength, HighlightSpec.MaxFragmentLength);
        var count = WholeNumber(h.Count, "highlight's fragment count", 1, HighlightSpec.MaxFragments);
        IReadOnlyList<string> pre = HighlightSpec.DefaultPreTags, post = HighlightSpec.DefaultPostTags;
        if (h.Options is { } at)
            foreach (var option in Options(at, "highlight").EnumerateObject())
            {
                if (option.NameEquals("PreTags") || option.Name.Equals("preTags", StringComparison.OrdinalIgnoreCase)) pre = Tags(option.Value, at, "PreTags");
                else if (option.Name.Equals("postTags", StringComparison.OrdinalIgnoreCase)) post = Tags(option.Value, at, "PostTags");
                else throw Bad(at, $"highlight's options are PreTags and PostTags, not '{option.Name}'");
            }
        return new HighlightSpec(field, length, count, pre, post);
    }

    /// <summary><c>suggest(F, 'word'[, options])</c>: the word (one, lower-cased as fields hold it) and RavenDB's options checked.</summary>
    public SuggestPlan Suggest(RqlSuggest s)
    {
        var field = NotId(s.Field, "suggest");
        var word = Text(s.Word, "suggest").Trim().ToLowerInvariant();
        if (word.Length is 0 or > SuggestSpec.MaxTermChars || word.Any(char.IsWhiteSpace))
            throw Bad(s.Word, $"suggest takes one word of 1 to {SuggestSpec.MaxTermChars} characters");
        var (pageSize, accuracy, maxEdits, distance, popularity) = (15, 0.5, 2, SuggestDistance.Levenshtein, true);
        if (s.Options is { } at)
            foreach (var option in Options(at, "suggest").EnumerateObject())
            {
                var value = option.Value;
                switch (option.Name.ToLowerInvariant())
                {
                    case "pagesize" when Whole(value, out var n) && n is >= 1 and <= MaxSuggestions: pageSize = n; break;
                    case "accuracy" when Number(value, out var a) && a is >= 0 and <= 1: accuracy = a; break;
                    case "maxedits" when Whole(value, out var e) && e is 1 or 2: maxEdits = e; break;
                    case "distance" when value.ValueKind == JsonValueKind.String && value.GetString() is "Default" or "Levenshtein" or "JaroWinkler":
                        distance = value.GetString() == "JaroWinkler" ? SuggestDistance.JaroWinkler : SuggestDistance.Levenshtein; break;
                    case "sortmode" when value.ValueKind == JsonValueKind.String && value.GetString() is "Popularity" or "None":
                        popularity = value.GetString() == "Popularity"; break;
                    case "pagesize" or "accuracy" or "maxedits" or "distance" or "sortmode":
                        throw Bad(at, $"suggest's {option.Name} must be " + option.Name.ToLowerInvariant() switch
                        {
                            "pagesize" => $"a whole number from 1 to {MaxSuggestions}",
                            "accuracy" => "a number from 0 to 1",
                            "maxedits" => "1 or 2",
                            "distance" => "\"Levenshtein\" (\"Default\") or \"JaroWinkler\" (NGram is not supported)",
                            _ => "\"Popularity\" or \"None\"",
                        });
                    default: throw Bad(at, $"suggest's options are PageSize, Accuracy, Distance, SortMode and MaxEdits, not '{option.Name}'");
                }
            }
        return new SuggestPlan(new SuggestSpec(field, word, maxEdits, (float)accuracy, distance), pageSize, popularity, s.Name);
    }

    /// <summary>An option's value as a whole number, false for any other kind of JSON (a string "10" is not one).</summary>
    private static bool Whole(JsonElement value, out int n)
    {
        n = 0;
        return value.ValueKind == JsonValueKind.Number && value.TryGetInt32(out n);
    }

    private static bool Number(JsonElement value, out double d)
    {
        d = 0;
        return value.ValueKind == JsonValueKind.Number && value.TryGetDouble(out d) && double.IsFinite(d);
    }

    /// <summary>Most suggestions one <c>suggest()</c> returns.</summary>
    public const int MaxSuggestions = 1_024;

    /// <summary>
    /// <c>moreLikeThis</c>: the document's text in each field (its own, which the coordinator read as the index holds it, or the one
    /// given) and RavenDB's options; the document itself is left out of its likes.
    /// </summary>
    private SearchQuery MoreLikeThis(RqlMoreLikeThis m)
    {
        var options = new MoreLikeThisOptions();
        var at = m.Options ?? m.Document ?? m.Id!;
        if (m.Options is { } given)
            foreach (var option in Options(given, "moreLikeThis").EnumerateObject())
            {
                int Whole(int min, int max) => QueryPlanner.Whole(option.Value, out var n) && n >= min && n <= max ? n
                    : throw Bad(given, $"moreLikeThis's {option.Name} must be a whole number from {min} to {max:N0}");
                options = option.Name.ToLowerInvariant() switch
                {
                    "fields" => options,
                    "minimumtermfrequency" => options with { MinimumTermFrequency = Whole(1, int.MaxValue) },
                    "minimumdocumentfrequency" => options with { MinimumDocumentFrequency = Whole(1, int.MaxValue) },
                    "maximumdocumentfrequency" => options with { MaximumDocumentFrequency = Whole(1, int.MaxValue) },
                    "maximumqueryterms" => options with { MaximumQueryTerms = Whole(1, MoreLikeThisOptions.MaxTerms) },
                    "minimumwordlength" => options with { MinimumWordLength = Whole(0, 255) },
                    "maximumwordlength" => options with { MaximumWordLength = Whole(0, 255) },
                    "maximumnumberoftokensparsed" => options with { MaximumNumberOfTokensParsed = Whole(1, 100_000) },
                    "boost" => options with { Boost = option.Value.ValueKind is JsonValueKind.True or JsonValueKind.False ? option.Value.GetBoolean() : throw Bad(given, "moreLikeThis's Boost is true or false") },
                    "boostfactor" => options with { BoostFactor = Number(option.Value, out var f) && f is > 0 and <= MaxBoost ? (float)f : throw Bad(given, $"moreLikeThis's BoostFactor must be a number above 0, at most {MaxBoost:N0}") },
                    _ => throw Bad(given, $"moreLikeThis's options are Fields, MinimumTermFrequency, MinimumDocumentFrequency, MaximumDocumentFrequency, MaximumQueryTerms, MinimumWordLength, MaximumWordLength, MaximumNumberOfTokensParsed, Boost and BoostFactor, not '{option.Name}'"),
                };
            }
        var fields = m.Fields.Count > 0 ? m.Fields : SearchFields();
        if (fields.Count == 0) throw Bad(at, "moreLikeThis compares the words of search fields: name them in its options' Fields");
        foreach (var field in fields)
            if (!IsSearch(field)) throw Bad(at, $"moreLikeThis compares the words of search fields; '{field}' is not one (\"indexing\": \"search\")");
        string? id = null;
        JsonElement document;
        if (m.Id is { } idValue)
        {
            id = Text(idValue, "moreLikeThis's id()");
            document = parameters is not null && parameters.TryGetValue(m.Resolved, out var own) ? own
                : throw Bad(idValue, "moreLikeThis(id() = …) is answered through the query coordinator, which reads the document first");
        }
        else document = Options(m.Document!, "moreLikeThis's document");
        var texts = fields.Distinct(StringComparer.Ordinal).ToDictionary(f => f,
            f => (IReadOnlyList<string>)DocumentPaths.Values(document, f).SelectMany(DocumentPaths.Texts).ToList(), StringComparer.Ordinal);
        SearchQuery like = new MoreLikeThisQuery(texts, options);
        return id is null ? like : new BoolQuery([like], [], [new IdQuery(id, IdMatch.Equal)]);
    }

    /// <summary>The definition's search fields (what moreLikeThis compares when its options name none).</summary>
    public IReadOnlyList<string> SearchFields() =>
        definition.Fields.Where(f => f.Value.Indexing == IndexFieldOptions.Search).Select(f => f.Key).Order(StringComparer.Ordinal).ToList();

    private static IReadOnlyList<string> Tags(JsonElement value, RqlValue at, string name)
    {
        var tags = value.ValueKind == JsonValueKind.Array ? value.EnumerateArray().ToList() : [value];
        if (tags.Count is 0 or > HighlightSpec.MaxTags || tags.Any(t => t.ValueKind != JsonValueKind.String || t.GetString()!.Length > HighlightSpec.MaxTagLength))
            throw Bad(at, $"{name} must be 1 to {HighlightSpec.MaxTags} strings of at most {HighlightSpec.MaxTagLength} characters");
        return tags.Select(t => t.GetString()!).ToList();
    }

    /// <summary>A function's options object: a <c>$parameter</c> holding one, a JSON string, or a <c>{ … }</c> written in the query.</summary>
    public JsonElement Options(RqlValue v, string function)
    {
        var value = v.IsParameter
            ? parameters is not null && parameters.TryGetValue(v.Parameter!, out var json) ? json : throw Bad(v, $"parameter ${v.Parameter} is not in \"parameters\"")
            : v.Literal switch
            {
                JsonElement e => e,
                string s => ParseJson(s, v, function),
                _ => throw Bad(v, $"{function}'s options must be a JSON object"),
            };
        if (value.ValueKind == JsonValueKind.String) value = ParseJson(value.GetString()!, v, function);
        return value.ValueKind == JsonValueKind.Object ? value : throw Bad(v, $"{function}'s options must be a JSON object");
    }

    private static JsonElement ParseJson(string text, RqlValue at, string function)
    {
        try { return JsonDocument.Parse(text).RootElement.Clone(); }
        catch (JsonException e) { throw Bad(at, $"{function}'s options are not JSON: {e.Message}"); }
    }

    private SearchQuery Plan(RqlExpression e) => e switch
    {
        RqlAnd a => And([.. Flat(Plan(a.Left), b => b.Must), .. Flat(Plan(a.Right), b => b.Must)]),
        RqlOr o => BoolQuery.Or([.. Flat(Plan(o.Left), b => b.Should), .. Flat(Plan(o.Right), b => b.Should)]),
        RqlNot n => BoolQuery.Not(Plan(n.Inner)),
        RqlCompare c => Compare(c),
        RqlBetween b => Range(b.Field, Resolve(b.Low), true, Resolve(b.High), true, b.Exact, b.Low, b.High),
        RqlIn { All: true } i => BoolQuery.And([.. InValues(i).Select(v => Equal(i.Field, v, i.Exact))]),
        RqlIn i => BoolQuery.Or([.. InValues(i).Select(v => Equal(i.Field, v, i.Exact))]),
        RqlStartsWith { Field: RqlFields.Id } s => new IdQuery(Text(s.Prefix, "startsWith"), IdMatch.Prefix),
        RqlEndsWith { Field: RqlFields.Id } s => new IdQuery(Text(s.Suffix, "endsWith"), IdMatch.Suffix),
        RqlStartsWith s => new PrefixQuery(Indexed(s.Field), Term(s.Field, Text(s.Prefix, "startsWith"))),
        RqlEndsWith s => new WildcardQuery(Indexed(s.Field), "*" + EscapeWildcards(Term(s.Field, Text(s.Suffix, "endsWith")))),
        RqlSearch s => new FullTextQuery(NotId(s.Field, "search"), Text(s.Terms, "search"), s.AllWords),
        RqlProximity p => new FullTextQuery(NotId(p.Search.Field, "proximity"), Text(p.Search.Terms, "search"), Proximity: WholeNumber(p.Distance, "proximity's distance", 0, MaxProximity)),
        RqlFuzzy f => Fuzzy(f),
        RqlBoost b => new Magpie.Contracts.Search.BoostQuery(Plan(b.Inner), (float)Number(b.Factor, "boost's factor", double.Epsilon, MaxBoost)),
        RqlRegex r => new RegexQuery(Indexed(r.Field), Text(r.Pattern, "regex")),
        RqlLucene l => new LuceneSyntaxQuery(NotId(l.Field, "lucene"), Text(l.Text, "lucene")),
        RqlExists x => Exists(x.Field),
        RqlMoreLikeThis m => MoreLikeThis(m),
        RqlVectorSearch v => throw new RqlException("vector.search is a condition every result meets: join it to the others with and, not under or or not", 1, v.Position + 1),
        RqlHybrid h => throw new RqlException("hybrid(…) is a condition every result meets: join it to the others with and, not under or or not", 1, h.Position + 1),
        RqlTrue => SearchQuery.All,
        _ => throw new ArgumentOutOfRangeException(nameof(e)),
    };

    /// <summary>
    /// The operands of a chain of one operator, as one clause list: <c>a or b or c</c> parses as <c>(a or b) or c</c>, and planned
    /// as written a 1,024-term <c>or</c> was a 1,023-deep nest of boolean queries (1–4 s on 100 documents; flat, as <c>in</c> is, ms).
    /// </summary>
    private static IEnumerable<SearchQuery> Flat(SearchQuery q, Func<BoolQuery, IReadOnlyList<SearchQuery>> clauses) =>
        q is BoolQuery b && clauses(b) is { Count: > 0 } same && b.Must.Count + b.Should.Count + b.MustNot.Count == same.Count ? same : [q];

    /// <summary>
    /// A conjunction, with <c>not (F = null)</c> beside a clause that matches only entries holding a value of F narrowed to "not
    /// F's null token": wherever that clause matches, F exists, so the "or missing" half of <c>F = null</c> cannot exclude
    /// anything there. Planned as written, that half is "every entry but those with F", which walked the whole index for each
    /// query (what SQL's comparisons ask: a time-grouped aggregate over 1M posts spent a sixth of its time in it).
    /// </summary>
    private static BoolQuery And(SearchQuery[] clauses)
    {
        for (var i = 0; i < clauses.Length; i++)
            if (NotNullField(clauses[i]) is { } field && clauses.Any(c => HoldsValueOf(c, field)))
                clauses[i] = BoolQuery.Not(new LuceneTermQuery(field, EntryFields.NullValue));
        return BoolQuery.And(clauses);
    }

    /// <summary>F, when <paramref name="q"/> is <c>not (F = null)</c> as <see cref="Equal"/> plans it.</summary>
    private static string? NotNullField(SearchQuery q) =>
        q is BoolQuery { Must.Count: 0, Should.Count: 0, MustNot: [BoolQuery { Must.Count: 0, MustNot.Count: 0, Should: [LuceneTermQuery { Value: EntryFields.NullValue } token, BoolQuery { Must.Count: 0, Should.Count: 0, MustNot: [var missing] }] }] }
        && missing is BoolQuery { Must.Count: 0, MustNot.Count: 0, Should: [ExistsQuery a, ExistsQuery b] }
        && a.Field == token.Field && b.Field == token.Field + EntryFields.Number ? token.Field : null;

    /// <summary>Whether <paramref name="q"/> matches only entries with a value of <paramref name="field"/>: its terms and ranges live on
    /// F, F@cs, F@num, F@long or F@ticks, written only for a value of F (EntryMapping), and every value of F marks F as existing.</summary>
    private static bool HoldsValueOf(SearchQuery q, string field)
    {
        var on = q switch
        {
            LuceneTermQuery t => t.Field,
            TermRangeQuery r => r.Field,
            LongRangeQuery r => r.Field,
            DoubleRangeQuery r => r.Field,
            _ => null,
        };
        return on is not null && (on == field || on == field + EntryFields.CaseSensitive || on == field + EntryFields.Number || on == field + EntryFields.Ticks
            || on == field + EntryFields.Integer);
    }

    /// <summary>Entries with any value (null too) for the field; numbers alone live on <c>F@num</c>.</summary>
    private static SearchQuery Exists(string field) => BoolQuery.Or(new ExistsQuery(field), new ExistsQuery(field + EntryFields.Number));

    public const int MaxProximity = 1_000;
    public const double MaxBoost = 1_000_000;

    /// <summary>The field a value is searched on: <c>id()</c> is the entry's id term.</summary>
    private static string Indexed(string field) => field == RqlFields.Id ? EntryFields.Id : field;

    /// <summary>A term as the field holds it: ids as written, other strings lower-cased.</summary>
    private static string Term(string field, string value) => field == RqlFields.Id ? value : value.ToLowerInvariant();

    private static string NotId(string field, string function) =>
        field != RqlFields.Id ? field : throw new RqlException($"{function}() searches text fields: id() is compared with =, in, startsWith or endsWith", 1, 1);

    private static string EscapeWildcards(string s) => s.Replace("\\", "\\\\").Replace("*", "\\*").Replace("?", "\\?");

    private SearchQuery Fuzzy(RqlFuzzy f)
    {
        var value = Text(f.Value, "fuzzy");
        if (IsSearch(f.Field) && value.AsSpan().IndexOfAny(' ', '\t', '\n') >= 0)
            throw Bad(f.Value, $"fuzzy() on the search field '{f.Field}' takes one word (search(Field, 'a~ b~') makes several fuzzy)");
        var factor = f.Factor is { } given ? Number(given, "fuzzy's factor", 0, 2) : 2;
        return new Magpie.Contracts.Search.FuzzyQuery(NotId(f.Field, "fuzzy"), value.ToLowerInvariant(), (float)factor);
    }

    private string Text(RqlValue v, string function) => Resolve(v) is string s ? s : throw Bad(v, $"{function} needs a string");

    private double Number(RqlValue v, string what, double min, double max) =>
        Resolve(v) is double d && d >= min && d <= max ? d : throw Bad(v, $"{what} must be a number from {min:G3} to {max:N0}");

    private int WholeNumber(RqlValue v, string what, int min, int max) =>
        Resolve(v) is double d && d == Math.Floor(d) && d >= min && d <= max ? (int)d : throw Bad(v, $"{what} must be a whole number from {min} to {max:N0}");

    private SearchQuery Compare(RqlCompare c)
    {
        var value = Resolve(c.Value);
        return c.Operator switch
        {
            "=" => Equal(c.Field, value, c.Exact),
            "!=" => BoolQuery.Not(Equal(c.Field, value, c.Exact)),
            "<" => Range(c.Field, null, false, value, false, c.Exact, c.Value, c.Value),
            "<=" => Range(c.Field, null, false, value, true, c.Exact, c.Value, c.Value),
            ">" => Range(c.Field, value, false, null, false, c.Exact, c.Value, c.Value),
            ">=" => Range(c.Field, value, true, null, false, c.Exact, c.Value, c.Value),
            _ => throw new ArgumentOutOfRangeException(nameof(c)),
        };
    }

    private SearchQuery Equal(string field, object? value, bool exact) => value switch
    {
        string id when field == RqlFields.Id => new IdQuery(id, IdMatch.Equal),
        _ when field == RqlFields.Id => throw new RqlException("id() is compared with a string", 1, 1),
        // RavenDB's null token, or no value at all: "= null" matches a field that is null or missing.
        null => BoolQuery.Or(new LuceneTermQuery(field, EntryFields.NullValue), BoolQuery.Not(Exists(field))),
        bool b => new LuceneTermQuery(field, b ? "true" : "false"),
        double d => new DoubleRangeQuery(field + EntryFields.Number, d, d),
        // Past 2^53 an integer is compared exactly, with the integers the index keeps exactly (no double equals one there).
        long l => new LongRangeQuery(field + EntryFields.Integer, l, l),
        string s when IsSearch(field) => new FullTextQuery(field, s),
        string s when exact => new LuceneTermQuery(field + EntryFields.CaseSensitive, s),
        string s => new LuceneTermQuery(field, s.ToLowerInvariant()),
        _ => throw new ArgumentOutOfRangeException(nameof(value)),
    };

    /// <summary>Numbers range over <c>F@num</c>; ISO dates over <c>F@ticks</c>; other strings in term order.</summary>
    /// <param name="lowAt">Where the low bound is written (errors point there), <paramref name="highAt"/> the high one.</param>
    private SearchQuery Range(string field, object? low, bool includeLow, object? high, bool includeHigh, bool exact, RqlValue lowAt, RqlValue highAt)
    {
        if (field == RqlFields.Id)
            return low is string or null && high is string or null ? new TermRangeQuery(EntryFields.Id, (string?)low, (string?)high, includeLow, includeHigh)
                : throw Bad(low is string ? highAt : lowAt, "id() is compared with a string");
        if ((low ?? high) is string && numberFields?.Value.Contains(field) == true) (low, high) = (AsNumber(field, low, lowAt), AsNumber(field, high, highAt));
        if (low is long || high is long)
            return low is long or double or null && high is long or double or null ? ExactRange(field, low, includeLow, high, includeHigh)
                : throw Bad(low is long ? highAt : lowAt, $"a range on '{field}' needs two numbers or two strings");
        if (low is double or null && high is double or null && (low ?? high) is double)
        {
            var lo = low is double l ? (includeLow ? l : Math.BitIncrement(l)) : double.NegativeInfinity;
            var hi = high is double h ? (includeHigh ? h : Math.BitDecrement(h)) : double.PositiveInfinity;
            return new DoubleRangeQuery(field + EntryFields.Number, lo, hi);
        }
        if (low is string or null && high is string or null && (low ?? high) is string)
        {
            long? loTicks = low is string ls ? EntryFields.TicksOf(ls) : null, hiTicks = high is string hs ? EntryFields.TicksOf(hs) : null;
            if ((low is null || loTicks is not null) && (high is null || hiTicks is not null))
                return new LongRangeQuery(field + EntryFields.Ticks,
                    loTicks is { } a ? (includeLow ? a : a + 1) : long.MinValue,
                    hiTicks is { } b ? (includeHigh ? b : b - 1) : long.MaxValue);
            var name = exact ? field + EntryFields.CaseSensitive : field;
            string? Case(object? v) => v is string s ? (exact ? s : s.ToLowerInvariant()) : null;
            return new TermRangeQuery(name, Case(low), Case(high), includeLow, includeHigh);
        }
        // The low bound sets the kind: the high one is the one that differs.
        throw Bad(low is null ? lowAt : highAt, $"a range on '{field}' needs two numbers or two strings");
    }

    /// <summary>
    /// A range with a bound that is an integer past 2^53 (a long): over <c>F@long</c> for the integers kept exactly there
    /// (2^53 ≤ |v| &lt; 2^63), and over <c>F@num</c> for the other numbers — those below 2^53 and past 2^63, which sit apart from
    /// the doubles of the kept integers (rounded toward zero, inside ±2^63), so the two parts never take a value wrongly.
    /// </summary>
    private static SearchQuery ExactRange(string field, object? low, bool includeLow, object? high, bool includeHigh)
    {
        const double Small = EntryFields.ExactIntegers.Limit - 1, Beyond = EntryFields.ExactIntegers.Beyond;
        // F@long's bounds (its values are integers): a double bound is below 2^53 or past 2^63.
        long loL = long.MinValue, hiL = long.MaxValue;
        var none = false;
        switch (low)
        {
            case long l when includeLow: loL = l; break;
            case long l: if (l == long.MaxValue) none = true; else loL = l + 1; break;
            case double d when d >= Beyond: none = true; break;
            case double d when d >= -Beyond: loL = (long)Math.Floor(d) + 1 - (includeLow && d == Math.Floor(d) ? 1 : 0); break;
        }
        switch (high)
        {
            case long h when includeHigh: hiL = h; break;
            case long h: if (h == long.MinValue) none = true; else hiL = h - 1; break;
            case double d when d < -Beyond: none = true; break;
            case double d when d < Beyond: hiL = (long)Math.Ceiling(d) - 1 + (includeHigh && d == Math.Ceiling(d) ? 1 : 0); break;
        }
        // F@num's bounds for the other numbers: a long bound stands at the edge of the ones below 2^53 or past 2^63.
        var loD = low switch
        {
            long l => l > 0 ? Beyond : -Small,
            double d => includeLow ? d : Math.BitIncrement(d),
            _ => double.NegativeInfinity,
        };
        var hiD = high switch
        {
            long h => h > 0 ? Small : Math.BitDecrement(-Beyond),
            double d => includeHigh ? d : Math.BitDecrement(d),
            _ => double.PositiveInfinity,
        };
        var exact = none || loL > hiL ? null : new LongRangeQuery(field + EntryFields.Integer, loL, hiL);
        var rest = new DoubleRangeQuery(field + EntryFields.Number, loD, hiD);
        return exact is null ? rest : BoolQuery.Or(exact, rest);
    }

    /// <summary>A string compared with a number field: a number if it reads as one, a date stays a date, anything else is refused.</summary>
    private static object? AsNumber(string field, object? value, RqlValue at) => value switch
    {
        string s when double.TryParse(s, System.Globalization.NumberStyles.Float, System.Globalization.CultureInfo.InvariantCulture, out var d) =>
            RqlNumbers.Exact(s, d, out var inexact) ?? throw Bad(at, inexact!),
        string s when EntryFields.TicksOf(s) is not null => s,
        string s => throw Bad(at, $"'{field}' holds numbers: compare it with a number, not '{(s.Length > 64 ? s[..64] + "…" : s)}'"),
        _ => value,
    };

    private bool IsSearch(string field) => definition.FieldOptions(field).Indexing == IndexFieldOptions.Search;

    /// <summary>
    /// The values of <c>in (…)</c> / <c>all in (…)</c>: a parameter holding an array gives each of its elements, as RavenDB's clients
    /// send <c>In()</c> and <c>ContainsAny()</c> (<c>where Tags in ($tags)</c>, <c>"tags": ["a", "b"]</c>).
    /// </summary>
    private List<object?> InValues(RqlIn i)
    {
        var values = new List<object?>();
        foreach (var v in i.Values)
        {
            if (v.IsParameter && parameters is not null && parameters.TryGetValue(v.Parameter!, out var json) && json.ValueKind == JsonValueKind.Array)
                foreach (var element in json.EnumerateArray()) values.Add(Resolve(v with { Parameter = null, Literal = Scalar(element, v) }));
            else values.Add(Resolve(v));
            if (values.Count > QueryLimits.MaxInValues) throw Bad(v, $"in (…) takes at most {QueryLimits.MaxInValues:N0} values, parameters' elements counted");
        }
        if (values.Count == 0) throw Bad(i.Values.Count > 0 ? i.Values[0] : new RqlValue(null), "in (…) needs at least one value: the array parameter is empty");
        return values;
    }

    private static object? Scalar(JsonElement json, RqlValue at) => json.ValueKind switch
    {
        JsonValueKind.String => json.GetString(),
        JsonValueKind.Number => RqlNumbers.Exact(json.GetRawText(), json.GetDouble(), out var inexact) ?? throw Bad(at, $"parameter ${at.Parameter}: {inexact}"),
        JsonValueKind.True => true,
        JsonValueKind.False => false,
        JsonValueKind.Null => null,
        _ => throw Bad(at, $"parameter ${at.Parameter}'s elements must be strings, numbers, booleans or null"),
    };

    /// <summary>A literal, or the parameter's JSON value (string, number, boolean, null).</summary>
    private object? Resolve(RqlValue v)
    {
        if (!v.IsParameter) return v.Literal;
        if (parameters is null || !parameters.TryGetValue(v.Parameter!, out var json)) throw Bad(v, $"parameter ${v.Parameter} is not in \"parameters\"");
        return json.ValueKind is JsonValueKind.Array or JsonValueKind.Object
            ? throw Bad(v, $"parameter ${v.Parameter} must be a string, number, boolean or null (an array goes in in (…) or all in (…))")
            : Scalar(json, v);
    }

    private static RqlException Bad(RqlValue v, string message) => new(message, 1, v.Position + 1);
}
