using System.Text.Json;
using Acornima.Ast;
using Magpie.Contracts.Indexes;

namespace Magpie.Indexer.Maps;

/// <summary>
/// A map that only copies fields — <c>map('Posts', p =&gt; ({ Title: p.Title, Owner: p.Owner.Name, Key: id(p) }))</c> — read
/// straight from the document's JSON, without the JS engine (RavenDB's auto indexes work this way). It gives exactly the
/// entry the engine would: a field the document lacks is left out, null stays null, numbers are doubles (integers past 2^53
/// are kept exactly, as 64-bit integers, where the engine would round them — RavenDB's auto indexes keep them too), arrays of plain
/// values are lists. Whatever it can't answer that way for a document (an object value, an array holding one, a member of
/// something that is not an object, a number outside double's range, a too-deep array) it declines, and the engine maps that
/// document: <see cref="TryMap"/> returns null.
/// </summary>
internal sealed partial class FieldProjection
{
    /// <summary>Output field → the member path read from the document (empty: the document id).</summary>
    private readonly (string Field, string[] Path)[] _fields;

    private FieldProjection((string, string[])[] fields) => _fields = fields;

    /// <summary>
    /// Names every object has through its prototype (<c>p.constructor</c> is a function even when the document has no such
    /// field): a projection reading one of them is left to the engine.
    /// </summary>
    private static readonly HashSet<string> Inherited =
    [
        "constructor", "__proto__", "__defineGetter__", "__defineSetter__", "__lookupGetter__", "__lookupSetter__", "hasOwnProperty",
        "isPrototypeOf", "propertyIsEnumerable", "toLocaleString", "toString", "valueOf",
    ];

    /// <summary>The projection a parsed map source is, or null when it is anything more than <c>map('C', p =&gt; ({ Name: p.a.b, … }))</c>.</summary>
    public static FieldProjection? Of(Script script, string text)
    {
        if (AutoMap(text) is { } auto) return auto;
        if (script.Body is not [ExpressionStatement { Expression: CallExpression call }]
            || call.Callee is not Identifier { Name: "map" }
            || call.Arguments is not [StringLiteral, ArrowFunctionExpression { Async: false, Params: [Identifier parameter] } arrow]
            || arrow.Body is not ObjectExpression literal)
            return null;
        var fields = new List<(string, string[])>();
        foreach (var node in literal.Properties)
        {
            // Identifier keys only: numeric-looking keys would be reordered by the engine, computed ones need it.
            if (node is not ObjectProperty { Computed: false, Shorthand: false, Method: false, Kind: PropertyKind.Init, Key: Identifier key } property)
                return null;
            if (fields.Any(f => f.Item1 == key.Name)) return null;
            if (PathOf(property.Value, parameter.Name) is not { } path) return null;
            fields.Add((key.Name, path));
        }
        return new FieldProjection([.. fields]);
    }

    /// <summary>
    /// An automatic index's map (<c>return { 'F': get(d, 'F'), … }</c> over <see cref="AutoMaps.Get"/>, without vectors), read as
    /// the engine would run it, or null. Recognised by its whole text, rebuilt from the fields found: nothing else matches.
    /// </summary>
    private static FieldProjection? AutoMap(string text)
    {
        if (AutoMapText().Match(text) is not { Success: true } m) return null;
        var fields = m.Groups["field"].Captures.Select(c => c.Value).ToArray();
        var paths = m.Groups["path"].Captures.Select(c => c.Value).ToArray();
        if (!fields.SequenceEqual(paths) || fields.Distinct(StringComparer.Ordinal).Count() != fields.Length) return null;
        var rebuilt = $"map('{m.Groups["collection"].Value}', function (d) {{ {AutoMaps.Get}return {{ {string.Join(", ", fields.Select(f => $"'{f}': get(d, '{f}')"))} }}; }})";
        if (rebuilt != text) return null;
        return new FieldProjection([.. fields.Select(f => (f, f.Split('.')))]) { _auto = true };
    }

    [System.Text.RegularExpressions.GeneratedRegex(@"^map\('(?<collection>[^']*)', function \(d\) \{ .*?return \{ (?:'(?<field>[^']+)': get\(d, '(?<path>[^']+)'\)(?:, )?)* \}; \}\)$", System.Text.RegularExpressions.RegexOptions.Singleline)]
    private static partial System.Text.RegularExpressions.Regex AutoMapText();

    /// <summary>Whether the fields are read as <see cref="AutoMaps.Get"/> reads a path (through arrays, <c>[]</c> flattening) rather than as plain members.</summary>
    private bool _auto;

