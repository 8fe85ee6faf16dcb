using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Query.Rql;

namespace Magpie.Query.Subscriptions;

/// <summary>
/// An RQL <c>where</c> and <c>select</c> applied to one document in memory, for subscriptions (which follow the change
/// feed, not an index). The same rules as the indexes: strings compare case-insensitively unless inside
/// <c>exact()</c>, numbers as numbers, ISO dates as text (which orders them), arrays match when any element does,
/// <c>= null</c> matches a missing or null field; <c>search()</c> matches any of its words (a trailing * is a prefix).
/// Fields are property paths (<c>Address.City</c>).
/// </summary>
public sealed class DocumentMatcher
{
    private readonly RqlQuery _query;

    private DocumentMatcher(RqlQuery query) => _query = query;

    /// <summary>Throws <see cref="RqlException"/> for a query a subscription can't run: not over a collection, with parameters, ordering or paging.</summary>
    public static DocumentMatcher For(RqlQuery query)
    {
        if (query.From.IsIndex) throw new RqlException("a subscription follows a collection: use 'from Collection', not 'from index'", 1, 1);
        if (query.OrderBy.Count > 0 || query.Limit is not null) throw new RqlException("a subscription delivers in change order: no 'order by' or 'limit'", 1, 1);
        if (query.Facets.Count > 0) throw new RqlException("a subscription delivers documents: facets are for POST /queries", 1, 1);
        if (query.Where is { } w && HasParameter(w)) throw new RqlException("a subscription query can't use $parameters", 1, 1);
        return new DocumentMatcher(query);
    }

    public string Collection => _query.From.Name;

    public bool Matches(JsonElement document) => _query.Where is not { } where || Eval(where, document);

    /// <summary>The document itself, or with <c>select</c> an object of the selected fields under their aliases.</summary>
    public JsonNode? Project(JsonElement document)
    {
        if (_query.Select.Count == 0) return JsonNode.Parse(document.GetRawText());
        var result = new JsonObject();
        foreach (var p in _query.Select)
            result[p.Alias] = Values(document, p.Field).FirstOrDefault() is { ValueKind: not JsonValueKind.Undefined } v ? JsonNode.Parse(v.GetRawText()) : null;
        return result;
    }

    private static bool Eval(RqlExpression e, JsonElement d) => e switch
    {
        RqlAnd a => Eval(a.Left, d) && Eval(a.Right, d),
        RqlOr o => Eval(o.Left, d) || Eval(o.Right, d),
        RqlNot n => !Eval(n.Inner, d),
        RqlCompare c => c.Operator == "!=" ? !Any(d, c.Field, v => Compare(v, c.Value.Literal, c.Exact) == 0)
            : Any(d, c.Field, v => Compare(v, c.Value.Literal, c.Exact) is { } r && c.Operator switch
            {
                "=" => r == 0, "<" => r < 0, "<=" => r <= 0, ">" => r > 0, ">=" => r >= 0,
                _ => throw new RqlException($"unknown operator {c.Operator}", 1, 1),
            }),
        RqlBetween b => Any(d, b.Field, v => Compare(v, b.Low.Literal, b.Exact) >= 0 && Compare(v, b.High.Literal, b.Exact) <= 0),
        RqlIn i => Any(d, i.Field, v => i.Values.Any(x => Compare(v, x.Literal, i.Exact) == 0)),
        RqlStartsWith s => Any(d, s.Field, v => v.ValueKind == JsonValueKind.String && v.GetString()!.StartsWith(Text(s.Prefix.Literal), StringComparison.OrdinalIgnoreCase)),
        RqlSearch s => Any(d, s.Field, v => v.ValueKind == JsonValueKind.String && SearchMatches(v.GetString()!, Text(s.Terms.Literal))),
        RqlExists x => Values(d, x.Field).Any(v => v.ValueKind != JsonValueKind.Undefined),
        _ => throw new RqlException($"{e.GetType().Name} is not supported in subscriptions", 1, 1),
    };

    /// <summary>Any value at the path (array elements one by one; a missing field is one null) satisfies <paramref name="test"/>.</summary>
    private static bool Any(JsonElement d, string field, Func<JsonElement, bool> test)
    {
        foreach (var v in Values(d, field))
        {
            if (v.ValueKind == JsonValueKind.Array)
            {
                if (v.EnumerateArray().Any(test)) return true;
            }
            else if (test(v)) return true;
        }
        return false;
    }

    /// <summary>The values at a dotted path, through arrays; Undefined when the path is missing.</summary>
    private static IEnumerable<JsonElement> Values(JsonElement d, string path)
    {
        IEnumerable<JsonElement> current = [d];
        foreach (var part in path.Split('.'))
            current = current.SelectMany(c => c.ValueKind switch
            {
                JsonValueKind.Object => c.TryGetProperty(part, out var p) ? [p] : [default],
                JsonValueKind.Array => c.EnumerateArray().Select(e => e.ValueKind == JsonValueKind.Object && e.TryGetProperty(part, out var p) ? p : default),
                _ => [default(JsonElement)],
            });
        return current;
    }

    /// <summary>Order of a document value against a literal; null when they can't be compared (a number against text).</summary>
    private static int? Compare(JsonElement v, object? literal, bool exact) => (v.ValueKind, literal) switch
    {
        (JsonValueKind.Undefined or JsonValueKind.Null, null) => 0,
        (JsonValueKind.Undefined or JsonValueKind.Null, _) => null,
        (_, null) => null,
        (JsonValueKind.Number, double n) => v.GetDouble().CompareTo(n),
        (JsonValueKind.Number, string s) when double.TryParse(s, NumberStyles.Float, CultureInfo.InvariantCulture, out var n) => v.GetDouble().CompareTo(n),
        (JsonValueKind.String, string s) => string.Compare(v.GetString(), s, exact ? StringComparison.Ordinal : StringComparison.OrdinalIgnoreCase),
        (JsonValueKind.String, double n) => string.Compare(v.GetString(), n.ToString(CultureInfo.InvariantCulture), StringComparison.Ordinal),
        (JsonValueKind.True, bool b) => b ? 0 : 1,
        (JsonValueKind.False, bool b) => b ? -1 : 0,
        _ => null,
    };

    private static bool SearchMatches(string text, string terms)
    {
        var words = Words(text).ToHashSet();
        return Words(terms).Any(t => t.EndsWith('*') ? words.Any(w => w.StartsWith(t[..^1], StringComparison.Ordinal)) : words.Contains(t));
    }

    private static IEnumerable<string> Words(string text)
    {
        var clean = new string(text.ToLowerInvariant().Select(c => char.IsLetterOrDigit(c) || c == '*' ? c : ' ').ToArray());
        return clean.Split(' ', StringSplitOptions.RemoveEmptyEntries);
    }

    private static string Text(object? literal) => literal switch
    {
        string s => s,
        double n => n.ToString(CultureInfo.InvariantCulture),
        _ => literal?.ToString() ?? "",
    };

    private static bool HasParameter(RqlExpression e) => e switch
    {
        RqlAnd a => HasParameter(a.Left) || HasParameter(a.Right),
        RqlOr o => HasParameter(o.Left) || HasParameter(o.Right),
        RqlNot n => HasParameter(n.Inner),
        RqlCompare c => c.Value.IsParameter,
        RqlBetween b => b.Low.IsParameter || b.High.IsParameter,
        RqlIn i => i.Values.Any(v => v.IsParameter),
        RqlStartsWith s => s.Prefix.IsParameter,
        RqlSearch s => s.Terms.IsParameter,
        _ => false,
    };
}
