using System.Text.Json;

namespace Magpie.Query.Rql;

/// <summary>
/// A recursive-descent parser for Magpie's RQL subset. Precedence: <c>or</c> &lt; <c>and</c> &lt; <c>not</c>;
/// keywords are case-insensitive; every error names what was expected and where.
/// </summary>
public sealed class RqlParser
{
    private readonly string _text;
    private readonly List<RqlToken> _tokens;
    private int _at, _depth, _clauses;

    private readonly IReadOnlyDictionary<string, System.Text.Json.JsonElement>? _parameters;

    private RqlParser(string text, IReadOnlyDictionary<string, System.Text.Json.JsonElement>? parameters)
    {
        _text = text;
        _parameters = parameters;
        _tokens = RqlLexer.Tokenize(text);
    }

    /// <param name="parameters">The query's parameters: facet options given as <c>$name</c> are read at parse time.</param>
    public static RqlQuery Parse(string text, IReadOnlyDictionary<string, System.Text.Json.JsonElement>? parameters = null)
    {
        if (string.IsNullOrWhiteSpace(text)) throw new RqlException("the query is empty; start with: from index 'Name' or from Collection", 1, 1);
        if (text.Length > QueryLimits.MaxQueryChars) throw new RqlException(QueryLimits.TooLong(text.Length), 1, 1);
        return new RqlParser(text, parameters).Query();
    }

    /// <summary>A condition on its own (a range of a facet given in the request body's <c>facets</c>).</summary>
    public static RqlExpression ParseCondition(string text)
    {
        if (string.IsNullOrWhiteSpace(text)) throw new RqlException("the range is empty", 1, 1);
        if (text.Length > QueryLimits.MaxQueryChars) throw new RqlException(QueryLimits.TooLong(text.Length), 1, 1);
        var parser = new RqlParser(text, null);
        var e = parser.Or();
        if (parser.Current.Kind != RqlTokenKind.End) throw parser.Expected("the end of the range");
        return e;
    }

    private RqlToken Current => _tokens[_at];

    /// <summary>The token after <see cref="Current"/>; at the end, the end token again (a query may stop anywhere).</summary>
    private RqlToken Next => _tokens[Math.Min(_at + 1, _tokens.Count - 1)];

