namespace Magpie.Scripting;

/// <summary>A script that does not parse or does not have the shape asked for, with the position in the user's text (1-based).</summary>
public sealed class ScriptSyntaxException(string message, int line, int column) : Exception($"{message} (line {line}, column {column})")
{
    public int Line { get; } = line;
    public int Column { get; } = column;
}

/// <summary>A document's script failed (a JS error or a sandbox limit); that document fails and the next one runs.</summary>
public sealed class ScriptRunException(string message) : Exception(message);
