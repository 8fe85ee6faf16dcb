using System.Text.Json;
using System.Text.Json.Nodes;

namespace Magpie.Tests.Queries.Conformance.Northwind;

/// <summary>
/// A Northwind-like dataset shaped as RavenDB's sample (companies, employees, products, orders with lines), generated from a
/// seed with what real data has: nulls and missing fields, references written in another case than the ids they name,
/// unicode, numbers as integers and doubles. The documents are <see cref="JsonObject"/>s: the expected answers are computed
/// from these same objects in the tests, never by Magpie.
/// </summary>
public sealed class NorthwindData
{
    public List<(string Id, JsonObject Doc)> Companies { get; } = [];
    public List<(string Id, JsonObject Doc)> Employees { get; } = [];
    public List<(string Id, JsonObject Doc)> Products { get; } = [];
    public List<(string Id, JsonObject Doc)> Orders { get; } = [];

    public IEnumerable<(string Id, JsonObject Doc)> All => Companies.Concat(Employees).Concat(Products).Concat(Orders);

    private static readonly string[] Cities = ["London", "Paris", "Berlin", "Lyon", "Москва", "São Paulo", "Seattle", "München", "Tōkyō", "Oslo"];
    private static readonly Dictionary<string, string> CountryOf = new()
    {
        ["London"] = "UK", ["Paris"] = "France", ["Berlin"] = "Germany", ["Lyon"] = "France", ["Москва"] = "Russia",
        ["São Paulo"] = "Brazil", ["Seattle"] = "USA", ["München"] = "Germany", ["Tōkyō"] = "Japan", ["Oslo"] = "Norway",
    };
    private static readonly string[] Words = ["Alfreds", "Ana", "Antonio", "Around", "Berglunds", "Blauer", "Blondel", "Bólido", "Bon", "Bottom", "Chop", "Consolidated", "Drachenblut", "Du", "Eastern", "Ernst", "Familia", "Folk", "France", "Frankenversand"];
    private static readonly string[] ProductNames = ["Chai", "Chang", "Aniseed Syrup", "Chef Anton's Cajun Seasoning", "Grandma's Boysenberry Spread", "Uncle Bob's Organic Dried Pears", "Northwoods Cranberry Sauce", "Mishi Kobe Niku", "Ikura", "Queso Cabrales", "Queso Manchego La Pastora", "Konbu", "Tofu", "Genen Shouyu", "Pavlova", "Alice Mutton", "Carnarvon Tigers", "Teatime Chocolate Biscuits", "Sir Rodney's Marmalade", "Sir Rodney's Scones"];
    public static readonly long[] TrackingNumbers =
    [
        9007199254740990, 9007199254740991, 9007199254740992, 9007199254740993, 9007199254740994, 9007199254740995,
        -9007199254740992, -9007199254740993, -9007199254740994, 4611686018427387904, 4611686018427387905, 4611686018427388927,
        4611686018427388928, long.MaxValue, long.MaxValue - 1, long.MinValue, 42, -7, 0,
    ];
    private static readonly string[] Codes = ["SKU", "sku", "SKU-0", "A", "b", "Ä", "", "x"];
    private static readonly string[] Titles = ["Sales Representative", "Vice President, Sales", "Sales Manager", "Inside Sales Coordinator"];

