using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Deploy;

/// <summary>
/// Namespaces are layers: within a project, no namespace may reach itself again through the types it uses (Rql below
/// projections, facets and shards; the SQL engine above the wire protocol). A reference counts when a file names a type
/// another namespace declares and can see it: its own namespace's parents, a <c>using</c>, or a qualified name.
/// </summary>
[Trait("Category", "Fast")]
public sealed partial class NamespaceCycleTests
{
    public static TheoryData<string> Projects() =>
    [
        "common/Magpie.Contracts", "common/Magpie.Kafka", "common/Magpie.Scripting", "common/Magpie.Http", "common/Magpie.Security",
        "ingest/Magpie.Ingest", "indexer/Magpie.Indexer", "query-api/Magpie.Query", "etl-sinks/Magpie.EtlSinks", "producers/Magpie.Producers", "magpie",
    ];

    [Theory]
    [MemberData(nameof(Projects))]
    public void A_projects_namespaces_form_no_cycle(string project)
    {
        var cycles = Cycles(Path.Combine(RepoPaths.Root, project));
        Assert.True(cycles.Count == 0, $"{project}: namespaces in a cycle: {string.Join("; ", cycles.Select(c => string.Join(" ⇄ ", c)))}");
    }

    [Fact]
    public void The_analysis_finds_a_cycle_it_is_shown()
    {
        var dir = Directory.CreateTempSubdirectory("magpie-ns-").FullName;
        File.WriteAllText(Path.Combine(dir, "A.cs"), "using M.B;\nusing M.D;\nnamespace M.A;\npublic sealed class Alpha { Beta? b; }\n");
        // A type nested in M.D with Beta's name is not M.D's Beta: A does not reach D through it.
        File.WriteAllText(Path.Combine(dir, "D.cs"), "using M.A;\nnamespace M.D;\npublic sealed class Delta { Alpha? a; private sealed class Beta { } }\n");
        File.WriteAllText(Path.Combine(dir, "B.cs"), "namespace M.B;\npublic sealed class Beta { M.A.Alpha? a; }\n");
        File.WriteAllText(Path.Combine(dir, "C.cs"), "namespace M.C;\n// Alpha, named in a comment only\npublic sealed class Gamma { string s = \"Beta\"; }\n");
        Assert.Equal([["M.A", "M.B"]], Cycles(dir));
        Directory.Delete(dir, recursive: true);
    }

    private static List<List<string>> Cycles(string projectDir)
    {
        var files = Directory.EnumerateFiles(projectDir, "*.cs", SearchOption.AllDirectories)
            .Where(f => !f.Contains($"{Path.DirectorySeparatorChar}bin{Path.DirectorySeparatorChar}") && !f.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}"))
            .Select(f => (Path: f, Code: Strip(File.ReadAllText(f)))).ToList();
        var namespaceOf = files.ToDictionary(f => f.Path, f => Namespace().Match(f.Code) is { Success: true } m ? m.Groups[1].Value : "");
        var declared = new Dictionary<string, HashSet<string>>();
        foreach (var f in files)
            foreach (Match m in TypeDeclaration().Matches(f.Code))
                (declared.TryGetValue(m.Groups[1].Value, out var set) ? set : declared[m.Groups[1].Value] = []).Add(namespaceOf[f.Path]);
        var edges = new Dictionary<string, HashSet<string>>();
        foreach (var f in files)
        {
            var from = namespaceOf[f.Path];
            var visible = Using().Matches(f.Code).Select(m => m.Groups[1].Value).ToHashSet();
            for (var ns = from; ns.Length > 0; ns = ns.Contains('.') ? ns[..ns.LastIndexOf('.')] : "") visible.Add(ns);
            foreach (Match word in QualifiedName().Matches(f.Code))
            {
                var name = word.Value;
                var type = name[(name.LastIndexOf('.') + 1)..];
                if (!declared.TryGetValue(type, out var namespaces)) continue;
                var qualifier = name.Contains('.') ? name[..name.LastIndexOf('.')] : null;
                foreach (var to in namespaces.Where(n => n != from))
                    if (qualifier is null ? visible.Contains(to) : to == qualifier || to.EndsWith("." + qualifier, StringComparison.Ordinal))
                        (edges.TryGetValue(from, out var set) ? set : edges[from] = []).Add(to);
            }
        }
        return StronglyConnected(namespaceOf.Values.Distinct().ToList(), edges).Where(c => c.Count > 1).Select(c => c.Order(StringComparer.Ordinal).ToList()).ToList();
    }

    /// <summary>Tarjan's strongly connected components.</summary>
    private static List<List<string>> StronglyConnected(List<string> nodes, Dictionary<string, HashSet<string>> edges)
    {
        var index = new Dictionary<string, int>();
        var low = new Dictionary<string, int>();
        var stack = new Stack<string>();
        var result = new List<List<string>>();
        void Visit(string v)
        {
            index[v] = low[v] = index.Count;
            stack.Push(v);
            foreach (var w in edges.GetValueOrDefault(v) ?? [])
                if (!index.ContainsKey(w)) { Visit(w); low[v] = Math.Min(low[v], low[w]); }
                else if (stack.Contains(w)) low[v] = Math.Min(low[v], index[w]);
            if (low[v] != index[v]) return;
            var component = new List<string>();
            string x;
            do { x = stack.Pop(); component.Add(x); } while (x != v);
            result.Add(component);
        }
        foreach (var n in nodes.Where(n => !index.ContainsKey(n))) Visit(n);
        return result;
    }

    /// <summary>The code without comments and string literals (a type named in text is not a reference).</summary>
    private static string Strip(string code) => CommentsAndStrings().Replace(code, m => m.Value.StartsWith('/') ? " " : "\"\"");

    [GeneratedRegex(@"//[^\n]*|/\*.*?\*/|@?\$*""""""[\s\S]*?""""""|@""(?:[^""]|"""")*""|\$*""(?:\\.|[^""\\\n])*""|'(?:\\.|[^'\\\n])'", RegexOptions.Singleline)]
    private static partial Regex CommentsAndStrings();

    [GeneratedRegex(@"^namespace ([\w.]+)", RegexOptions.Multiline)]
    private static partial Regex Namespace();

    /// <summary>A type declared at the top of a file (file-scoped namespace): a nested type is named through its outer one.</summary>
    [GeneratedRegex(@"^(?:(?:public|internal|file|static|sealed|abstract|partial|readonly)\s+)*(?:class|record|interface|struct|enum)\s+(?:struct\s+|class\s+)?([A-Z]\w*)", RegexOptions.Multiline)]
    private static partial Regex TypeDeclaration();

    [GeneratedRegex(@"^using ([\w.]+);", RegexOptions.Multiline)]
    private static partial Regex Using();

    [GeneratedRegex(@"\b(?:[A-Za-z_]\w*\.)*[A-Z]\w*\b")]
    private static partial Regex QualifiedName();
}