    private RqlQuery Query()
    {
        var functions = new List<string>();
        // declare, group, load, include and distinct are keywords only where their clause can start: fields may bear those names.
        while (Current.Is("declare") && Next.Is("function")) functions.Add(Declared());
        Expect("from");
        RqlSource source;
        if (Current.Is("index"))
        {
            _at++;
            var name = Current.Kind is RqlTokenKind.String or RqlTokenKind.Identifier ? (string)(Current.Value ?? Current.Text) : throw Expected("an index name: from index 'Name'");
            _at++;
            source = new RqlSource(name, IsIndex: true);
        }
        else if (Current.Kind == RqlTokenKind.Identifier && !IsKeyword(Current)) { source = new RqlSource(Current.Text, IsIndex: false); _at++; }
        // from "Orders" / from 'Orders': a quoted collection name, as RavenDB clients write it.
        else if (Current.Kind == RqlTokenKind.String) { source = new RqlSource((string)Current.Value!, IsIndex: false); _at++; }
        else throw Expected("index 'Name' or a collection name");
        _fromIndex = source.IsIndex;
        string? alias = null;
        if (Current.Is("as")) { _at++; alias = _alias = Name("an alias after 'as' (from Posts as p)"); }
        var groupBy = new List<RqlGroupKey>();
        if (Current.Is("group") && Next.Is("by"))
        {
            if (source.IsIndex) throw RqlLexer.Error(_text, Current.Position, "group by runs on a collection (an automatic map/reduce index): from Posts group by OwnerUserId; a static index groups in its reduce");
            _at++;
            Expect("by");
            do
            {
                if (Current.Is("array") && Next.IsSymbol("("))
                {
                    _at += 2;
                    groupBy.Add(new RqlGroupKey(WithoutAlias(Field(), alias), Array: true));
                    Expect(")");
                }
                else groupBy.Add(new RqlGroupKey(WithoutAlias(Field(), alias), Array: false));
            } while (Accept(","));
            _aggregates = [];
        }
        var aggregates = _aggregates ?? [];

        RqlExpression? where = null;
        if (Current.Is("where"))
        {
            _at++;
            where = Or();
            if (where is RqlTrue) where = null;
        }
        var orderBy = new List<RqlOrder>();
        if (Current.Is("order"))
        {
            _at++;
            Expect("by");
            do orderBy.Add(Order()); while (Accept(","));
        }
        var loads = new List<RqlLoad>();
        if (Current.Is("load"))
        {
            _at++;
            do
            {
                var path = WithoutAlias(Field(), alias);
                Expect("as");
                var name = Name("a name for the loaded document (load p.OwnerUserId as u)");
                if (name == alias || loads.Any(l => l.Alias == name)) throw RqlLexer.Error(_text, _tokens[_at - 1].Position, $"'{name}' names two things in this query");
                if (loads.Count == QueryLimits.MaxLoads) throw RqlLexer.Error(_text, _tokens[_at - 1].Position, $"at most {QueryLimits.MaxLoads} loads in a query");
                loads.Add(new RqlLoad(path, name));
            } while (Accept(","));
        }
        // update { … } and delete end a query (set-based operations); they are keywords only there.
        string? update = null;
        var delete = false;
        var operationAt = Current.Position;
        if (Current.Is("update") && Next.Kind == RqlTokenKind.Script)
        {
            _at++;
            update = Current.Text;
            _at++;
        }
        else if (Current.Is("delete") && Next.Kind == RqlTokenKind.End) { _at++; delete = true; }
        if (update is not null || delete)
        {
            if (Current.Kind != RqlTokenKind.End) throw Expected("the end of the query after " + (delete ? "delete" : "update { … }"));
            if (orderBy.Count > 0 || loads.Count > 0) throw RqlLexer.Error(_text, 0, "update and delete by query take from, where and declared functions; not order by or load");
            if (groupBy.Count > 0) throw RqlLexer.Error(_text, 0, "update and delete by query run on documents, not on groups");
            return new RqlQuery(source, where, orderBy, [], null, null)
            {
                Alias = alias, Functions = functions, Update = update, Delete = delete, ReadText = _text[..operationAt],
            };
        }
        var select = new List<RqlProjection>();
        var facets = new List<RqlFacet>();
        var suggestions = new List<RqlSuggest>();
        string? script = null;
        var distinct = false;
        if (Current.Is("select"))
        {
            _at++;
            if (Current.Is("distinct") && Next.Kind is RqlTokenKind.Identifier or RqlTokenKind.String or RqlTokenKind.Script) { _at++; distinct = true; }
            if (Current.Kind == RqlTokenKind.Script)
            {
                if (alias is null) throw RqlLexer.Error(_text, Current.Position, "a JavaScript projection reads the document by its alias: from Posts as p select { Title: p.Title }");
                script = Current.Text;
                _at++;
            }
            // select output(o): a declared function called with the query's names, RavenDB's other way to write a JavaScript projection.
            else if (Current.Kind == RqlTokenKind.Identifier && Next.IsSymbol("(") && _declared.Contains(Current.Text))
            {
                if (alias is null) throw RqlLexer.Error(_text, Current.Position, "a JavaScript projection reads the document by its alias: from Orders as o select output(o)");
                script = Call();
            }
            else do
            {
                if (groupBy.Count > 0) { select.Add(Grouped(groupBy, alias)); continue; }
                if (Current.Is("facet") && Next.IsSymbol("(")) { facets.Add(Facet()); continue; }
                if (Current.Is("suggest") && Next.IsSymbol("("))
                {
                    if (suggestions.Count == QueryLimits.MaxSuggestions) throw RqlLexer.Error(_text, Current.Position, $"at most {QueryLimits.MaxSuggestions} suggest() in a query");
                    _at += 2;
                    var suggested = WithoutAlias(Field(), alias);
                    var word = AfterComma();
                    var options = Accept(",") ? Options() : null;
                    Expect(")");
                    var name = suggested;
                    if (Current.Is("as")) { _at++; name = Field(); }
                    suggestions.Add(new RqlSuggest(suggested, word, options, name));
                    continue;
                }
                var field = WithoutAlias(Field(), alias);
                var fieldAlias = field;
                if (Current.Is("as")) { _at++; fieldAlias = Field(); }
                select.Add(new RqlProjection(field, fieldAlias));
            } while (Accept(","));
            if (distinct && (facets.Count > 0 || select.Count == 0 && script is null)) throw Expected("fields or { … } after select distinct");
            if (facets.Count > 0 && select.Count > 0)
                throw RqlLexer.Error(_text, _tokens[_at - 1].Position, "select either facet(…) or fields, not both (the request body's \"facets\" come beside results)");
            if (suggestions.Count > 0 && (select.Count > 0 || facets.Count > 0 || where is not null || orderBy.Count > 0 || distinct))
                throw RqlLexer.Error(_text, 0, "suggest() asks the index's terms, not its entries: from index 'X' select suggest(Field, 'word'), with no where, order by, fields or facets");
        }
        else if (functions.Count > 0 || loads.Count > 0) throw Expected("select { … } or update { … }: declared functions and loads are for JavaScript");
        var includes = new List<string>();
        var highlights = new List<RqlHighlight>();
        bool timings = false, explanations = false;
        if (Current.Is("include"))
        {
            _at++;
            do
            {
                if (Current.Is("timings") && Next.IsSymbol("(")) { _at += 2; Expect(")"); timings = true; }
                else if (Current.Is("explanations") && Next.IsSymbol("(")) { _at += 2; Expect(")"); explanations = true; }
                else if (Current.Is("highlight") && Next.IsSymbol("("))
                {
                    if (highlights.Count == QueryLimits.MaxHighlights) throw RqlLexer.Error(_text, Current.Position, $"at most {QueryLimits.MaxHighlights} highlights in a query");
                    _at += 2;
                    var field = WithoutAlias(Field(), alias);
                    var length = AfterComma();
                    var count = AfterComma();
                    var options = Accept(",") ? Options() : null;
                    Expect(")");
                    highlights.Add(new RqlHighlight(field, length, count, options));
                }
                else
                {
                    if (includes.Count == QueryLimits.MaxIncludePaths) throw RqlLexer.Error(_text, Current.Position, $"at most {QueryLimits.MaxIncludePaths} include paths in a query");
                    includes.Add(WithoutAlias(Field(), alias));
                }
            } while (Accept(","));
        }
        int? limit = null, offset = null;
        if (Current.Is("limit"))
        {
            _at++;
            limit = Count("limit");
            if (Current.Is("offset")) { _at++; offset = Count("offset"); }
            else if (Accept(",")) { offset = limit; limit = Count("limit"); }   // limit m, n (offset, count)
        }
        if (Current.Kind != RqlTokenKind.End) throw Expected("where, order by, load, select, include, limit, update, delete or the end of the query");
        // Fields of loaded documents (load o.Company as c select c.Name) are read by the JavaScript projection they stand for.
        if (loads.Count > 0 && script is null && select.Count > 0)
        {
            alias ??= LoadsDocument;
            script = LoadProjection(select, loads, alias);
            select = [];
        }
        // Documents like another come most alike first, as RavenDB answers them, unless the query orders them itself.
        if (orderBy.Count == 0 && _moreLikeThis + _vectorSearches > 0) orderBy.Add(new RqlOrder(null, Descending: true, null));
        return new RqlQuery(source, where, orderBy, select, limit, offset)
        {
            Facets = facets, FacetsOnly = facets.Count > 0, Suggestions = suggestions, Alias = alias, Functions = functions, Loads = loads, Script = script,
            Includes = includes, Highlights = highlights, Timings = timings, Explanations = explanations, GroupBy = groupBy, Aggregates = aggregates, Distinct = distinct,
        };
    }

