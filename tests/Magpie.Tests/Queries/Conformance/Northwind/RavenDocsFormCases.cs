using System.Globalization;
using System.Text.Json;
using System.Text.Json.Nodes;
using static Magpie.Tests.Queries.Conformance.Northwind.NorthwindData;

namespace Magpie.Tests.Queries.Conformance.Northwind;

/// <summary>
/// The forms RavenDB's filtering, sorting and querying pages show (a comparison, <c>in</c>, <c>startsWith</c>, <c>exists</c>, the
/// collection alias, …), each written over every field of the dataset it applies to, with values taken from the data. The
/// expected ids come from the documents by RavenDB's rules, computed here: a comparison holds when any value of the field (any
/// element, through <c>[]</c>) meets it; missing and null meet none; <c>!=</c> is <c>not =</c>, so it takes them; strings
/// compare ignoring case.
/// </summary>
public static class RavenDocsFormCases
{
    private const string Filtering = "indexes/querying/filtering";
    private const string Rql = "client-api/session/querying/what-is-rql";
    private const string StartsWith = "client-api/session/querying/text-search/starts-with-query";
    private const string EndsWith = "client-api/session/querying/text-search/ends-with-query";
    private const string Exists = "client-api/session/querying/how-to-filter-by-field";
    private const string Sorting = "indexes/querying/sorting";
    private const string Paging = "indexes/querying/paging";

    private static readonly NorthwindData Sample = new();

    private static readonly (string Collection, string Field)[] NumberFields =
    [
        ("Orders", "Freight"), ("Products", "PricePerUnit"), ("Products", "UnitsInStock"), ("Orders", "Lines[].Quantity"),
        ("Orders", "Lines[].Discount"), ("Orders", "Lines[].PricePerUnit"),
    ];

    private static readonly (string Collection, string Field)[] StringFields =
    [
        ("Orders", "ShipTo.City"), ("Orders", "ShipTo.Country"), ("Orders", "Company"), ("Orders", "Employee"), ("Orders", "Lines[].ProductName"),
        ("Companies", "Name"), ("Companies", "Contact.Title"), ("Companies", "Address.City"), ("Companies", "Phone"),
        ("Products", "Name"), ("Products", "Category"), ("Products", "Supplier"), ("Products", "Code"),
        ("Employees", "FirstName"), ("Employees", "LastName"), ("Employees", "Title"), ("Employees", "ReportsTo"),
    ];

    public static List<(string Id, JsonObject Doc)> Of(NorthwindData d, string collection) => collection switch
    {
        "Orders" => d.Orders,
        "Products" => d.Products,
        "Companies" => d.Companies,
        _ => d.Employees,
    };

    /// <summary>The values at a path: each element through <c>X[]</c>, nothing where a step is missing, a JSON null as null.</summary>
    public static List<JsonNode?> Values(JsonObject doc, string path)
    {
        var current = new List<JsonNode?> { doc };
        foreach (var step in path.Split('.'))
        {
            var every = step.EndsWith("[]", StringComparison.Ordinal);
            var name = every ? step[..^2] : step;
            var next = new List<JsonNode?>();
            foreach (var node in current)
                if (node is JsonObject o && o.TryGetPropertyValue(name, out var v))
                {
                    if (every && v is JsonArray a) next.AddRange(a);
                    else next.Add(v);
                }
            current = next;
        }
        return current;
    }

    public static List<double> Numbers(JsonObject doc, string path) =>
        [.. Values(doc, path).OfType<JsonValue>().Where(v => v.GetValueKind() == JsonValueKind.Number).Select(v => double.Parse(v.ToJsonString(), CultureInfo.InvariantCulture))];

    public static List<string> Strings(JsonObject doc, string path) =>
        [.. Values(doc, path).OfType<JsonValue>().Where(v => v.GetValueKind() == JsonValueKind.String).Select(v => v.GetValue<string>())];

    private static string Number(double d) => d.ToString("R", CultureInfo.InvariantCulture);

    private static string Quoted(string s) => s.Contains('\'') ? "\"" + s.Replace("\"", "\\\"") + "\"" : "'" + s + "'";

    private static IEnumerable<string> Ids(NorthwindData d, string collection, Func<JsonObject, bool> match) =>
        Of(d, collection).Where(x => match(x.Doc)).Select(x => x.Id);

    /// <summary>Name → (docs page, query, the ids it selects).</summary>
    public static readonly Dictionary<string, (string Page, string Query, Func<NorthwindData, IEnumerable<string>> Expected)> Cases = Build();

