using System.Diagnostics;
using Jint;

namespace Magpie.Scripting;

/// <summary>
/// The wall-clock and memory budget of one sandbox run, checked by Jint between statements. Jint calls <see cref="Reset"/> at every
/// entry into the engine (each <c>Execute</c>, <c>Invoke</c>, callback), and its own time and memory constraints start again there,
/// which gave every call a fresh budget; this one starts only when the sandbox starts a run (<see cref="Start"/>), so a run's calls
/// share it. Memory is what the running thread allocated since the start (a run stays on one thread).
/// </summary>
internal sealed class RunBudget(ScriptLimits limits) : Constraint
{
    private long _deadline = long.MaxValue;
    private long _allocatedAtStart;

    public void Start()
    {
        _deadline = Stopwatch.GetTimestamp() + (long)(limits.Timeout.TotalSeconds * Stopwatch.Frequency);
        _allocatedAtStart = GC.GetAllocatedBytesForCurrentThread();
    }

    public override void Check()
    {
        if (_deadline == long.MaxValue) return;   // no run yet: the host's own set-up before the sandbox is sealed
        if (Stopwatch.GetTimestamp() > _deadline) throw new TimeoutException();
        var allocated = GC.GetAllocatedBytesForCurrentThread() - _allocatedAtStart;
        if (allocated > limits.MaxAllocatedBytes)
            throw new Jint.Runtime.MemoryLimitExceededException($"Script has allocated {allocated} but is limited to {limits.MaxAllocatedBytes}");
    }

    public override void Reset() { }
}