    /// <summary>
    /// One item of a grouped select: <c>key()</c> (the one key), a key field, <c>count()</c> or <c>sum(F)</c>, each with an optional
    /// alias; each names a field of the automatic map/reduce index's results.
    /// </summary>
    private RqlProjection Grouped(List<RqlGroupKey> keys, string? alias)
    {
        var at = Current.Position;
        string field;
        if (Current.Is("key") && Next.IsSymbol("("))
        {
            _at += 2;
            if (keys.Count != 1) throw RqlLexer.Error(_text, at, "key() names the one group key: with several, select them by name");
            field = keys[0].Field;
            Expect(")");
        }
        // count() and sum(F) name their result fields as in where and order by (Field adds them; the plan refuses a summed key).
        else if (IsAggregate()) field = Field();
        else
        {
            field = WithoutAlias(Field(), alias);
            if (!keys.Any(k => k.Field == field))
                throw RqlLexer.Error(_text, at, $"a grouped query selects its keys, key(), count() and sum(…): '{field}' is none of them");
        }
        var name = field;
        if (Current.Is("as")) { _at++; name = Field(); }
        return new RqlProjection(field, name);
    }

    /// <summary><c>declare function name(a, b) { … }</c>: its text from <c>function</c> on.</summary>
    private string Declared()
    {
        _at++;
        var start = Current.Position;
        Expect("function");
        _declared.Add(Name("a function name (declare function name(x) { … })"));
        Expect("(");
        if (!Current.IsSymbol(")"))
            do Name("a parameter name"); while (Accept(","));
        Expect(")");
        if (Current.Kind != RqlTokenKind.Script) throw Expected("the function's body { … }");
        var end = Current.Position + Current.Text.Length;
        _at++;
        return _text[start..end];
    }

    private readonly HashSet<string> _declared = new(StringComparer.Ordinal);

    /// <summary><c>count()</c> or <c>sum(F)</c> where a grouped query's where or order by names a field.</summary>
    private bool IsAggregate() =>
        _aggregates is not null && Current.Kind == RqlTokenKind.Identifier && Next.IsSymbol("(") && Current.Text.ToLowerInvariant() is "count" or "sum";

    /// <summary><c>output(o, u)</c>: a declared function's call, its arguments names of the query (its alias and loads), as JavaScript text.</summary>
    private string Call()
    {
        var start = Current.Position;
        _at++;
        Expect("(");
        if (!Current.IsSymbol(")"))
            do Name("a name of the query (its alias or a load's) as the function's argument"); while (Accept(","));
        if (!Current.IsSymbol(")")) throw Expected("')' after the function's arguments");
        var end = Current.Position + 1;
        _at++;
        return _text[start..end];
    }

