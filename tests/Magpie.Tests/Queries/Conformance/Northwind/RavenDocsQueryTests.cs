using System.Net;
using System.Net.Http.Json;
using System.Text.Json;
using System.Text.Json.Nodes;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;
using static Magpie.Tests.Queries.Conformance.Northwind.NorthwindData;

namespace Magpie.Tests.Queries.Conformance.Northwind;

public sealed class NorthwindFixture : IAsyncLifetime
{
    public MagpieProcess Magpie { get; private set; } = null!;
    public NorthwindData Data { get; } = new();

    public async Task InitializeAsync()
    {
        Magpie = await MagpieProcess.StartAsync();
        foreach (var chunk in Data.All.Chunk(256))
        {
            var r = await Magpie.Http.BulkPutAsync(chunk.Select(d => (d.Id, Json(d.Doc))));
            if (!r.IsSuccessStatusCode) throw new InvalidOperationException(await r.Content.ReadAsStringAsync());
        }
    }

    public async Task DisposeAsync() => await Magpie.DisposeAsync();
}

/// <summary>
/// Queries as RavenDB's documentation writes them (the page each comes from beside it, under docs.ravendb.net/…), over a
/// Northwind-like dataset; each expected answer is computed here from the generated documents with LINQ, by RavenDB's rules
/// (strings compare case-insensitively, ids too, a missing field is null), never by Magpie's evaluator.
/// </summary>
public sealed class RavenDocsQueryTests(NorthwindFixture fx) : IClassFixture<NorthwindFixture>
{
    private const string Rql = "client-api/session/querying/what-is-rql";
    private const string Filtering = "indexes/querying/filtering";
    private const string Sorting = "indexes/querying/sorting";
    private const string Paging = "indexes/querying/paging";
    private const string GroupBy = "client-api/session/querying/how-to-perform-group-by-query";
    private const string Projections = "indexes/querying/projections";
    private const string Relations = "client-api/how-to/handle-document-relationships";
    private const string StartsWith = "client-api/session/querying/text-search/starts-with-query";
    private const string EndsWith = "client-api/session/querying/text-search/ends-with-query";
    private const string Exists = "client-api/session/querying/how-to-filter-by-field";
    private const string Distinct = "indexes/querying/distinct";
    private const string Search = "client-api/session/querying/text-search/full-text-search";
    private const string Parameters = "client-api/session/querying/how-to-query#query-parameters";

    private static IEnumerable<string> Where(IEnumerable<(string Id, JsonObject Doc)> docs, Func<JsonObject, bool> match) =>
        docs.Where(d => match(d.Doc)).Select(d => d.Id);