    private static Dictionary<string, (string, string, Func<NorthwindData, IEnumerable<string>>)> Build()
    {
        var cases = new Dictionary<string, (string, string, Func<NorthwindData, IEnumerable<string>>)>();
        void Add(string page, string query, string collection, Func<JsonObject, bool> match)
        {
            // A form whose answer is empty on this data would test nothing: it is left out.
            if (Of(Sample, collection).Any(x => match(x.Doc))) cases[query] = (page, query, d => Ids(d, collection, match));
        }

        foreach (var (collection, field) in NumberFields)
        {
            var all = Of(Sample, collection).SelectMany(x => Numbers(x.Doc, field)).Distinct().Order().ToList();
            var picks = new[] { all[all.Count / 4], all[all.Count / 2], all[all.Count * 3 / 4] }.Distinct().ToList();
            foreach (var v in picks)
            {
                var n = Number(v);
                Add(Filtering, $"from {collection} where {field} = {n}", collection, doc => Numbers(doc, field).Contains(v));
                Add(Filtering, $"from {collection} where {field} != {n}", collection, doc => !Numbers(doc, field).Contains(v));
                Add(Filtering, $"from {collection} where {field} < {n}", collection, doc => Numbers(doc, field).Any(x => x < v));
                Add(Filtering, $"from {collection} where {field} <= {n}", collection, doc => Numbers(doc, field).Any(x => x <= v));
                Add(Filtering, $"from {collection} where {field} > {n}", collection, doc => Numbers(doc, field).Any(x => x > v));
                Add(Filtering, $"from {collection} where {field} >= {n}", collection, doc => Numbers(doc, field).Any(x => x >= v));
            }
            var (lo, hi) = (picks[0], picks[^1]);
            Add(Filtering, $"from {collection} where {field} between {Number(lo)} and {Number(hi)}", collection, doc => Numbers(doc, field).Any(x => x >= lo && x <= hi));
            Add(Filtering, $"from {collection} where {field} in ({Number(lo)}, {Number(hi)})", collection, doc => Numbers(doc, field).Any(x => x == lo || x == hi));
            Add(Rql, $"from {collection} as x where x.{field} > {Number(picks[0])}", collection, doc => Numbers(doc, field).Any(x => x > picks[0]));
            Add(Filtering, $"from {collection} where true and not {field} > {Number(picks[0])}", collection, doc => !Numbers(doc, field).Any(x => x > picks[0]));
        }

        foreach (var (collection, field) in StringFields)
        {
            var all = Of(Sample, collection).SelectMany(x => Strings(x.Doc, field)).Distinct(StringComparer.Ordinal).Order(StringComparer.Ordinal).ToList();
            var (a, b) = (all[all.Count / 3], all[all.Count * 2 / 3]);
            Add(Filtering, $"from {collection} where {field} = {Quoted(a)}", collection, doc => Strings(doc, field).Any(x => Same(x, a)));
            Add(Filtering, $"from {collection} where {field} = {Quoted(a.ToUpperInvariant())}", collection, doc => Strings(doc, field).Any(x => Same(x, a)));
            Add(Filtering, $"from {collection} where {field} != {Quoted(a)}", collection, doc => !Strings(doc, field).Any(x => Same(x, a)));
            Add(Filtering, $"from {collection} where {field} in ({Quoted(a)}, {Quoted(b)})", collection, doc => Strings(doc, field).Any(x => Same(x, a) || Same(x, b)));
            Add(Rql, $"from {collection} as x where x.{field} in ({Quoted(a)}, {Quoted(b)})", collection, doc => Strings(doc, field).Any(x => Same(x, a) || Same(x, b)));
            Add(Filtering, $"from {collection} where {field} = {Quoted(a)} or {field} = {Quoted(b)}", collection, doc => Strings(doc, field).Any(x => Same(x, a) || Same(x, b)));
            var prefix = a[..Math.Min(3, a.Length)];
            Add(StartsWith, $"from {collection} where startsWith({field}, {Quoted(prefix)})", collection, doc => Strings(doc, field).Any(x => x.StartsWith(prefix, StringComparison.OrdinalIgnoreCase)));
            var suffix = b[^Math.Min(2, b.Length)..];
            Add(EndsWith, $"from {collection} where endsWith({field}, {Quoted(suffix)})", collection, doc => Strings(doc, field).Any(x => x.EndsWith(suffix, StringComparison.OrdinalIgnoreCase)));
            Add(StartsWith, $"from {collection} where true and not startsWith({field}, {Quoted(prefix)})", collection, doc => !Strings(doc, field).Any(x => x.StartsWith(prefix, StringComparison.OrdinalIgnoreCase)));
            if (!field.Contains("[]", StringComparison.Ordinal))
            {
                Add(Exists, $"from {collection} where exists({field})", collection, doc => Values(doc, field).Count > 0);
                Add(Exists, $"from {collection} where true and not exists({field})", collection, doc => Values(doc, field).Count == 0);
            }
        }
        return cases;
    }

    /// <summary>Sorts: each field ascending and descending (a field with several values by its smallest, descending by its largest), paged.</summary>
    public static readonly List<(string Page, string Query, string Collection, string Field, bool Descending, bool Numeric, int Skip, int Take)> Sorts = BuildSorts();

    private static List<(string, string, string, string, bool, bool, int, int)> BuildSorts()
    {
        var sorts = new List<(string, string, string, string, bool, bool, int, int)>();
        foreach (var (collection, field) in NumberFields.Where(f => !f.Field.Contains("[]", StringComparison.Ordinal)))
            foreach (var descending in new[] { false, true })
            {
                var dir = descending ? " desc" : "";
                sorts.Add((Sorting, $"from {collection} where exists({field}) order by {field}{dir}", collection, field, descending, true, 0, 1024));
                sorts.Add((Sorting, $"from {collection} where exists({field}) order by {field} as double{dir}", collection, field, descending, true, 0, 1024));
                sorts.Add((Paging, $"from {collection} where exists({field}) order by {field}{dir} limit 7 offset 3", collection, field, descending, true, 3, 7));
            }
        // Fields some documents hold null in are left out: RavenDB sorts a null as its token's text, NULL_VALUE.
        foreach (var (collection, field) in StringFields.Where(f => !f.Field.Contains("[]", StringComparison.Ordinal) && f.Field is not ("Phone" or "ReportsTo")))
            foreach (var descending in new[] { false, true })
                sorts.Add((Sorting, $"from {collection} where exists({field}) order by {field}{(descending ? " desc" : "")}", collection, field, descending, false, 0, 1024));
        return sorts;
    }
}
