namespace Magpie.Scripting;

/// <summary>
/// What one run of a script (one document's map, one group's reduce, one change's transform) may use. All are
/// enforced by Jint itself: time and statements are checked as the script runs (regular expressions carry their
/// own timeout, since one match is one statement), memory is what the run allocates, arrays and recursion are
/// capped where they are made, and <see cref="Stop"/> ends a run at once when its owner goes away (an index deleted).
/// </summary>
public sealed record ScriptLimits(TimeSpan Timeout, int MaxStatements, int MaxRecursion, long MaxAllocatedBytes)
{
    public static ScriptLimits Default { get; } = new(TimeSpan.FromSeconds(2), 1_000_000, 64, 256L * 1024 * 1024);

    /// <summary>Longest array a script may make (<c>new Array(1e8)</c> is refused before it is allocated).</summary>
    public uint MaxArrayLength { get; init; } = 1_000_000;

    /// <summary>Deepest nesting <c>JSON.parse</c> accepts and a script's result may have when it becomes JSON again.</summary>
    public int MaxJsonDepth { get; init; } = 64;

    /// <summary>Cancelled when the script's owner stops (its index deleted, the process shutting down): a running script ends at its next check.</summary>
    public CancellationToken Stop { get; init; }
}
