using System.Diagnostics;
using Jint;

namespace Magpie.Scripting;

/// <summary>
/// The wall-clock budget of one sandbox run, checked by Jint between statements. Jint calls <see cref="Reset"/> at every entry
/// into the engine (each <c>Execute</c>, <c>Invoke</c>, callback), which would give every call a fresh budget; this one
/// starts only when the sandbox starts a run (<see cref="Start"/>), so a run's calls share it.
/// </summary>
internal sealed class RunBudget(ScriptLimits limits) : Constraint
{
    private long _deadline = long.MaxValue;

    public void Start() => _deadline = Stopwatch.GetTimestamp() + (long)(limits.Timeout.TotalSeconds * Stopwatch.Frequency);

    public override void Check()
    {
        if (Stopwatch.GetTimestamp() > _deadline) throw new TimeoutException();
    }

    public override void Reset() { }
}