    /// <summary>A plain name (an alias, a function or parameter name): an identifier that is not a keyword and holds no path.</summary>
    private string Name(string what)
    {
        if (Current.Kind == RqlTokenKind.Identifier && !IsKeyword(Current) && Current.Text.All(c => char.IsLetterOrDigit(c) || c is '_' or '$'))
            return _tokens[_at++].Text;
        throw Expected(what);
    }

    /// <summary>A path written from the query's alias (<c>p.Title</c>) is the document's path (<c>Title</c>).</summary>
    private static string WithoutAlias(string path, string? alias) =>
        alias is not null && path.StartsWith(alias + ".", StringComparison.Ordinal) ? path[(alias.Length + 1)..] : path;

    private RqlOrder Order()
    {
        if (Current.Is("score") && Next.IsSymbol("("))
        {
            _at++;
            Expect("(");
            Expect(")");
            var byScoreDescending = true;   // best matches first unless asc is given
            if (Current.Is("asc") || Current.Is("ascending")) { byScoreDescending = false; _at++; }
            else if (Current.Is("desc") || Current.Is("descending")) _at++;
            return new RqlOrder(null, byScoreDescending, null);
        }
        if (Current.Is("random") && Next.IsSymbol("("))
        {
            _at += 2;
            string? seed = null;
            if (!Current.IsSymbol(")")) seed = Seed();
            Expect(")");
            // Without a seed each query draws its own order (as RavenDB's, Seeded): page through one draw by giving a seed.
            return new RqlOrder(null, Descending: false, RqlOrder.RandomOrder) { Seed = seed };
        }
        var field = Field();
        string? type = null;
        if (Current.Is("as"))
        {
            _at++;
            type = Current.Kind == RqlTokenKind.Identifier && Current.Text.ToLowerInvariant() is "long" or "double" or "string" or RqlOrder.Alphanumeric
                ? Current.Text.ToLowerInvariant() : throw Expected("long, double, string or alphanumeric after 'as'");
            _at++;
        }
        var descending = false;
        if (Current.Is("desc") || Current.Is("descending")) { descending = true; _at++; }
        else if (Current.Is("asc") || Current.Is("ascending")) _at++;
        return new RqlOrder(field, descending, type);
    }

    /// <summary>
    /// <c>facet(args) [as Name]</c>; each argument is a field (one, for a term facet), a range condition, an aggregation
    /// <c>sum|min|max|avg(F)</c>, or a <c>$parameter</c> holding options (<see cref="FacetOptions"/>).
    /// </summary>
    private RqlFacet Facet()
    {
        var at = Current.Position;
        _at += 2;
        string? field = null;
        var ranges = new List<RqlRange>();
        var aggregations = new List<RqlAggregation>();
        var options = new FacetOptions();
        do
        {
            var t = Current;
            var next = Next;
            if (t.Kind == RqlTokenKind.Parameter)
            {
                _at++;
                options = FacetOptions.FromJson(ParameterValue((string)t.Value!, t.Position), m => RqlLexer.Error(_text, t.Position, m));
            }
            else if (t.Kind == RqlTokenKind.Identifier && next.IsSymbol("(") && RqlAggregation.Operations.Contains(t.Text.ToLowerInvariant()))
            {
                _at += 2;
                aggregations.Add(new RqlAggregation(t.Text.ToLowerInvariant(), Field()));
                Expect(")");
            }
            else if ((t.Kind == RqlTokenKind.Identifier && !IsKeyword(t) || t.Kind == RqlTokenKind.String) && (next.IsSymbol(",") || next.IsSymbol(")")))
            {
                if (field is not null) throw RqlLexer.Error(_text, t.Position, "a facet counts the values of one field (write one facet() per field)");
                field = Field();
            }
            else
            {
                var expression = And();
                ranges.Add(new RqlRange(_text[t.Position..Current.Position].Trim(), expression));
            }
        } while (Accept(","));
        Expect(")");
        if (field is null == (ranges.Count == 0))
            throw RqlLexer.Error(_text, at, "facet() takes a field (facet(Brand)) or ranges (facet(Price < 200, Price >= 200)), not both");
        var name = field ?? FirstField(ranges[0].Expression) ?? ranges[0].Label;
        if (Current.Is("as")) { _at++; name = Field(); }
        return new RqlFacet(name, field, ranges, aggregations, options);
    }

    private static string? FirstField(RqlExpression e) => RqlConditionFields.Of(e).Select(f => f.Field).FirstOrDefault();

