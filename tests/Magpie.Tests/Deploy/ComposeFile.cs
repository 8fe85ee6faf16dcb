using System.Text.RegularExpressions;
using YamlDotNet.RepresentationModel;

namespace Magpie.Tests.Deploy;

/// <summary>compose.yaml as the smoke test needs it: each service's image, command, environment (anchors, merge keys and
/// <c>${VAR:-default}</c> resolved as compose resolves them with nothing set), replicas and volumes.</summary>
public sealed partial class ComposeFile
{
    public sealed record Service(string Name, string? Image, IReadOnlyList<string> Command, IReadOnlyDictionary<string, string> Environment,
        int Replicas, IReadOnlyList<string> Volumes);

    public IReadOnlyDictionary<string, Service> Services { get; }

    private ComposeFile(IReadOnlyDictionary<string, Service> services) => Services = services;

    public static ComposeFile Load(string path)
    {
        using var reader = new StreamReader(path);
        var stream = new YamlStream();
        stream.Load(reader);
        var root = (YamlMappingNode)stream.Documents[0].RootNode;
        var services = ((YamlMappingNode)root["services"]).Children.ToDictionary(s => ((YamlScalarNode)s.Key).Value!, s =>
        {
            var node = Merged((YamlMappingNode)s.Value);
            var name = ((YamlScalarNode)s.Key).Value!;
            return new Service(name,
                Scalar(node, "image"),
                node.Children.TryGetValue("command", out var c) && c is YamlSequenceNode seq ? seq.Select(n => Interpolate(((YamlScalarNode)n).Value!)).ToList() : [],
                node.Children.TryGetValue("environment", out var e) && e is YamlMappingNode env
                    ? Merged(env).Children.ToDictionary(kv => ((YamlScalarNode)kv.Key).Value!, kv => Interpolate(((YamlScalarNode)kv.Value).Value ?? ""))
                    : new Dictionary<string, string>(),
                node.Children.TryGetValue("deploy", out var d) && d is YamlMappingNode deploy && Scalar(deploy, "replicas") is { } r ? int.Parse(r) : 1,
                node.Children.TryGetValue("volumes", out var v) && v is YamlSequenceNode vols ? vols.Select(n => ((YamlScalarNode)n).Value!).ToList() : []);
        });
        return new ComposeFile(services);
    }

    /// <summary>
    /// YAML merge keys as compose applies them: the keys of the <c>&lt;&lt;</c> mapping (an alias of an anchored one), overridden by
    /// the mapping's own keys. (YamlDotNet's MergingParser rejects an overridden key as a duplicate, so merge here.)
    /// </summary>
    private static YamlMappingNode Merged(YamlMappingNode node)
    {
        var merge = new YamlScalarNode("<<");
        if (!node.Children.TryGetValue(merge, out var from) || from is not YamlMappingNode defaults) return node;
        var merged = new YamlMappingNode();
        foreach (var (key, value) in Merged(defaults).Children) merged.Children[key] = value;
        foreach (var (key, value) in node.Children) if (!key.Equals(merge)) merged.Children[key] = value;
        return merged;
    }

    private static string? Scalar(YamlMappingNode node, string key) =>
        node.Children.TryGetValue(key, out var v) && v is YamlScalarNode s ? s.Value : null;

    [GeneratedRegex(@"\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}")]
    private static partial Regex Variable();

    /// <summary>${VAR:-default} with VAR unset (what a user gets without a .env file), and $$ → $.</summary>
    private static string Interpolate(string value) => Variable().Replace(value, m => m.Groups[3].Value).Replace("$$", "$");
}
