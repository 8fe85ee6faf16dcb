using Jint.Parser.Ast;
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
        var program = new Jint.Parser.JavaScriptParser().Parse(ArrowFunctions.ToEs5(script));
        return program.Body.Count == 1 && program.Body.First() is ExpressionStatement s ? s.Expression : null;
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
    private static HashSet<string>? ReturnedFields(Expression? e)
    {
        // An arrow rewritten to ES5 is (function (x) { return …; }).bind(this).
        if (e is CallExpression { Callee: MemberExpression { Object: FunctionExpression bound, Property: Identifier { Name: "bind" } } }) e = bound;
        if (e is not FunctionExpression { Body: BlockStatement body }) return null;
        var returns = body.Body.OfType<ReturnStatement>().ToList();
        if (returns is not [{ Argument: ObjectExpression literal }]) return null;
        return literal.Properties.Select(p => p.Key.GetKey()).ToHashSet(StringComparer.Ordinal);
    }
}
