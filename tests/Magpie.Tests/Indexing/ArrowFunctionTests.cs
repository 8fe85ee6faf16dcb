using Jint;
using Magpie.Scripting;

namespace Magpie.Tests.Indexing;

/// <summary>RavenDB's arrow-function index syntax, rewritten to ES5 and run by the real Jint 2 engine.</summary>
public sealed class ArrowFunctionTests
{
    private static string Run(string script) => new Engine().Execute(ArrowFunctions.ToEs5(script)).GetCompletionValue().ToString();

    [Theory]
    [InlineData("[1, 2, 3].map(x => x * 2).join(',')", "2,4,6")]
    [InlineData("[1, 2, 3].map((x, i) => x * i).join(',')", "0,2,6")]
    [InlineData("(() => 42)()", "42")]
    [InlineData("[1, 2].map(x => { var y = x + 1; return y * 10; }).join(',')", "20,30")]
    [InlineData("JSON.stringify([{ A: 1, T: ['X', 'Y'] }].map(p => ({ A: p.A, T: p.T.map(t => t.toLowerCase()) })))", """[{"A":1,"T":["x","y"]}]""")]
    [InlineData("var o = { f: x => x + 1, g: 2 }; o.f(o.g)", "3")]
    [InlineData("var o = { v: 5, f: function () { return [1].map(x => this.v + x)[0]; } }; o.f()", "6")]
    [InlineData("'a => b' + \" => \" + /=>/.source // => in a comment\n", "a => b => =>")]
    [InlineData("/* => */ [3].map(n => n / 3 / 1)[0]", "1")]
    [InlineData("var add = a => b => a + b; add(2)(3)", "5")]
    [InlineData("[[1, 2], [3]].map(xs => xs.filter(x => x > 1).length).join(',')", "1,1")]
    public void Arrow_functions_behave_as_in_ES2015(string script, string expected) => Assert.Equal(expected, Run(script));

    [Fact]
    public void Scripts_without_arrows_are_left_alone_and_lines_keep_their_numbers()
    {
        const string es5 = "var a = 1;\n// comment\nfunction f(x) { return x / 2; }";
        Assert.Equal(es5, ArrowFunctions.ToEs5(es5));
        var rewritten = ArrowFunctions.ToEs5("map('Posts', p => ({\n  A: p.A,\n  B: p.B\n}))");
        Assert.Equal(4, rewritten.Split('\n').Length);
    }

    [Fact]
    public void Syntax_it_cannot_take_is_refused_with_the_position()
    {
        var template = Assert.Throws<ScriptSyntaxException>(() => ArrowFunctions.ToEs5("var a = 1;\nvar s = `x${a}`;"));
        Assert.Equal((2, 9), (template.Line, template.Column));
        Assert.Contains("template literals", template.Message);
        var dangling = Assert.Throws<ScriptSyntaxException>(() => ArrowFunctions.ToEs5("var f = 1 + => 2;"));
        Assert.Contains("parameter", dangling.Message);
        Assert.Throws<ScriptSyntaxException>(() => ArrowFunctions.ToEs5("var s = 'unclosed;"));
    }
}
