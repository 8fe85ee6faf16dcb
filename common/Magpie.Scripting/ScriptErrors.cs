namespace Magpie.Scripting;

/// <summary>A script that does not parse or does not have the shape asked for, with the position in the user's text (1-based).</summary>
public sealed class ScriptSyntaxException(string message, int line, int column) : Exception($"{message} (line {line}, column {column})")
{
    public int Line { get; } = line;
    public int Column { get; } = column;
}

/// <summary>A document's script failed (a JS error or a sandbox limit); that document fails and the next one runs.</summary>
public sealed class ScriptRunException(string message) : Exception(message);

/// <summary>
/// Something a script asked of its host failed for a reason that is not the script's nor the document's (the document store
/// unreachable for <c>load()</c>): it passes through the sandbox unchanged, and its caller retries the work instead of recording
/// an error against the document.
/// </summary>
public sealed class ScriptHostException(string message, Exception? inner = null) : Exception(message, inner);