    /// <summary>
    /// <see cref="AutoMaps.Get"/> over the JSON: each step reads the name from every value (from each object element of an array),
    /// a <c>[]</c> step flattens arrays one level; missing values drop out. Null (decline) where the engine would read something
    /// JSON has no notion of: a member of a string, number or boolean, or a name every object inherits.
    /// </summary>
    private static bool TryGet(JsonElement document, string[] steps, bool anyEvery, int maxDepth, out bool found, out object? value)
    {
        found = false;
        value = null;
        var values = new List<JsonElement?> { document };
        foreach (var step in steps)
        {
            var every = step.EndsWith("[]", StringComparison.Ordinal);
            var name = every ? step[..^2] : step;
            if (Inherited.Contains(name)) return false;
            var next = new List<JsonElement?>();
            foreach (var v in values)
            {
                if (v is not { } e || e.ValueKind == JsonValueKind.Null) continue;
                if (e.ValueKind == JsonValueKind.Array)
                {
                    foreach (var item in e.EnumerateArray())
                        if (item.ValueKind == JsonValueKind.Object) next.Add(item.TryGetProperty(name, out var p) ? p : null);
                }
                else if (e.ValueKind == JsonValueKind.Object) next.Add(e.TryGetProperty(name, out var p) ? p : null);
                else return false;
            }
            if (every)
            {
                var flat = new List<JsonElement?>();
                foreach (var x in next)
                    if (x is { ValueKind: JsonValueKind.Array } array) foreach (var item in array.EnumerateArray()) flat.Add(item);
                    else flat.Add(x);
                next = flat;
            }
            values = next;
        }
        var present = values.OfType<JsonElement>().ToList();
        if (present.Count == 0) return true;
        found = true;
        if (!anyEvery && present.Count == 1) return TryValue(present[0], 1, maxDepth, out value);
        var list = new List<object?>(present.Count);
        foreach (var item in present)
        {
            if (!TryValue(item, 2, maxDepth, out var v)) return false;
            list.Add(v);
        }
        value = list;
        return true;
    }

    /// <summary><c>p.a.b</c> → [a, b]; <c>id(p)</c> → []; anything else → null.</summary>
    private static string[]? PathOf(Node value, string parameter)
    {
        if (value is CallExpression { Callee: Identifier { Name: "id" }, Arguments: [Identifier argument] } && argument.Name == parameter) return [];
        var path = new List<string>();
        for (var node = value; ; )
        {
            switch (node)
            {
                case MemberExpression { Computed: false, Optional: false, Property: Identifier member } m when !Inherited.Contains(member.Name):
                    path.Insert(0, member.Name);
                    node = m.Object;
                    continue;
                case Identifier root when root.Name == parameter && path.Count > 0:
                    return [.. path];
                default:
                    return null;
            }
        }
    }

    /// <summary>The entry for <paramref name="document"/>, or null where the engine must map it.</summary>
    public MappedEntry? TryMap(JsonElement document, string id, int maxDepth)
    {
        var values = new List<KeyValuePair<string, object?>>(_fields.Length);
        foreach (var (field, path) in _fields)
        {
            if (_auto)
            {
                if (!TryGet(document, path, field.Contains("[]", StringComparison.Ordinal), maxDepth, out var found, out var got)) return null;
                if (found) values.Add(new(field, got));
                continue;
            }
            if (path.Length == 0) { values.Add(new(field, id)); continue; }
            var current = document;
            var missing = false;
            for (var i = 0; i < path.Length; i++)
            {
                // A member of undefined or null throws in the engine, of a string or array reads its prototype: its call.
                if (current.ValueKind != JsonValueKind.Object) return null;
                if (!current.TryGetProperty(path[i], out current))
                {
                    if (i < path.Length - 1) return null;
                    missing = true;
                    break;
                }
            }
            if (missing) continue;   // undefined: the engine leaves the field out
            if (!TryValue(current, 1, maxDepth, out var value)) return null;
            values.Add(new(field, value));
        }
        return new MappedEntry(values);
    }

    /// <summary>The number as a 64-bit integer, however written (<c>9007199254740993</c>, <c>9007199254740993.0</c>, <c>9.007199254740993e15</c>); null if it is none.</summary>
    private static long? ExactInteger(JsonElement e) =>
        e.TryGetInt64(out var l) ? l
        : e.TryGetDecimal(out var m) && m == decimal.Truncate(m) && m >= long.MinValue && m <= long.MaxValue ? (long)m : null;

    private static bool TryValue(JsonElement e, int depth, int maxDepth, out object? value)
    {
        value = null;
        if (depth > maxDepth) return false;
        switch (e.ValueKind)
        {
            case JsonValueKind.String: value = e.GetString(); return true;
            case JsonValueKind.Number:
                if (!e.TryGetDouble(out var d) || !double.IsFinite(d)) return false;
                // Past 2^53 a double rounds the integer to a neighbour: the integer is kept as written (the engine would see the double).
                value = Math.Abs(d) >= Contracts.Indexes.EntryFields.ExactIntegers.Limit && ExactInteger(e) is { } exact ? (object)exact : d;
                return true;
            case JsonValueKind.True: value = true; return true;
            case JsonValueKind.False: value = false; return true;
            case JsonValueKind.Null: return true;
            case JsonValueKind.Array:
                var list = new List<object?>(e.GetArrayLength());
                foreach (var item in e.EnumerateArray())
                {
                    if (!TryValue(item, depth + 1, maxDepth, out var v)) return false;
                    list.Add(v);
                }
                value = list;
                return true;
            default: return false;   // objects are indexed as the engine serializes them
        }
    }
}