    public NorthwindData(int seed = 7, int orders = 600)
    {
        var random = new Random(seed);
        for (var i = 1; i <= 30; i++)
        {
            var city = Cities[random.Next(Cities.Length)];
            var doc = new JsonObject
            {
                ["Name"] = $"{Words[random.Next(Words.Length)]} {Words[random.Next(Words.Length)]}{(i % 7 == 0 ? " Ltd" : "")}",
                ["Contact"] = new JsonObject { ["Name"] = $"{Words[random.Next(Words.Length)]} {i}", ["Title"] = i % 3 == 0 ? "Owner" : "Sales Agent" },
                ["Address"] = new JsonObject { ["City"] = city, ["Country"] = CountryOf[city] },
                ["Phone"] = i % 5 == 0 ? null : $"030-{random.Next(1000000, 9999999)}",
                ["@metadata"] = new JsonObject { ["@collection"] = "Companies" },
            };
            if (i % 4 != 0) doc["Fax"] = $"030-{random.Next(1000000, 9999999)}";   // missing on some
            Companies.Add(($"companies/{i}-A", doc));
        }
        for (var i = 1; i <= 9; i++)
        {
            var city = Cities[random.Next(Cities.Length)];
            Employees.Add(($"employees/{i}-A", new JsonObject
            {
                ["FirstName"] = new[] { "Nancy", "Andrew", "Janet", "Margaret", "Steven", "Michael", "Robert", "Laura", "Anne" }[i - 1],
                ["LastName"] = new[] { "Davolio", "Fuller", "Leverling", "Peacock", "Buchanan", "Suyama", "King", "Callahan", "Dodsworth" }[i - 1],
                ["Title"] = i == 2 ? "Vice President, Sales" : Titles[random.Next(Titles.Length)],
                ["Address"] = new JsonObject { ["City"] = city, ["Country"] = CountryOf[city] },
                // Andrew reports to no one (null); Janet has no ReportsTo at all; the others report to Andrew.
                ["ReportsTo"] = i == 2 ? null : "employees/2-A",
                ["Notes"] = i % 2 == 0 ? "Fluent in French and German." : "Holds a BA in psychology.",
                ["@metadata"] = new JsonObject { ["@collection"] = "Employees" },
            }));
            if (i == 3) Employees[^1].Doc.Remove("ReportsTo");
        }
        for (var i = 1; i <= ProductNames.Length; i++)
        {
            var price = i % 3 == 0 ? random.Next(5, 100) : Math.Round(random.NextDouble() * 95 + 5, 2);
            Products.Add(($"products/{i}-A", new JsonObject
            {
                ["Name"] = ProductNames[i - 1],
                ["Supplier"] = $"suppliers/{1 + i % 5}-A",
                ["Category"] = $"categories/{1 + i % 4}-A",
                ["PricePerUnit"] = price,
                ["UnitsInStock"] = i % 6 == 0 ? 0 : random.Next(1, 120),
                ["Discontinued"] = i % 8 == 0,
                // Text with numbers in it, for alphanumeric sorting (Northwind's own field, and codes of mixed case and length).
                ["QuantityPerUnit"] = $"{random.Next(1, 40)} boxes x {random.Next(1, 30)} bags",
                ["Code"] = $"{Codes[random.Next(Codes.Length)]}{random.Next(0, 120)}{(i % 5 == 0 ? "b" : "")}",
                ["@metadata"] = new JsonObject { ["@collection"] = "Products" },
            }));
        }
        var start = new DateTime(1996, 7, 4, 0, 0, 0, DateTimeKind.Utc);
        for (var i = 1; i <= orders; i++)
        {
            var company = random.Next(1, Companies.Count + 1);
            var city = Cities[random.Next(Cities.Length)];
            var lines = new JsonArray();
            foreach (var p in Enumerable.Range(1, ProductNames.Length).OrderBy(_ => random.Next()).Take(random.Next(1, 5)))
                lines.Add(new JsonObject
                {
                    ["Product"] = $"products/{p}-A",
                    ["ProductName"] = ProductNames[p - 1],
                    ["PricePerUnit"] = Products[p - 1].Doc["PricePerUnit"]!.DeepClone(),
                    ["Quantity"] = random.Next(1, 60),
                    ["Discount"] = random.Next(4) == 0 ? 0.15 : 0,
                });
            var order = new JsonObject
            {
                // Every 9th order refers to its company in another case than the company's id: ids compare case-insensitively.
                ["Company"] = i % 9 == 0 ? $"Companies/{company}-a" : $"companies/{company}-A",
                ["Employee"] = $"employees/{random.Next(1, 10)}-A",
                ["OrderedAt"] = start.AddDays(i * 0.7).ToString("yyyy-MM-ddTHH:mm:ss.fffffff"),
                ["ShipTo"] = new JsonObject { ["City"] = city, ["Country"] = CountryOf[city] },
                ["Freight"] = Math.Round(random.NextDouble() * 1000, 2),
                ["Lines"] = lines,
                ["@metadata"] = new JsonObject { ["@collection"] = "Orders" },
            };
            if (i % 50 == 0) order["ShipTo"] = null;
            // A 64-bit tracking number: integers around 2^53 (where neighbours share a double), near 2^62 (1,024 to a double) and the
            // ends of long; one written with a fraction of zero; missing on some.
            if (i % 7 != 0) order["Tracking"] = i % 11 == 0 ? JsonValue.Create(9007199254740993.0m) : JsonValue.Create(TrackingNumbers[i * 5 % TrackingNumbers.Length]);
            Orders.Add(($"orders/{i}-A", order));
        }
    }

    // What a test reads of a document, as RavenDB's indexes read it (missing and null both give null).
    public static string? Str(JsonObject d, string path) => Node(d, path) is JsonValue v && v.TryGetValue<string>(out var s) ? s : null;
    public static double? Num(JsonObject d, string path) => Node(d, path) is JsonValue v && v.GetValueKind() == JsonValueKind.Number
        ? double.Parse(v.ToJsonString(), System.Globalization.CultureInfo.InvariantCulture) : null;
    /// <summary>A number that is an integer, exactly (however it was written); null for anything else.</summary>
    public static long? Long(JsonObject d, string path) => Node(d, path) is JsonValue v && v.GetValueKind() == JsonValueKind.Number
        && decimal.TryParse(v.ToJsonString(), System.Globalization.NumberStyles.Float, System.Globalization.CultureInfo.InvariantCulture, out var m) && m == decimal.Truncate(m) ? (long)m : null;
    public static bool Has(JsonObject d, string path) => path.Split('.') is var steps && steps.SkipLast(1).Aggregate((JsonNode?)d, (n, s) => n is JsonObject o ? o[s] : null) is JsonObject parent && parent.ContainsKey(steps[^1]);
    public static JsonNode? Node(JsonObject d, string path) => path.Split('.').Aggregate((JsonNode?)d, (n, s) => n is JsonObject o ? o[s] : null);
    public static IEnumerable<JsonObject> Lines(JsonObject order) => order["Lines"]!.AsArray().Select(l => l!.AsObject());

    /// <summary>RavenDB compares strings in auto indexes case-insensitively (<c>where Name = 'chai'</c> finds "Chai").</summary>
    public static bool Same(string? a, string? b) => a is not null && b is not null && string.Equals(a, b, StringComparison.OrdinalIgnoreCase);

    public static string Json(JsonObject d) => d.ToJsonString(new JsonSerializerOptions { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping });
}