    /// <summary>Name → (docs page, query, parameters, the ids it selects in any order).</summary>
    public static readonly Dictionary<string, (string Page, string Query, object? Parameters, Func<NorthwindData, IEnumerable<string>> Expected)> IdCases = new()
    {
        ["all orders"] = (Rql, "from Orders", null, d => d.Orders.Select(o => o.Id)),
        ["a collection in quotes"] = (Rql, "from \"Employees\"", null, d => d.Employees.Select(o => o.Id)),
        ["a number comparison"] = (Filtering, "from Orders where Freight > 950", null, d => Where(d.Orders, o => Num(o, "Freight") > 950)),
        ["the alias in where"] = (Rql, "from Orders as o where o.Freight > 950", null, d => Where(d.Orders, o => Num(o, "Freight") > 950)),
        ["== as ="] = (Rql, "from Employees where FirstName == 'Robert'", null, d => Where(d.Employees, e => Str(e, "FirstName") == "Robert")),
        ["string equality ignores case"] = (Filtering, "from Employees where FirstName = 'robert'", null, d => Where(d.Employees, e => Same(Str(e, "FirstName"), "robert"))),
        ["a nested field"] = (Filtering, "from Companies where Address.Country = 'Germany'", null, d => Where(d.Companies, c => Same(Str(c, "Address.Country"), "Germany"))),
        ["in"] = (Filtering, "from Companies where Address.Country in ('France', 'Germany')", null,
            d => Where(d.Companies, c => Same(Str(c, "Address.Country"), "France") || Same(Str(c, "Address.Country"), "Germany"))),
        ["between"] = (Filtering, "from Products where PricePerUnit between 10 and 20", null, d => Where(d.Products, p => Num(p, "PricePerUnit") is >= 10 and <= 20)),
        ["a boolean"] = (Filtering, "from Products where Discontinued = true", null, d => Where(d.Products, p => p["Discontinued"]!.GetValue<bool>())),
        ["and"] = (Filtering, "from Products where UnitsInStock = 0 and Discontinued = false", null,
            d => Where(d.Products, p => Num(p, "UnitsInStock") == 0 && !p["Discontinued"]!.GetValue<bool>())),
        ["or"] = (Filtering, "from Orders where ShipTo.City = 'London' or ShipTo.City = 'Paris'", null,
            d => Where(d.Orders, o => Same(Str(o, "ShipTo.City"), "London") || Same(Str(o, "ShipTo.City"), "Paris"))),
        ["and with a parenthesised or"] = (Filtering, "from Orders where Freight > 500 and (ShipTo.Country = 'France' or ShipTo.Country = 'Germany')", null,
            d => Where(d.Orders, o => Num(o, "Freight") > 500 && (Same(Str(o, "ShipTo.Country"), "France") || Same(Str(o, "ShipTo.Country"), "Germany")))),
        ["unicode"] = (Filtering, "from Companies where Address.City = 'Москва'", null, d => Where(d.Companies, c => Str(c, "Address.City") == "Москва")),
        ["not equal takes missing and null too"] = (Filtering, "from Orders where ShipTo.Country != 'France'", null, d => Where(d.Orders, o => !Same(Str(o, "ShipTo.Country"), "France"))),
        ["any element of an array"] = (Filtering, "from Orders where Lines[].ProductName = 'Chai'", null, d => Where(d.Orders, o => Lines(o).Any(l => Same(Str(l, "ProductName"), "Chai")))),
        ["a range over array elements"] = (Filtering, "from Orders where Lines[].Quantity > 55", null, d => Where(d.Orders, o => Lines(o).Any(l => Num(l, "Quantity") > 55))),
        ["a reference, whatever its case"] = (Filtering, "from Orders where Company = 'companies/9-A'", null, d => Where(d.Orders, o => Same(Str(o, "Company"), "companies/9-A"))),
        ["exists"] = (Exists, "from Employees where exists(ReportsTo)", null, d => Where(d.Employees, e => Has(e, "ReportsTo"))),
        ["a leading not, as the client writes it"] = (Exists, "from Employees where true and not exists(ReportsTo)", null, d => Where(d.Employees, e => !Has(e, "ReportsTo"))),
        ["exists on a field some lack"] = (Exists, "from Companies where exists(Fax)", null, d => Where(d.Companies, c => Has(c, "Fax"))),
        ["startsWith"] = (StartsWith, "from Products where startsWith(Name, 'ch')", null, d => Where(d.Products, p => Str(p, "Name")!.StartsWith("ch", StringComparison.OrdinalIgnoreCase))),
        ["endsWith"] = (EndsWith, "from Companies where endsWith(Name, ' LTD')", null, d => Where(d.Companies, c => Str(c, "Name")!.EndsWith(" ltd", StringComparison.OrdinalIgnoreCase))),
        ["id() in another case"] = (Rql, "from Orders where id() = 'ORDERS/7-a'", null, d => ["orders/7-A"]),
        ["startsWith(id())"] = (StartsWith, "from Orders where startsWith(id(), 'Orders/1')", null, d => Where(d.Orders, o => true).Where(id => id.StartsWith("orders/1", StringComparison.OrdinalIgnoreCase))),
        ["a parameter"] = (Parameters, "from Products where Category = $category", new { category = "categories/2-A" }, d => Where(d.Products, p => Same(Str(p, "Category"), "categories/2-A"))),
        ["an array parameter in in"] = (Parameters, "from Products where Name in ($names)", new { names = new[] { "Chai", "tofu", "Konbu" } },
            d => Where(d.Products, p => new[] { "Chai", "tofu", "Konbu" }.Any(n => Same(Str(p, "Name"), n)))),
        ["a search word"] = (Search, "from Employees where search(Notes, 'french')", null, d => Where(d.Employees, e => Str(e, "Notes")!.Contains("French", StringComparison.OrdinalIgnoreCase))),
        ["a half-open range"] = (Filtering, "from Orders where Freight >= 50 and Freight < 100", null, d => Where(d.Orders, o => Num(o, "Freight") is >= 50 and < 100)),
        ["between and a nested field"] = (Filtering, "from Orders where Freight between 100 and 400 and ShipTo.Country = 'USA'", null,
            d => Where(d.Orders, o => Num(o, "Freight") is >= 100 and <= 400 && Same(Str(o, "ShipTo.Country"), "USA"))),
        ["in over references"] = (Filtering, "from Orders where Employee in ('employees/1-A', 'EMPLOYEES/2-a')", null,
            d => Where(d.Orders, o => Same(Str(o, "Employee"), "employees/1-A") || Same(Str(o, "Employee"), "employees/2-A"))),
        ["all in over array elements"] = (Filtering, "from Orders where Lines[].Product all in ('products/1-A', 'products/2-A')", null,
            d => Where(d.Orders, o => new[] { "products/1-A", "products/2-A" }.All(p => Lines(o).Any(l => Same(Str(l, "Product"), p))))),
        ["a number in array elements"] = (Filtering, "from Orders where Lines[].Discount > 0", null, d => Where(d.Orders, o => Lines(o).Any(l => Num(l, "Discount") > 0))),
        ["between over array elements"] = (Filtering, "from Orders where Lines[].Quantity between 50 and 59", null, d => Where(d.Orders, o => Lines(o).Any(l => Num(l, "Quantity") is >= 50 and <= 59))),
        ["a date from"] = (Filtering, "from Orders where OrderedAt >= '1997-01-01T00:00:00.0000000'", null,
            d => Where(d.Orders, o => DateTime.Parse(Str(o, "OrderedAt")!, System.Globalization.CultureInfo.InvariantCulture) >= new DateTime(1997, 1, 1))),
        ["dates between"] = (Filtering, "from Orders where OrderedAt between '1997-01-01' and '1997-06-30'", null,
            d => Where(d.Orders, o => DateTime.Parse(Str(o, "OrderedAt")!, System.Globalization.CultureInfo.InvariantCulture) is var t && t >= new DateTime(1997, 1, 1) && t <= new DateTime(1997, 6, 30))),
        ["and not"] = (Filtering, "from Employees where exists(Notes) and not FirstName = 'nancy'", null,
            d => Where(d.Employees, e => Has(e, "Notes") && !Same(Str(e, "FirstName"), "nancy"))),
        ["or of two fields"] = (Filtering, "from Products where PricePerUnit > 80 or UnitsInStock = 0", null, d => Where(d.Products, p => Num(p, "PricePerUnit") > 80 || Num(p, "UnitsInStock") == 0)),
        ["or with a parenthesised and"] = (Filtering, "from Products where UnitsInStock > 100 or (Discontinued = true and PricePerUnit < 50)", null,
            d => Where(d.Products, p => Num(p, "UnitsInStock") > 100 || p["Discontinued"]!.GetValue<bool>() && Num(p, "PricePerUnit") < 50)),
        ["exact keeps case"] = (Filtering, "from Products where exact(Name = 'Chai')", null, d => Where(d.Products, p => Str(p, "Name") == "Chai")),
        ["a null value"] = (Filtering, "from Companies where Phone = null", null, d => Where(d.Companies, c => Has(c, "Phone") && Node(c, "Phone") is null)),
        ["in ignores case"] = (Filtering, "from Products where Name in ('chai', 'CHANG')", null, d => Where(d.Products, p => Same(Str(p, "Name"), "chai") || Same(Str(p, "Name"), "chang"))),
        ["not equal and a boolean"] = (Filtering, "from Products where Name != 'Chai' and Discontinued = false", null, d => Where(d.Products, p => !Same(Str(p, "Name"), "Chai") && !p["Discontinued"]!.GetValue<bool>())),
        ["the alias in in"] = (Rql, "from Orders as o where o.ShipTo.City in ('London', 'Berlin')", null,
            d => Where(d.Orders, o => Same(Str(o, "ShipTo.City"), "London") || Same(Str(o, "ShipTo.City"), "Berlin"))),
        ["a reference in another case in the query"] = (Filtering, "from Employees where ReportsTo = 'EMPLOYEES/2-a'", null, d => Where(d.Employees, e => Same(Str(e, "ReportsTo"), "employees/2-A"))),
        ["a deeper nested field"] = (Filtering, "from Companies where Contact.Title = 'owner'", null, d => Where(d.Companies, c => Same(Str(c, "Contact.Title"), "owner"))),
        ["a decimal literal"] = (Filtering, "from Products where PricePerUnit < 20.5", null, d => Where(d.Products, p => Num(p, "PricePerUnit") < 20.5)),
        ["startsWith or endsWith"] = (StartsWith, "from Employees where startsWith(LastName, 'd') or endsWith(LastName, 'N')", null,
            d => Where(d.Employees, e => Str(e, "LastName")!.StartsWith("d", StringComparison.OrdinalIgnoreCase) || Str(e, "LastName")!.EndsWith("n", StringComparison.OrdinalIgnoreCase))),
        ["two parameters"] = (Parameters, "from Orders where Freight > $min and ShipTo.Country = $country", new { min = 300, country = "France" },
            d => Where(d.Orders, o => Num(o, "Freight") > 300 && Same(Str(o, "ShipTo.Country"), "France"))),
        ["an array parameter over array elements"] = (Parameters, "from Orders where Lines[].Product in ($products)", new { products = new[] { "products/4-A", "PRODUCTS/5-a" } },
            d => Where(d.Orders, o => Lines(o).Any(l => Same(Str(l, "Product"), "products/4-A") || Same(Str(l, "Product"), "products/5-A")))),
        ["search, every word"] = (Search, "from Products where search(Name, 'queso cabrales', and)", null,
            d => Where(d.Products, p => Str(p, "Name")!.Split(' ').Any(w => Same(w, "queso")) && Str(p, "Name")!.Split(' ').Any(w => Same(w, "cabrales")))),
        ["search through array elements"] = (Search, "from Orders where search(Lines[].ProductName, 'marmalade')", null,
            d => Where(d.Orders, o => Lines(o).Any(l => Str(l, "ProductName")!.Split(' ').Any(w => Same(w, "marmalade"))))),
        ["id() and a field"] = (Rql, "from Orders where startsWith(id(), 'orders/1') and Freight > 500", null,
            d => Where(d.Orders, o => Num(o, "Freight") > 500).Where(id => id.StartsWith("orders/1", StringComparison.Ordinal))),
        ["an integer past 2^53, exactly"] = (Filtering, "from Orders where Tracking = 9007199254740993", null, d => Where(d.Orders, o => Long(o, "Tracking") == 9007199254740993)),
        ["2^53 itself, not its neighbour"] = (Filtering, "from Orders where Tracking = 9007199254740992", null, d => Where(d.Orders, o => Long(o, "Tracking") == 9007199254740992)),
        ["a range from past 2^53"] = (Filtering, "from Orders where Tracking > 9007199254740993", null, d => Where(d.Orders, o => Long(o, "Tracking") > 9007199254740993)),
        ["a range up to past 2^53"] = (Filtering, "from Orders where Tracking <= 9007199254740992", null, d => Where(d.Orders, o => Long(o, "Tracking") <= 9007199254740992)),
        ["a range under -2^53"] = (Filtering, "from Orders where Tracking < -9007199254740992", null, d => Where(d.Orders, o => Long(o, "Tracking") < -9007199254740992)),
        ["between integers sharing a double"] = (Filtering, "from Orders where Tracking between 4611686018427387905 and 4611686018427388927", null,
            d => Where(d.Orders, o => Long(o, "Tracking") is >= 4611686018427387905 and <= 4611686018427388927)),
        ["a small bound takes the big integers too"] = (Filtering, "from Orders where Tracking >= 0", null, d => Where(d.Orders, o => Long(o, "Tracking") >= 0)),
        ["long's largest"] = (Filtering, "from Orders where Tracking = 9223372036854775807", null, d => Where(d.Orders, o => Long(o, "Tracking") == long.MaxValue)),
        ["long's smallest and a half-open range"] = (Filtering, "from Orders where Tracking >= -9223372036854775808 and Tracking < -9007199254740993", null,
            d => Where(d.Orders, o => Long(o, "Tracking") < -9007199254740993)),
        ["in over integers past 2^53"] = (Filtering, "from Orders where Tracking in (9007199254740995, 4611686018427387905)", null,
            d => Where(d.Orders, o => Long(o, "Tracking") is 9007199254740995 or 4611686018427387905)),
        ["an integer parameter past 2^53"] = (Parameters, "from Orders where Tracking = $t", new { t = 9007199254740994L }, d => Where(d.Orders, o => Long(o, "Tracking") == 9007199254740994)),
        ["not equal past 2^53 takes missing too"] = (Filtering, "from Orders where Tracking != 9007199254740993", null, d => Where(d.Orders, o => Long(o, "Tracking") != 9007199254740993)),
        ["written with a fraction of zero"] = (Filtering, "from Orders where Tracking = 9007199254740993.0", null, d => Where(d.Orders, o => Long(o, "Tracking") == 9007199254740993)),
        ["comments"] = (Rql, "from Orders // every order\nwhere Freight > 990 /* the costly ones */", null, d => Where(d.Orders, o => Num(o, "Freight") > 990)),
    };

