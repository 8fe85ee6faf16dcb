using System.Reflection;
using System.Text.RegularExpressions;
using Magpie.Tests.Fixtures;

namespace Magpie.Tests.Docs;

/// <summary>docs/CONFIGURATION.md's table names every setting <c>magpie run</c> binds, and no setting that does not exist.</summary>
[Trait("Category", "Fast")]
public sealed partial class ConfigurationTableTests
{
    /// <summary>Setting names as the configuration binds them (<c>Pg:Port</c>), read from the settings classes.</summary>
    private static IEnumerable<string> Settings(Type type, string prefix = "")
    {
        foreach (var p in type.GetProperties(BindingFlags.Public | BindingFlags.Instance).Where(p => p.CanWrite))
        {
            var name = prefix + p.Name;
            if (p.PropertyType.IsGenericType && p.PropertyType.GetGenericTypeDefinition() == typeof(Dictionary<,>)) yield return name + ":*";
            else if (p.PropertyType.IsClass && p.PropertyType != typeof(string) && !p.PropertyType.IsArray)
                foreach (var nested in Settings(p.PropertyType, name + ":")) yield return nested;
            else yield return name;
        }
    }

    [Fact]
    public void Every_setting_is_in_the_table_and_every_row_is_a_setting()
    {
        var page = File.ReadAllText(Path.Combine(RepoPaths.Root, "docs", "CONFIGURATION.md"));
        var documented = TableRow().Matches(page).SelectMany(m => Name().Matches(m.Groups[1].Value).Select(n => n.Groups[1].Value)).ToHashSet();
        // The executable is not referenced as an assembly (it is the process the other tests start): its settings type is read from its build.
        var settingsType = Assembly.LoadFrom(RepoPaths.MagpieDll).GetType("Magpie.Hosting.MagpieSettings", throwOnError: true)!;
        var settings = Settings(settingsType).ToHashSet();
        Assert.True(settings.Count > 30, $"only {settings.Count} settings found: the reflection missed them");
        Assert.Empty(settings.Except(documented));
        Assert.Empty(documented.Except(settings));
    }

    [GeneratedRegex(@"^\| ((?:`[^`]+`(?:, )?)+) \|", RegexOptions.Multiline)]
    private static partial Regex TableRow();

    [GeneratedRegex(@"`([^`]+)`")]
    private static partial Regex Name();
}