    /// <summary>random()'s seed: a string, a number or a <c>$parameter</c> holding one (its text is the seed).</summary>
    private string Seed()
    {
        var t = Current;
        _at++;
        return t.Kind switch
        {
            RqlTokenKind.String => (string)t.Value!,
            RqlTokenKind.Number => t.Text,
            RqlTokenKind.Parameter => ParameterValue((string)t.Value!, t.Position) is var p && p.ValueKind is System.Text.Json.JsonValueKind.String or System.Text.Json.JsonValueKind.Number
                ? p.ValueKind == System.Text.Json.JsonValueKind.String ? p.GetString()! : p.GetRawText()
                : throw RqlLexer.Error(_text, t.Position, $"random()'s seed ${t.Value} is a {p.ValueKind}: give a string or a number"),
            _ => throw RqlLexer.Error(_text, t.Position, "random() takes a seed: a string, a number or a $parameter"),
        };
    }

    private System.Text.Json.JsonElement ParameterValue(string name, int position) =>
        _parameters is not null && _parameters.TryGetValue(name, out var value) ? value
            : throw RqlLexer.Error(_text, position, $"parameter ${name} is not in \"parameters\"");

    // `true` is a condition every document meets: RavenDB's clients write `where true and not …` for a query that starts with
    // a negation. It folds away here (true and X = X, true or X = true), so nothing past the parser ever sees it.
    private RqlExpression Or()
    {
        var left = And();
        while (Current.Is("or"))
        {
            _at++;
            var right = And();
            left = left is RqlTrue || right is RqlTrue ? RqlTrue.Instance : new RqlOr(left, right);
        }
        return left;
    }

    private RqlExpression And()
    {
        var left = Not();
        while (Current.Is("and"))
        {
            _at++;
            var right = Not();
            left = left is RqlTrue ? right : right is RqlTrue ? left : new RqlAnd(left, right);
        }
        return left;
    }

    private RqlExpression Not()
    {
        if (!Current.Is("not")) return Primary();
        var at = Current.Position;
        _at++;
        Enter();
        var inner = Not();
        _depth--;
        return inner is RqlTrue ? throw RqlLexer.Error(_text, at, "not true matches no document: leave the condition out") : new RqlNot(inner);
    }

    /// <summary>One level deeper (parentheses, not): refused past <see cref="QueryLimits.MaxNesting"/> before the recursion goes on.</summary>
    private void Enter()
    {
        if (++_depth > QueryLimits.MaxNesting) throw RqlLexer.Error(_text, Current.Position, QueryLimits.TooDeep);
    }

    private RqlExpression Primary()
    {
        if (Accept("("))
        {
            Enter();
            var inner = Or();
            Expect(")");
            _depth--;
            return inner;
        }
        if (++_clauses > QueryLimits.MaxClauses) throw RqlLexer.Error(_text, Current.Position, QueryLimits.TooManyClauses);
        if (Current.Is("true") && (Next.Kind == RqlTokenKind.End || Next.Is("and") || Next.Is("or") || Next.IsSymbol(")") || Next.Is("order")
            || Next.Is("select") || Next.Is("load") || Next.Is("include") || Next.Is("limit") || Next.Is("update") || Next.Is("delete")))
        {
            _at++;
            return RqlTrue.Instance;
        }
        if (Current.Kind == RqlTokenKind.Identifier && Next.IsSymbol("(") && !IsIdField() && !IsAggregate())
        {
            var function = Current.Text.ToLowerInvariant();
            var at = _at;
            _at += 2;
            RqlExpression result = function switch
            {
                "startswith" => new RqlStartsWith(Field(), AfterComma()),
                "endswith" => new RqlEndsWith(Field(), AfterComma()),
                "search" => Search(),
                "exists" => new RqlExists(Field()),
                "exact" when Current.Is("vector.search") && Next.IsSymbol("(") => ExactVectorSearch(),
                "exact" => Comparison(exact: true),
                "regex" => new RqlRegex(Field(), AfterComma()),
                "lucene" => new RqlLucene(Field(), AfterComma()),
                "fuzzy" => Fuzzy(),
                "proximity" => Proximity(),
                "boost" => Boost(),
                "morelikethis" => MoreLikeThis(),
                "vector.search" => VectorSearch(),
                "hybrid" => Hybrid(_tokens[at].Position),
                _ => throw RqlLexer.Error(_text, _tokens[at].Position,
                    $"unknown function '{_tokens[at].Text}' (expected search, startsWith, endsWith, exists, exact, fuzzy, proximity, boost, regex, lucene, moreLikeThis, vector.search or hybrid)"),
            };
            Expect(")");
            return result;
        }
        return Comparison(exact: false);
    }

    /// <summary><c>search(F, 'text' [, and|or])</c>, after <c>search(</c>.</summary>
    private RqlSearch Search()
    {
        var field = Field();
        var terms = AfterComma();
        if (!Accept(",")) return new RqlSearch(field, terms);
        if (Current.Is("and") || Current.Is("or"))
        {
            var all = Current.Is("and");
            _at++;
            return new RqlSearch(field, terms, all);
        }
        throw Expected("and or or (how the words combine)");
    }

