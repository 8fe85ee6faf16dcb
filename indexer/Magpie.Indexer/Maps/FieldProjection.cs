using System.Text.Json;
using Acornima.Ast;

namespace Magpie.Indexer.Maps;

/// <summary>
/// A map that only copies fields — <c>map('Posts', p =&gt; ({ Title: p.Title, Owner: p.Owner.Name, Key: id(p) }))</c> — read
/// straight from the document's JSON, without the JS engine (RavenDB's auto indexes work this way). It gives exactly the
/// entry the engine would: a field the document lacks is left out, null stays null, numbers are doubles, arrays of plain
/// values are lists. Whatever it can't answer that way for a document (an object value, an array holding one, a member of
/// something that is not an object, a number outside double's range, a too-deep array) it declines, and the engine maps that
/// document: <see cref="TryMap"/> returns null.
/// </summary>
internal sealed class FieldProjection
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
    public static FieldProjection? Of(Script script)
    {
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

    private static bool TryValue(JsonElement e, int depth, int maxDepth, out object? value)
    {
        value = null;
        if (depth > maxDepth) return false;
        switch (e.ValueKind)
        {
            case JsonValueKind.String: value = e.GetString(); return true;
            case JsonValueKind.Number:
                if (!e.TryGetDouble(out var d) || !double.IsFinite(d)) return false;
                value = d;
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
