using Acornima;
using Acornima.Ast;
using Magpie.Scripting;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// The PUT-time check of a map/reduce definition: the reduce runs again over its own results, so its output
/// must have every field the maps output. Read from the scripts' syntax trees — the object literal a map's
/// function returns, and the one the aggregate returns; a function that builds its result another way
/// can't be checked before it runs, and passes.
/// </summary>
public static class ReduceShape
{
    /// <summary>Throws <see cref="ScriptSyntaxException"/> naming the first map field the reduce output lacks.</summary>
    public static void Check(IReadOnlyList<string> maps, string reduce)
    {
        if (ReturnedFields(Argument(Single(reduce), "aggregate", 0)) is not { } reduced) return;
        for (var i = 0; i < maps.Count; i++)
        {
            if (ReturnedFields(Argument(Single(maps[i]), "map", 1)) is not { } mapped) continue;
            foreach (var field in mapped.Where(f => !reduced.Contains(f)))
                throw new ScriptSyntaxException(
                    $"the reduce output has no field '{field}', which maps[{i}] outputs: the reduce runs again over its own results, so it must return every map field", 1, 1);
        }
    }

    private static Expression? Single(string script)
    {
        var program = new Parser().ParseScript(script);
        return program.Body is [ExpressionStatement s] ? s.Expression : null;
    }

    /// <summary>Argument <paramref name="index"/> of the call to <paramref name="function"/> (<c>map(…)</c> or <c>….aggregate(…)</c>).</summary>
    private static Expression? Argument(Expression? e, string function, int index)
    {
        if (e is not CallExpression call) return null;
        var named = call.Callee switch
        {
            Identifier id => id.Name == function,
            MemberExpression { Computed: false, Property: Identifier p } => p.Name == function,
            _ => false,
        };
        return named ? call.Arguments.ElementAtOrDefault(index) : null;
    }

    /// <summary>The property names of the object literal a function returns, or null when that can't be read off its text.</summary>
    private static HashSet<string>? ReturnedFields(Node? e)
    {
        var returned = e switch
        {
            ArrowFunctionExpression { Body: Expression body } => body,
            IFunction { Body: FunctionBody { Body: var statements } } => statements.OfType<ReturnStatement>().ToList() is [{ Argument: var argument }] ? argument : null,
            _ => null,
        };
        if (returned is not ObjectExpression literal || literal.Properties.Any(p => p is not Property { Computed: false })) return null;
        return literal.Properties.Cast<Property>().Select(p => p.Key switch
        {
            Identifier id => id.Name,
            Literal l => l.Value?.ToString() ?? "",
            _ => "",
        }).ToHashSet(StringComparer.Ordinal);
    }
}