    /// <summary><c>fuzzy(F = 'value' [, factor])</c>, after <c>fuzzy(</c>.</summary>
    private RqlFuzzy Fuzzy()
    {
        var field = Field();
        if (!Current.IsSymbol("=")) throw Expected($"'=' after '{field}' (fuzzy(Field = 'value', 0.8))");
        _at++;
        var value = Value();
        return new RqlFuzzy(field, value, Accept(",") ? Value() : null);
    }

    /// <summary><c>proximity(search(F, 'a b'), n)</c>, after <c>proximity(</c>.</summary>
    private RqlProximity Proximity()
    {
        if (!(Current.Is("search") && Next.IsSymbol("("))) throw Expected("search(…) inside proximity (proximity(search(Body, 'burr grinder'), 3))");
        _at += 2;
        var search = Search();
        Expect(")");
        if (search.AllWords) throw RqlLexer.Error(_text, _tokens[_at - 2].Position, "proximity() takes search(Field, 'words') without and/or: every word must occur");
        return new RqlProximity(search, AfterComma());
    }

    /// <summary><c>boost(expression, factor)</c>, after <c>boost(</c>.</summary>
    /// <summary><c>moreLikeThis(id() = 'posts/1'[, options])</c> or <c>moreLikeThis('{ "Title": … }' | $doc | { … }[, options])</c>.</summary>
    private RqlMoreLikeThis MoreLikeThis()
    {
        RqlValue? id = null, document = null;
        if (IsIdField())
        {
            _at += 3;
            Expect("=");
            id = Value();
        }
        else document = Options();
        var at = Current.Position;
        var options = Accept(",") ? Options() : null;
        // The fields are known now (an automatic index makes them search fields; a static index must have them).
        var fields = new List<string>();
        foreach (var option in options is not null && OptionsJson(options, at) is { } json ? json.EnumerateObject().ToList() : [])
        {
            if (!option.Name.Equals("Fields", StringComparison.OrdinalIgnoreCase)) continue;
            var named = option.Value;
            if (named.ValueKind != System.Text.Json.JsonValueKind.Array || named.GetArrayLength() is 0 or > 64 || named.EnumerateArray().Any(f => f.ValueKind != System.Text.Json.JsonValueKind.String))
                throw RqlLexer.Error(_text, at, "moreLikeThis's Fields must be 1 to 64 field names");
            fields.AddRange(named.EnumerateArray().Select(f => f.GetString()!));
        }
        // A collection's automatic index has no search fields of its own to fall back on: which ones it would use would depend on
        // which automatic index happened to exist.
        if (fields.Count == 0 && !_fromIndex) throw RqlLexer.Error(_text, at, "moreLikeThis on a collection compares the search fields you name: name them in its options' Fields");
        return new RqlMoreLikeThis(id, document, options, _moreLikeThis++) { Fields = fields };
    }

    private bool _fromIndex;

    /// <summary>The collection's alias (<c>from Orders as o</c>), stripped from every field path written from it.</summary>
    private string? _alias;

    /// <summary>A grouped query's aggregates: <c>count()</c> and <c>sum(F)</c> in where and order by name their result fields, and add them.</summary>
    private List<RqlAggregate>? _aggregates;

    /// <summary>An options value as JSON when it is known while parsing (a literal or a parameter); null otherwise.</summary>
    private System.Text.Json.JsonElement? OptionsJson(RqlValue v, int at)
    {
        var value = v.IsParameter ? ParameterValue(v.Parameter!, v.Position) : v.Literal is System.Text.Json.JsonElement e ? e : default;
        if (v.Literal is string s || value.ValueKind == System.Text.Json.JsonValueKind.String)
        {
            try { value = System.Text.Json.JsonDocument.Parse(v.Literal as string ?? value.GetString()!).RootElement.Clone(); }
            catch (System.Text.Json.JsonException e2) { throw RqlLexer.Error(_text, at, $"options are not JSON: {e2.Message}"); }
        }
        return value.ValueKind == System.Text.Json.JsonValueKind.Object ? value : null;
    }

    private int _moreLikeThis;

    /// <summary>
    /// <c>vector.search(Field, vector[, minimumSimilarity[, k[, options]]])</c>, after <c>vector.search(</c>; the field may be
    /// <c>embedding.text(Field)</c> (or <c>embedding.text_i8</c>, <c>embedding.text_i1</c>): the query's value is then text the
    /// built-in model embeds, searched among the vectors it made of the field's text.
    /// </summary>
    private RqlVectorSearch VectorSearch()
    {
        var at = Current.Position;
        string? embedding = null;
        if (Current.Kind == RqlTokenKind.Identifier && Next.IsSymbol("(") && RqlVectorSearch.Embeddings.FirstOrDefault(e => Current.Is(e)) is { } kind)
        {
            embedding = kind;
            _at += 2;
        }
        var field = Field();
        string? connection = null;
        if (embedding is not null)
        {
            if (Accept(",")) connection = AiTask();
            Expect(")");
        }
        Expect(",");
        // embedding.forDoc($id): the vector the index holds for that document, in this field (documents like it).
        var forDocument = Current.Kind == RqlTokenKind.Identifier && Current.Is("embedding.forDoc") && Next.IsSymbol("(");
        if (forDocument) _at += 2;
        var vector = Value();
        if (forDocument) Expect(")");
        RqlValue? minimum = null, k = null, options = null;
        if (Accept(",")) minimum = Value();
        if (Accept(",")) k = Value();
        if (Accept(",")) options = Options();
        return new RqlVectorSearch(field, vector, minimum, k, options, at) { Embedding = embedding, Connection = connection, ForDocument = forDocument, Number = _vectorSearches++ };
    }

