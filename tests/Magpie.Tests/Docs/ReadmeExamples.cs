using System.Text.RegularExpressions;

namespace Magpie.Tests.Docs;

/// <summary>The README's shell examples as a user copies them: the bash blocks under a heading, split into commands.</summary>
public static partial class ReadmeExamples
{
    /// <summary>The commands of the bash blocks in the section whose heading starts with <paramref name="heading"/> (null: the whole
    /// page; or, with <paramref name="after"/>, the blocks after that line of the section); a command whose quotes are open goes on
    /// over the next lines.</summary>
    public static List<string> Commands(string readme, string? heading, string? after = null) =>
        Blocks(readme, heading, after).SelectMany(b => b).ToList();

    /// <summary>As <see cref="Commands"/>, block by block.</summary>
    public static List<List<string>> Blocks(string readme, string? heading, string? after = null)
    {
        var section = heading is null ? readme : Regex.Split(readme, @"^## ", RegexOptions.Multiline).Single(s => s.StartsWith(heading, StringComparison.Ordinal));
        if (after is not null) section = section[(section.IndexOf(after, StringComparison.Ordinal) + after.Length)..];
        var blocks = new List<List<string>>();
        foreach (Match block in BashBlock().Matches(section))
        {
            var commands = new List<string>();
            blocks.Add(commands);
            string? open = null;
            foreach (var line in block.Groups[1].Value.Split('\n'))
            {
                open = open is null ? line : open + "\n" + line;
                if (open.Count(c => c == '\'') % 2 == 0)
                {
                    if (open.Trim().Length > 0) commands.Add(open.Trim());
                    open = null;
                }
            }
            if (open is not null) throw new InvalidOperationException($"a README command never closes its quote: {open}");
        }
        return blocks;
    }

    /// <summary>What a command's trailing comment promises after "→ status": the status and, if given, the JSON body.</summary>
    public static (int Status, string? Body)? Promise(string command) =>
        PromiseComment().Match(command) is { Success: true } m ? (int.Parse(m.Groups[1].Value), m.Groups[2].Success ? m.Groups[2].Value : null) : null;

    [GeneratedRegex(@"```bash\n(.*?)```", RegexOptions.Singleline)]
    private static partial Regex BashBlock();

    [GeneratedRegex(@"#\s*→\s*(\d{3})(?:\s+(\{.*\}))?\s*$")]
    private static partial Regex PromiseComment();
}
