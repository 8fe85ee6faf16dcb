using System.Collections.Concurrent;
using Magpie.Query.Rql;
using Magpie.Scripting;

namespace Magpie.Query.Projections;

/// <summary>
/// Projections kept between queries: a sandbox with its built-ins frozen and the script parsed costs milliseconds to make,
/// more than projecting a page. A query rents one for its page and returns it; one in use is never shared (a projection runs
/// one result at a time). At most <see cref="MaxScripts"/> scripts and <see cref="PerScript"/> idle projections each are kept.
/// </summary>
public static class ScriptProjectionPool
{
    public const int MaxScripts = 128, PerScript = 8;

    private static readonly ConcurrentDictionary<string, ConcurrentBag<ScriptProjection>> Idle = new();

    public static ScriptProjection Rent(RqlQuery query, ScriptLimits limits) =>
        Idle.TryGetValue(ScriptProjection.KeyOf(query), out var bag) && bag.TryTake(out var projection) ? projection : new ScriptProjection(query, limits);

    public static void Return(RqlQuery query, ScriptProjection projection)
    {
        // Many different scripts: start over rather than keep them all.
        if (Idle.Count >= MaxScripts) Idle.Clear();
        var bag = Idle.GetOrAdd(ScriptProjection.KeyOf(query), _ => []);
        if (bag.Count < PerScript) bag.Add(projection);
    }
}