    public static IEnumerable<object[]> IdNames() => IdCases.Keys.Select(k => new object[] { k });

    private async Task<List<JsonElement>> ResultsAsync(string query, object? parameters = null, int pageSize = 1024)
    {
        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query, parameters, pageSize, waitForNonStaleResults = true, timeoutMs = 60_000 });
        Assert.True(r.IsSuccessStatusCode, $"{query}\n{await r.Content.ReadAsStringAsync()}");
        return (await r.JsonAsync()).GetProperty("results").EnumerateArray().ToList();
    }

    private static string IdOf(JsonElement result) => result.GetProperty("@metadata").GetProperty("@id").GetString()!;

    [Theory]
    [MemberData(nameof(IdNames))]
    public async Task A_query_from_the_docs_selects_what_ravendb_selects(string name)
    {
        var (_, query, parameters, expected) = IdCases[name];
        var want = expected(fx.Data).Order(StringComparer.Ordinal).ToList();
        Assert.NotEmpty(want);
        Assert.Equal(want, (await ResultsAsync(query, parameters)).Select(IdOf).Order(StringComparer.Ordinal).ToList());
    }

    public static IEnumerable<object[]> FormQueries() => RavenDocsFormCases.Cases.Keys.Select(k => new object[] { k });

    [Theory]
    [MemberData(nameof(FormQueries))]
    public async Task A_docs_form_over_each_field_selects_what_ravendb_selects(string query)
    {
        var (_, _, expected) = RavenDocsFormCases.Cases[query];
        var want = expected(fx.Data).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(want, (await ResultsAsync(query)).Select(IdOf).Order(StringComparer.Ordinal).ToList());
    }

    public static IEnumerable<object[]> SortQueries() => RavenDocsFormCases.Sorts.Select(s => new object[] { s.Query });

    [Theory]
    [MemberData(nameof(SortQueries))]
    public async Task A_docs_sort_over_each_field_comes_in_ravendb_order(string query)
    {
        var (_, _, collection, field, descending, numeric, skip, take) = RavenDocsFormCases.Sorts.Single(s => s.Query == query);
        var docs = RavenDocsFormCases.Of(fx.Data, collection).Select(d => d.Doc).Where(d => RavenDocsFormCases.Values(d, field).Count > 0).ToList();
        var got = await ResultsAsync(query);
        if (numeric)
        {
            var values = docs.Select(d => RavenDocsFormCases.Numbers(d, field).Single());
            Assert.Equal((descending ? values.OrderDescending() : values.Order()).Skip(skip).Take(take), got.Select(r => RavenDocsFormCases.Numbers(JsonNode.Parse(r.GetRawText())!.AsObject(), field).Single()));
        }
        else
        {
            // Strings sort by their lower-cased text (the exact field's term); values equal but for case may come in either order.
            var values = docs.Select(d => RavenDocsFormCases.Strings(d, field).Single().ToLowerInvariant());
            Assert.Equal((descending ? values.OrderDescending(StringComparer.Ordinal) : values.Order(StringComparer.Ordinal)).Skip(skip).Take(take),
                got.Select(r => RavenDocsFormCases.Strings(JsonNode.Parse(r.GetRawText())!.AsObject(), field).Single().ToLowerInvariant()));
        }
    }

    [Fact]
    public void The_suite_holds_at_least_300_queries_from_the_docs()
    {
        var theories = typeof(RavenDocsQueryTests).GetMethods().SelectMany(m => m.GetCustomAttributes(typeof(InlineDataAttribute), false)).Count();
        var total = IdCases.Count + RavenDocsFormCases.Cases.Count + RavenDocsFormCases.Sorts.Count + theories;
        Assert.True(total >= 300, $"{total} queries");
    }

    [Theory]
    [InlineData(Sorting, "from Orders order by Freight desc limit 10", "Freight", true, 10, 0)]
    [InlineData(Sorting, "from Orders as o order by o.Freight limit 10", "Freight", false, 10, 0)]
    [InlineData(Sorting, "from Products order by PricePerUnit as double desc", "PricePerUnit", true, 100, 0)]
    [InlineData(Paging, "from Orders where Freight > 100 order by Freight limit 5, 10", "Freight", false, 10, 5)]
    [InlineData(Paging, "from Orders order by Freight desc limit 10 offset 20", "Freight", true, 10, 20)]
    public async Task Sorted_and_paged_queries_from_the_docs_come_in_ravendb_order(string page, string query, string field, bool descending, int take, int skip)
    {
        _ = page;
        var all = (query.StartsWith("from Products", StringComparison.Ordinal) ? fx.Data.Products : fx.Data.Orders)
            .Where(d => !query.Contains("Freight > 100", StringComparison.Ordinal) || Num(d.Doc, "Freight") > 100)
            .Select(d => Num(d.Doc, field)!.Value);
        var want = (descending ? all.OrderDescending() : all.Order()).Skip(skip).Take(take).ToList();
        Assert.Equal(want, (await ResultsAsync(query)).Select(r => r.GetProperty(field).GetDouble()).ToList());
    }

    /// <summary>RavenDB's alphanumeric comparison, written from its description: runs of digits compare as numbers and come before text,
    /// text compares ignoring case, a value that is a prefix of the other comes first.</summary>
    internal static int Alphanumeric(string a, string b)
    {
        var x = System.Text.RegularExpressions.Regex.Matches(a, @"\d+|\D+").Select(m => m.Value).ToList();
        var y = System.Text.RegularExpressions.Regex.Matches(b, @"\d+|\D+").Select(m => m.Value).ToList();
        for (var i = 0; i < Math.Min(x.Count, y.Count); i++)
        {
            bool dx = char.IsAsciiDigit(x[i][0]), dy = char.IsAsciiDigit(y[i][0]);
            var c = (dx, dy) switch
            {
                (true, true) => System.Numerics.BigInteger.Parse(x[i]).CompareTo(System.Numerics.BigInteger.Parse(y[i])),
                (true, false) => -1,
                (false, true) => 1,
                _ => string.CompareOrdinal(x[i].ToLowerInvariant(), y[i].ToLowerInvariant()),
            };
            if (c != 0) return c;
        }
        return x.Count.CompareTo(y.Count);
    }

    [Theory]
    [InlineData("from Products order by Code as alphanumeric", "Code", false)]
    [InlineData("from Products order by Code as alphanumeric desc", "Code", true)]
    [InlineData("from Products as p order by p.QuantityPerUnit as alphanumeric", "QuantityPerUnit", false)]
    public async Task Alphanumeric_order_from_the_docs_puts_numbers_in_number_order(string query, string field, bool descending)
    {
        var values = fx.Data.Products.Select(p => Str(p.Doc, field)!).ToList();
        var want = descending ? values.Order(Comparer<string>.Create(Alphanumeric)).Reverse().ToList() : values.Order(Comparer<string>.Create(Alphanumeric)).ToList();
        var got = (await ResultsAsync(query)).Select(r => r.GetProperty(field).GetString()!).ToList();
        // Values the comparison calls equal (A01, a1) may come in either order, as in RavenDB: compare the order, not the spelling.
        Assert.Equal(want.Count, got.Count);
        for (var i = 0; i < want.Count; i++) Assert.True(Alphanumeric(want[i], got[i]) == 0, $"at {i}: {string.Join(", ", got)}\nwanted {string.Join(", ", want)}");
        Assert.Equal(values.Order(StringComparer.Ordinal), got.Order(StringComparer.Ordinal));
    }

    [Fact]
    public async Task Alphanumeric_order_pages_without_losing_or_repeating_a_document()
    {
        var all = (await ResultsAsync("from Orders order by ShipTo.City as alphanumeric, Freight desc")).Select(IdOf).ToList();
        var paged = new List<string>();
        for (var start = 0; start < all.Count; start += 70)
        {
            var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = "from Orders order by ShipTo.City as alphanumeric, Freight desc", start, pageSize = 70 });
            paged.AddRange((await r.JsonAsync()).GetProperty("results").EnumerateArray().Select(IdOf));
        }
        Assert.Equal(all, paged);
        Assert.Equal(fx.Data.Orders.Count, all.Distinct().Count());
    }

    [Fact]
    public async Task Alphanumeric_and_random_orders_stream_past_the_first_page_without_losing_or_repeating_a_document()
    {
        // A stream reads 1,000 results a page, continuing from the last one's cursor: 2,100 documents take three pages.
        var random = new Random(11);
        var tickets = Enumerable.Range(1, 2_100).Select(i => (Id: $"tickets/{i}", Code: $"{new[] { "T", "t", "TK-" }[random.Next(3)]}{random.Next(0, 400)}-{random.Next(0, 30)}")).ToList();
        foreach (var chunk in tickets.Chunk(500))
        {
            var put = await fx.Magpie.Http.BulkPutAsync(chunk.Select(t => (t.Id, "{\"Code\":\"" + t.Code + "\",\"@metadata\":{\"@collection\":\"Tickets\"}}")));
            Assert.True(put.IsSuccessStatusCode, await put.Content.ReadAsStringAsync());
        }
        await ResultsAsync("from Tickets order by Code as alphanumeric limit 1");
        async Task<List<JsonElement>> StreamAsync(string query)
        {
            var r = await fx.Magpie.Http.PostAsJsonAsync("streams/queries", new { query });
            Assert.True(r.IsSuccessStatusCode, await r.Content.ReadAsStringAsync());
            return (await r.Content.ReadAsStringAsync()).Split('\n', StringSplitOptions.RemoveEmptyEntries).Select(l => JsonDocument.Parse(l).RootElement).ToList();
        }

        var sorted = await StreamAsync("from Tickets order by Code as alphanumeric");
        var want = tickets.Select(t => t.Code).Order(Comparer<string>.Create(Alphanumeric)).ToList();
        Assert.Equal(tickets.Count, sorted.Select(IdOf).Distinct().Count());
        Assert.All(want.Zip(sorted.Select(r => r.GetProperty("Code").GetString()!)), p => Assert.True(Alphanumeric(p.First, p.Second) == 0, $"{p.First} vs {p.Second}"));

        var shuffled = (await StreamAsync("from Tickets order by random()")).Select(IdOf).ToList();
        Assert.Equal(tickets.Select(t => t.Id).Order(StringComparer.Ordinal), shuffled.Order(StringComparer.Ordinal));
        Assert.NotEqual(tickets.Select(t => t.Id).Order(StringComparer.Ordinal), shuffled);
    }

    [Fact]
    public async Task Order_by_random_with_a_seed_is_one_shuffle_of_every_document()
    {
        var ids = fx.Data.Orders.Select(o => o.Id).Order(StringComparer.Ordinal).ToList();
        var first = (await ResultsAsync("from Orders order by random('a seed')")).Select(IdOf).ToList();
        Assert.Equal(ids, first.Order(StringComparer.Ordinal));
        Assert.NotEqual(ids, first);
        Assert.Equal(first, (await ResultsAsync("from Orders order by random('a seed')")).Select(IdOf).ToList());
        Assert.NotEqual(first, (await ResultsAsync("from Orders order by random($s)", new { s = "another" })).Select(IdOf).ToList());
        // The same seed pages through the same shuffle.
        var second = await ResultsAsync("from Orders order by random('a seed') limit 50 offset 100");
        Assert.Equal(first.Skip(100).Take(50), second.Select(IdOf));
        // Without a seed: a shuffle of the matching documents, drawn per query.
        var unseeded = (await ResultsAsync("from Orders where Freight > 500 order by random()")).Select(IdOf).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(Where(fx.Data.Orders, o => Num(o, "Freight") > 500).Order(StringComparer.Ordinal), unseeded);
    }

    [Theory]
    [InlineData("from Orders where exists(Tracking) order by Tracking", false)]
    [InlineData("from Orders where exists(Tracking) order by Tracking desc", true)]
    [InlineData("from Orders where exists(Tracking) order by Tracking as long desc", true)]
    public async Task Integers_past_2_53_sort_in_their_exact_order(string query, bool descending)
    {
        var values = fx.Data.Orders.Select(o => Long(o.Doc, "Tracking")).OfType<long>().ToList();
        var want = descending ? values.OrderDescending().ToList() : values.Order().ToList();
        var got = (await ResultsAsync(query)).Select(r => long.Parse(r.GetProperty("Tracking").GetRawText().Replace(".0", ""), System.Globalization.CultureInfo.InvariantCulture)).ToList();
        Assert.Equal(want, got);
    }

    [Fact]
    public async Task Dates_sort_in_time_order()
    {
        var want = fx.Data.Orders.Select(o => Str(o.Doc, "OrderedAt")!).OrderDescending(StringComparer.Ordinal).Take(5).ToList();
        Assert.Equal(want, (await ResultsAsync("from Orders order by OrderedAt desc limit 5")).Select(r => r.GetProperty("OrderedAt").GetString()!).ToList());
    }

    [Fact]
    public async Task Group_by_queries_from_the_docs_equal_the_groups_of_the_data()
    {
        var orders = fx.Data.Orders.Select(o => o.Doc).ToList();
        // A group key is the value as written: references spelled in two cases are two keys (ids compare case-insensitively, values do not).
        var perCompany = orders.GroupBy(o => Str(o, "Company")!).ToDictionary(g => g.Key, g => (double)g.Count());
        Assert.Equal(perCompany, Groups(await ResultsAsync("from Orders group by Company select key() as Company, count()"), "Company", "Count"));

        var freightPerCountry = orders.GroupBy(o => Str(o, "ShipTo.Country") ?? "null").ToDictionary(g => g.Key, g => Math.Round(g.Sum(o => Num(o, "Freight")!.Value), 6));
        var got = Groups(await ResultsAsync("from Orders group by ShipTo.Country select ShipTo.Country as Country, sum(Freight) as Freight"), "Country", "Freight");
        Assert.Equal(freightPerCountry, got.ToDictionary(kv => kv.Key, kv => Math.Round(kv.Value, 6)));

        var linesPerProduct = orders.SelectMany(Lines).GroupBy(l => Str(l, "Product")!).ToDictionary(g => g.Key, g => (Count: (double)g.Count(), Quantity: g.Sum(l => Num(l, "Quantity")!.Value)));
        var products = await ResultsAsync("from Orders group by Lines[].Product select key() as Product, count(), sum(Lines[].Quantity) as Quantity");
        Assert.Equal(linesPerProduct, products.ToDictionary(r => r.GetProperty("Product").GetString()!, r => (r.GetProperty("Count").GetDouble(), r.GetProperty("Quantity").GetDouble())));

        // A document's own field beside a key through an array counts once per element (RavenDB's fan-out).
        var freightPerProduct = orders.SelectMany(o => Lines(o).Select(l => (Product: Str(l, "Product")!, Freight: Num(o, "Freight")!.Value)))
            .GroupBy(x => x.Product).ToDictionary(g => g.Key, g => Math.Round(g.Sum(x => x.Freight), 6));
        var fanned = Groups(await ResultsAsync("from Orders group by Lines[].Product select key() as Product, sum(Freight) as Freight"), "Product", "Freight");
        Assert.Equal(freightPerProduct, fanned.ToDictionary(kv => kv.Key, kv => Math.Round(kv.Value, 6)));

        var busy = orders.GroupBy(o => Str(o, "Employee")!).Where(g => g.Count() > 60).Select(g => (double)g.Count()).OrderDescending().ToList();
        Assert.Equal(busy, (await ResultsAsync("from Orders group by Employee where count() > 60 order by count() desc select key() as Employee, count()")).Select(r => r.GetProperty("Count").GetDouble()).ToList());
    }

    private static Dictionary<string, double> Groups(List<JsonElement> results, string key, string value) =>
        results.ToDictionary(r => r.GetProperty(key).GetString() ?? "null", r => r.GetProperty(value).GetDouble());

    [Fact]
    public async Task Projections_loads_and_includes_from_the_docs_follow_references_in_any_case()
    {
        var companies = fx.Data.Companies.ToDictionary(c => c.Id, c => Str(c.Doc, "Name"), StringComparer.OrdinalIgnoreCase);
        var costly = fx.Data.Orders.Where(o => Num(o.Doc, "Freight") > 900).ToList();
        var loaded = await ResultsAsync("from Orders as o where o.Freight > 900 load o.Company as c select { Name: c.Name, Freight: o.Freight }");
        Assert.Equal(costly.Select(o => companies[Str(o.Doc, "Company")!]).Order(StringComparer.Ordinal), loaded.Select(r => r.GetProperty("Name").GetString()).Order(StringComparer.Ordinal));
        Assert.Equal(costly.Select(o => o.Id).Order(StringComparer.Ordinal), loaded.Select(IdOf).Order(StringComparer.Ordinal));

        var r = await fx.Magpie.Http.PostAsJsonAsync("queries", new { query = "from Orders where Freight > 900 include Company", pageSize = 1024, waitForNonStaleResults = true });
        var includes = (await r.JsonAsync()).GetProperty("includes").EnumerateObject().Select(p => p.Name.ToLowerInvariant()).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(costly.Select(o => Str(o.Doc, "Company")!.ToLowerInvariant()).Distinct().Order(StringComparer.Ordinal), includes);

        var fields = await ResultsAsync("from Employees where FirstName = 'Nancy' select FirstName, Address.City as City");
        var nancy = fx.Data.Employees.Single(e => Str(e.Doc, "FirstName") == "Nancy");
        Assert.Equal((Str(nancy.Doc, "FirstName"), Str(nancy.Doc, "Address.City"), nancy.Id), (fields[0].GetProperty("FirstName").GetString(), fields[0].GetProperty("City").GetString(), IdOf(fields[0])));
    }

    [Fact]
    public async Task Select_distinct_from_the_docs_gives_each_value_once()
    {
        var want = fx.Data.Orders.Select(o => Str(o.Doc, "ShipTo.Country")).Distinct().Order(StringComparer.Ordinal).ToList();
        var got = (await ResultsAsync("from Orders select distinct ShipTo.Country")).Select(r => r.GetProperty("ShipTo.Country") is { ValueKind: JsonValueKind.String } s ? s.GetString() : null).Order(StringComparer.Ordinal).ToList();
        Assert.Equal(want, got);
    }

    [Theory]
    [InlineData(Filtering, "from Orders where Tracking = 9007199254740993.5", "more digits than Magpie keeps")]
    [InlineData(Filtering, "from Orders where Tracking = 9223372036854775809", "more digits than Magpie keeps")]
    [InlineData(GroupBy, "from Orders group by Lines[].Product, Tags[] select count()", "must go through the same one")]
    public async Task What_magpie_cannot_answer_exactly_is_refused_naming_it(string page, string query, string expected)
    {
        _ = page;
        await HttpJson.AssertProblem(await fx.Magpie.Http.PostAsJsonAsync("queries", new { query }), HttpStatusCode.BadRequest, expected);
    }
}
