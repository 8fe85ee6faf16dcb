using System.Collections.Concurrent;
using Jint;
using Jint.Runtime;

namespace Magpie.Scripting;

/// <summary>Per-document limits of a transform script.</summary>
public sealed record ScriptLimits(TimeSpan Timeout, int MaxStatements, int MaxRecursion, long MaxAllocatedBytes)
{
    public static ScriptLimits Default { get; } = new(TimeSpan.FromSeconds(2), 1_000_000, 64, 256L * 1024 * 1024);
}

/// <summary>A document's script failed; the task records it and goes on with the next document.</summary>
public sealed class ScriptRunException(string message) : Exception(message);

/// <summary>
/// A Jint engine with no CLR access (Jint exposes none unless <c>AllowClr</c> is called) and the limits
/// applied to every run: time, statements, recursion and memory. The memory limit is an allocation
/// budget per run, as Jint 3+'s <c>LimitMemory</c> is; Jint 2 has none of its own, so a shared watchdog
/// samples the bytes allocated since a run started and, past the budget, ends the run through Jint's own
/// timeout check (the next statement throws). The count is process-wide (<see cref="GC.GetTotalAllocatedBytes"/>;
/// only the running thread could read its own), so heavy allocation elsewhere during a long script can end
/// it early; the default budget is far above what a transform of one document allocates. The watchdog is its
/// own thread, not a timer: timer callbacks wait for a free thread-pool thread, and a busy pool (CI once)
/// delayed the check past the script's deadline, so a runaway allocation was reported as a timeout.
/// </summary>
public sealed class ScriptSandbox : IDisposable
{
    private static readonly ConcurrentDictionary<ScriptSandbox, byte> Running = new();
    private static readonly Thread Watchdog = StartWatchdog();

    private readonly ScriptLimits _limits;
    private Options _options = null!;
    private readonly Lock _gate = new();
    private long _startAllocated;
    private bool _running, _memoryExceeded;

    public ScriptSandbox(ScriptLimits limits)
    {
        _limits = limits;
        Engine = new Engine(o => _options = o.TimeoutInterval(limits.Timeout).MaxStatements(limits.MaxStatements).LimitRecursion(limits.MaxRecursion));
        Running.TryAdd(this, 0);
    }

    public Engine Engine { get; }

    /// <summary>Runs <paramref name="body"/> under the limits; a limit or a JS error becomes a <see cref="ScriptRunException"/> saying which.</summary>
    public T Run<T>(Func<T> body, int lineOffset)
    {
        lock (_gate)
        {
            _options.TimeoutInterval(_limits.Timeout);
            _startAllocated = GC.GetTotalAllocatedBytes();
            _memoryExceeded = false;
            _running = true;
        }
        Engine.ResetTimeoutTicks();
        Engine.ResetStatementsCount();
        Engine.ResetCallStack();
        try { return body(); }
        catch (TimeoutException) when (_memoryExceeded) { throw new ScriptRunException($"script allocated more than {_limits.MaxAllocatedBytes / (1024 * 1024)} MB"); }
        catch (TimeoutException) { throw new ScriptRunException($"script ran longer than {_limits.Timeout.TotalMilliseconds:0} ms"); }
        catch (StatementsCountOverflowException) { throw new ScriptRunException($"script ran more than {_limits.MaxStatements:N0} statements"); }
        catch (RecursionDepthOverflowException) { throw new ScriptRunException($"script recursed deeper than {_limits.MaxRecursion}"); }
        catch (JavaScriptException e) { throw new ScriptRunException($"{Describe(e)} (line {Math.Max(1, e.LineNumber - lineOffset)}, column {e.Column})"); }
        catch (OutOfMemoryException) { throw new ScriptRunException("script ran out of memory"); }
        finally { lock (_gate) _running = false; }
    }

    /// <summary>Jint 2 leaves the message of its own TypeErrors (a call on undefined, …) empty: say at least which error.</summary>
    private static string Describe(JavaScriptException e)
    {
        if (!string.IsNullOrWhiteSpace(e.Message)) return e.Message;
        var error = e.Error;
        var name = error.IsObject() && error.AsObject().Get("name") is { } n && n.IsString() ? n.AsString() : "Error";
        return $"{name} (e.g. a property read or a call on undefined or null)";
    }

    private void CheckMemory()
    {
        lock (_gate)
        {
            if (!_running || _memoryExceeded || GC.GetTotalAllocatedBytes() - _startAllocated <= _limits.MaxAllocatedBytes) return;
            _memoryExceeded = true;
            // Jint checks its deadline before every statement: move the deadline to now.
            _options.TimeoutInterval(TimeSpan.FromTicks(1));
            Engine.ResetTimeoutTicks();
        }
    }

    private static Thread StartWatchdog()
    {
        var thread = new Thread(() =>
        {
            while (true)
            {
                Thread.Sleep(25);
                foreach (var s in Running.Keys) s.CheckMemory();
            }
        }) { IsBackground = true, Name = "script memory watchdog", Priority = ThreadPriority.AboveNormal };
        thread.Start();
        return thread;
    }

    public void Dispose() => Running.TryRemove(this, out _);
}