    /// <summary><c>ai.task('name')</c>, RavenDB's way to name who embeds a text: here the embedding connection's name.</summary>
    private string AiTask()
    {
        var at = Current.Position;
        if (!(Current.Kind == RqlTokenKind.Identifier && Current.Is("ai.task") && Next.IsSymbol("(")))
            throw RqlLexer.Error(_text, at, "embedding.text's second argument is ai.task('connection'): the embedding connection that makes the vectors");
        _at += 2;
        var value = Value();
        Expect(")");
        var name = value.IsParameter
            ? ParameterValue(value.Parameter!, value.Position) is { ValueKind: System.Text.Json.JsonValueKind.String } p ? p.GetString() : null
            : value.Literal as string;
        if (name is null) throw RqlLexer.Error(_text, value.Position, "ai.task names an embedding connection: a string");
        if (Magpie.Embeddings.Connections.EmbeddingConnection.NameProblem(name) is { } problem) throw RqlLexer.Error(_text, value.Position, problem);
        return name;
    }

    /// <summary><c>exact(vector.search(…))</c>, after <c>exact(</c>: every vector compared, no nearest-neighbour graph.</summary>
    private RqlVectorSearch ExactVectorSearch()
    {
        _at += 2;
        var search = VectorSearch();
        Expect(")");
        return search with { Exact = true };
    }

    private int _vectorSearches;

    /// <summary><c>hybrid(condition, vector.search(…)[, options])</c>, after <c>hybrid(</c>.</summary>
    private RqlHybrid Hybrid(int position)
    {
        Enter();
        var text = Or();
        Expect(",");
        var at = Current.Position;
        var vector = Or() as RqlVectorSearch ?? throw RqlLexer.Error(_text, at, "hybrid's second ranking is a vector.search(…)");
        var options = Accept(",") ? Options() : null;
        _depth--;
        return new RqlHybrid(text, vector, options, position);
    }

    private RqlBoost Boost()
    {
        Enter();
        var inner = Or();
        _depth--;
        return new RqlBoost(inner, AfterComma());
    }

    /// <summary><c>id()</c> at the current token: a field, not a function call.</summary>
    private bool IsIdField() => Current.Is("id") && Next.IsSymbol("(") && _at + 2 < _tokens.Count && _tokens[_at + 2].IsSymbol(")");

    /// <summary>A function's options: a <c>$parameter</c>, a JSON string, or a <c>{ … }</c> JSON object written in the query.</summary>
    private RqlValue Options()
    {
        if (Current.Kind != RqlTokenKind.Script) return Value();
        var t = Current;
        _at++;
        try { return new RqlValue(System.Text.Json.JsonDocument.Parse(t.Text).RootElement.Clone(), Position: t.Position); }
        catch (System.Text.Json.JsonException e) { throw RqlLexer.Error(_text, t.Position, $"options must be a JSON object: {e.Message}"); }
    }

    private RqlValue AfterComma()
    {
        Expect(",");
        return Value();
    }

    private RqlExpression Comparison(bool exact)
    {
        var field = Field();
        if (Current.Is("between"))
        {
            _at++;
            var low = Value();
            Expect("and");
            return new RqlBetween(field, low, Value(), exact);
        }
        var all = Current.Is("all") && Next.Is("in");
        if (all) _at++;
        if (Current.Is("in"))
        {
            _at++;
            Expect("(");
            var values = new List<RqlValue>();
            do
            {
                if (values.Count == QueryLimits.MaxInValues) throw RqlLexer.Error(_text, Current.Position, QueryLimits.TooManyInValues);
                values.Add(Value());
            } while (Accept(","));
            Expect(")");
            return new RqlIn(field, values, exact, all);
        }
        if (Current.Kind == RqlTokenKind.Symbol && Current.Text is "=" or "!=" or "<" or "<=" or ">" or ">=")
        {
            var op = Current.Text;
            _at++;
            return new RqlCompare(field, op, Value(), exact);
        }
        throw Expected($"an operator after '{field}' (=, !=, <, <=, >, >=, between, in, all in)");
    }

