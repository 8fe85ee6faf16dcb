namespace Magpie.Contracts.Indexes;

/// <summary>
/// What the automatic indexes' maps are made of, shared by the query side (which writes them) and the indexer (which reads an
/// automatic map's fields straight from the JSON instead of running it, as RavenDB's auto indexes do: integers stay exact).
/// </summary>
public static class AutoMaps
{
    /// <summary>
    /// The auto maps' reader of a dotted path, as the query side's <c>Rql.DocumentPaths</c> reads one: through arrays (each
    /// element's property; <c>Lines[].Product</c> flattens), undefined where nothing is there (so <c>exists()</c> tells a missing
    /// field from null), the value where there is one, an array where the path found several.
    /// </summary>
    public const string Get =
        "/* auto v2 */ function get(o, path) { var values = [o]; var steps = path.split('.'); " +
        "for (var i = 0; i < steps.length; i++) { var every = steps[i].endsWith('[]'); var name = every ? steps[i].slice(0, -2) : steps[i]; var next = []; " +
        "for (var v of values) { if (v === null || v === undefined) continue; " +
        "if (Array.isArray(v)) { for (var e of v) if (e !== null && typeof e === 'object' && !Array.isArray(e)) next.push(e[name]); } else next.push(v[name]); } " +
        "if (every) next = [].concat(...next.map(x => Array.isArray(x) ? x : [x])); values = next; } " +
        "values = values.filter(x => x !== undefined); if (values.length === 0) return undefined; " +
        "return path.indexOf('[]') >= 0 || values.length > 1 ? values : values[0]; } ";
}