    private string Field()
    {
        var t = Current;
        if (IsIdField())
        {
            _at += 3;
            return RqlFields.Id;
        }
        // Where a field name is expected, a word that only joins clauses (By, In, Asc, Index, Between) is a field a document may well have.
        // A path written from the collection's alias (from Orders as o where o.Freight > 950) is the document's own path.
        if (IsAggregate())
        {
            _at += 2;
            var aggregate = new RqlAggregate(t.Text.Equals("sum", StringComparison.OrdinalIgnoreCase) ? Field() : null);
            Expect(")");
            if (!_aggregates!.Contains(aggregate)) _aggregates.Add(aggregate);
            return aggregate.Name;
        }
        if (t.Kind == RqlTokenKind.Identifier && !Structural.Contains(t.Text)) { _at++; return WithoutAlias(t.Text, _alias); }
        if (t.Kind == RqlTokenKind.String) { _at++; return (string)t.Value!; }
        throw Expected("a field name");
    }

    private RqlValue Value()
    {
        var t = Current;
        _at++;
        return t.Kind switch
        {
            RqlTokenKind.String or RqlTokenKind.Number => new RqlValue(t.Value, Position: t.Position),
            RqlTokenKind.Parameter => new RqlValue(null, (string)t.Value!, t.Position),
            RqlTokenKind.Identifier when t.Is("true") => new RqlValue(true, Position: t.Position),
            RqlTokenKind.Identifier when t.Is("false") => new RqlValue(false, Position: t.Position),
            RqlTokenKind.Identifier when t.Is("null") => new RqlValue(null, Position: t.Position),
            _ => throw RqlLexer.Error(_text, t.Position, $"expected a value ('text', a number, true, false, null or $parameter), found {Describe(t)}"),
        };
    }

    private int Count(string what)
    {
        if (Current.Kind == RqlTokenKind.Number && Current.Value is double d && d >= 0 && d == Math.Floor(d) && d <= int.MaxValue)
        {
            _at++;
            return (int)d;
        }
        throw Expected($"a non-negative whole number after {what}");
    }

    private bool Accept(string symbolOrKeyword)
    {
        if (Current.IsSymbol(symbolOrKeyword) || Current.Is(symbolOrKeyword)) { _at++; return true; }
        return false;
    }

    private void Expect(string symbolOrKeyword)
    {
        if (!Accept(symbolOrKeyword)) throw Expected($"'{symbolOrKeyword}'");
    }

    private RqlException Expected(string what) => RqlLexer.Error(_text, Current.Position, $"expected {what}, found {Describe(Current)}");

    private static string Describe(RqlToken t) => t.Kind == RqlTokenKind.End ? "the end of the query" : $"'{t.Text}'";

    private static readonly HashSet<string> Keywords = new(StringComparer.OrdinalIgnoreCase)
        { "from", "index", "where", "and", "or", "not", "order", "by", "select", "limit", "offset", "between", "in", "as", "asc", "desc" };

    private static bool IsKeyword(RqlToken t) => Keywords.Contains(t.Text);

    /// <summary>Words that start or join a clause wherever they stand: never a field name without quotes.</summary>
    private static readonly HashSet<string> Structural = new(StringComparer.OrdinalIgnoreCase)
        { "from", "where", "and", "or", "not", "order", "select", "limit", "offset", "as" };

    /// <summary>The name the document goes by in a projection made for loads when the query gave it none.</summary>
    private const string LoadsDocument = "__document";

    /// <summary>
    /// <c>select c.Name, o.Freight as F, id()</c> over loads as a JavaScript object: <c>{ "Name": c?.Name ?? null, "F": … }</c>. A loaded
    /// field is named without its alias (as the document's own fields are); a missing one is null, as a path projection gives it.
    /// </summary>
    private string LoadProjection(List<RqlProjection> select, List<RqlLoad> loads, string alias)
    {
        var parts = new List<string>();
        foreach (var p in select)
        {
            string expression, name = p.Alias;
            if (p.Field == RqlFields.Id) expression = $"id({alias})";
            else
            {
                var segments = p.Field.Split('.');
                var load = loads.FirstOrDefault(l => l.Alias == segments[0]);
                if (segments.Any(s => !IsIdentifier(s)))
                    throw RqlLexer.Error(_text, 0, $"'{p.Field}' beside load: a field path of names only, or select {{ … }} (JavaScript) for more");
                var root = load is null ? alias : load.Alias;
                var path = load is null ? segments : segments[1..];
                expression = path.Length == 0 ? root : $"({root}?.{string.Join("?.", path)} ?? null)";
                if (load is not null && name == p.Field && path.Length > 0) name = string.Join('.', path);
            }
            parts.Add($"{JsonSerializer.Serialize(name)}: {expression}");
        }
        return "{ " + string.Join(", ", parts) + " }";
    }

    private static bool IsIdentifier(string s) => s.Length > 0 && (char.IsLetter(s[0]) || s[0] is '_' or '$') && s.All(c => char.IsLetterOrDigit(c) || c is '_' or '$');
}
