using System.Text.RegularExpressions;
using Acornima.Ast;
using Jint;
using Jint.Native;
using Jint.Native.Object;
using Jint.Runtime;
using Jint.Runtime.Interop;

namespace Magpie.Scripting;

/// <summary>
/// One Jint engine for one script owner (an index's maps, its reduce, an ETL transform), built so that no
/// document can harm another or the process:
/// <list type="bullet">
/// <item>Jint's own limits (<see cref="ScriptLimits"/>): time, statements, memory per run, recursion, array length,
/// regex time, JSON.parse depth, a native-stack guard, and <see cref="ScriptLimits.Stop"/> to end a run at once.</item>
/// <item>No CLR (Jint exposes none unless asked), no <c>eval</c>/<c>new Function</c>, no modules: only the host
/// functions defined before <see cref="Seal"/>.</item>
/// <item>Strict mode, so a write that the sandbox refuses throws instead of being silently dropped.</item>
/// <item>Built-ins frozen at <see cref="Seal"/> (<c>Object.prototype.x = …</c> fails), and every run starts from the
/// globals as sealed: what a run declared or assigned at top level is gone before the next one. Owners re-run their
/// script's top level per document (cheap: a prepared script), so closure state cannot carry over either.</item>
/// <item>Deterministic sandboxes (maps, reduces) have no clock and no <c>Math.random</c>: an index must give the same
/// entries whenever it is built. ETL transforms may read both.</item>
/// </list>
/// </summary>
public sealed class ScriptSandbox
{
    private readonly ScriptLimits _limits;
    private readonly RunBudget _budget;
    private GlobalSnapshot? _sealed;

    public ScriptSandbox(ScriptLimits limits, bool deterministic)
    {
        _limits = limits;
        _budget = new RunBudget(limits);
        Engine = new Engine(o =>
        {
            o.Strict = true;
            o.Host.StringCompilationAllowed = false;
            // One wall-clock and memory budget per run (Jint's own start again at every call into the engine, so a run that calls
            // a map, then toJSON, then a getter had a fresh 2 s and 256 MB for each). Jint's memory limit stays too: it also sees
            // what its lazy strings will take, which a thread's allocation count does not yet.
            o.Constraint(_budget).MaxStatements(limits.MaxStatements).LimitMemory(limits.MaxAllocatedBytes);
            if (limits.Stop.CanBeCanceled) o.CancellationToken(limits.Stop);
            o.Constraints.MaxRecursionDepth = limits.MaxRecursion;
            o.Constraints.MaxArraySize = limits.MaxArrayLength;
            o.Constraints.RegexTimeout = limits.Timeout;
            o.Constraints.StackOverflowGuard = true;
            o.Json.MaxParseDepth = limits.MaxJsonDepth;
            o.TimeSystem = deterministic ? new NoClock() : new DefaultTimeSystem(TimeZoneInfo.Utc, System.Globalization.CultureInfo.InvariantCulture);
        });
        // Shared memory and its blocking waits (Atomics.wait ignores every limit: it parks the thread), a second realm with
        // built-ins of its own (not frozen): no script needs them.
        foreach (var name in (string[])["Atomics", "SharedArrayBuffer", "ShadowRealm"]) Engine.Global.RemoveOwnProperty(name);
        if (deterministic)
        {
            // What the garbage collector does is not the document's content: weak references would make entries depend on it.
            foreach (var name in (string[])["WeakRef", "FinalizationRegistry"]) Engine.Global.RemoveOwnProperty(name);
            Engine.GetValue("Math").AsObject().Set("random", new ClrFunction(Engine, "random", (_, _) => throw new ScriptRunException(NoClock.Refusal("Math.random()"))));
            NoClock.GuardIntl(Engine);
        }
    }

    public Engine Engine { get; }

    /// <summary>Makes a host function callable from scripts; only before <see cref="Seal"/>.</summary>
    public void Define(string name, Func<JsValue[], JsValue> function, int length)
    {
        if (_sealed is not null) throw new InvalidOperationException("the sandbox is sealed");
        Engine.SetValue(name, new ClrFunction(Engine, name, (_, args) => function(args), length));
    }

    /// <summary>Makes a host function callable as a member of a global object (<c>embedding.text</c>); only before <see cref="Seal"/>.</summary>
    public void Define(string owner, string name, Func<JsValue[], JsValue> function, int length)
    {
        if (_sealed is not null) throw new InvalidOperationException("the sandbox is sealed");
        if (Engine.Global.Get(owner) is not ObjectInstance holder)
        {
            holder = new JsObject(Engine);
            Engine.SetValue(owner, holder);
        }
        holder.Set(name, new ClrFunction(Engine, $"{owner}.{name}", (_, args) => function(args), length));
    }

    /// <summary>Freezes every built-in and host function and records the globals every later run starts from.</summary>
    public void Seal()
    {
        Harden();
        _sealed = Engine.Advanced.CaptureGlobalSnapshot();
    }

    /// <summary>
    /// Freezes everything reachable from the global object's properties (constructors, prototypes, Math, JSON, the
    /// host functions) and from the engine's intrinsics, which include objects no global names (the iterator prototypes
    /// of arrays, strings, maps, sets and regexp matches, the generator and async function prototypes), but not the
    /// global object itself: scripts may declare top-level functions and variables, which the per-run restore of the
    /// sealed globals removes again. Walked from C# with the native <c>Object.freeze</c>, so it counts none of a script's statements.
    /// </summary>
    private void Harden()
    {
        var freeze = Engine.Evaluate("Object.freeze");
        var global = Engine.Global;
        var seen = new HashSet<ObjectInstance>(ReferenceEqualityComparer.Instance);
        var pending = new Stack<JsValue>();
        foreach (var key in global.GetOwnPropertyKeys()) pending.Push(global.GetOwnProperty(key).Value);
        foreach (var intrinsic in Intrinsics(Engine)) pending.Push(intrinsic);
        pending.Push(global.Prototype ?? JsValue.Null);
        while (pending.TryPop(out var value))
        {
            if (value is not ObjectInstance o || ReferenceEquals(o, global) || !seen.Add(o)) continue;
            freeze.Call(JsValue.Undefined, [o]);
            foreach (var key in o.GetOwnPropertyKeys())
            {
                var d = o.GetOwnProperty(key);
                if (d.IsDataDescriptor()) pending.Push(d.Value);
                else { pending.Push(d.Get ?? JsValue.Undefined); pending.Push(d.Set ?? JsValue.Undefined); }
            }
            pending.Push(o.Prototype ?? JsValue.Null);
        }
        Frozen = seen.Count;
    }

    /// <summary>How many objects <see cref="Seal"/> froze (tests compare it with what scripts can reach).</summary>
    public int Frozen { get; private set; }

    /// <summary>
    /// Every object the engine's realm holds as an intrinsic (Jint's <c>Realm.Intrinsics</c>, whose members are internal: read by
    /// reflection, so a Jint upgrade that adds one is frozen too). An intrinsic that fails to build is skipped.
    /// </summary>
    internal static IEnumerable<ObjectInstance> Intrinsics(Engine engine)
    {
        const System.Reflection.BindingFlags all = System.Reflection.BindingFlags.Instance | System.Reflection.BindingFlags.Public | System.Reflection.BindingFlags.NonPublic;
        var realm = typeof(Engine).GetProperty("Realm", all)?.GetValue(engine);
        var intrinsics = realm?.GetType().GetProperty("Intrinsics", all)?.GetValue(realm)
            ?? throw new InvalidOperationException("Jint's realm intrinsics are not where the sandbox reads them: update ScriptSandbox.Intrinsics for this Jint");
        foreach (var property in intrinsics.GetType().GetProperties(all))
        {
            if (!typeof(ObjectInstance).IsAssignableFrom(property.PropertyType) || property.GetIndexParameters().Length > 0) continue;
            ObjectInstance? value;
            try { value = property.GetValue(intrinsics) as ObjectInstance; }
            catch (System.Reflection.TargetInvocationException) { continue; }
            if (value is not null) yield return value;
        }
    }

    /// <summary>Parses a script once (ES2020+); a syntax error becomes a <see cref="ScriptSyntaxException"/> with the position in <paramref name="source"/>.</summary>
    public static Prepared<Script> Prepare(string source, string label, int lineOffset = 0)
    {
        ScriptShape.Check(source, label, lineOffset);
        try { return Engine.PrepareScript(source, label, strict: true); }
        catch (ScriptPreparationException e) when (e.InnerException is Acornima.ParseErrorException p)
        {
            throw new ScriptSyntaxException($"{label}: {p.Description}", Math.Max(1, p.LineNumber - lineOffset), p.Column + 1);
        }
        // The parser's and Jint's own guards against nesting the bracket count does not see (prefix operators, chained ternaries).
        catch (ScriptPreparationException e) when (e.InnerException is InsufficientExecutionStackException or ScriptPreparationException)
        {
            throw new ScriptSyntaxException($"{label}: the script nests too deeply to parse ({e.InnerException!.Message})", 1, 1);
        }
    }

    /// <summary>
    /// Runs <paramref name="body"/> from the sealed globals under the limits. A JS error or a limit becomes a
    /// <see cref="ScriptRunException"/> saying which (with the line in the user's text, <paramref name="lineOffset"/>
    /// lines of wrapper taken off); <see cref="ScriptLimits.Stop"/> becomes an <see cref="OperationCanceledException"/>.
    /// </summary>
    public T Run<T>(Func<T> body, int lineOffset = 0)
    {
        if (_sealed is not null) Engine.Advanced.RestoreGlobalSnapshot(_sealed);
        _budget.Start();
        try { return body(); }
        catch (Exception e) when (e is not ScriptRunException)
        {
            Engine.Advanced.ResetCallStack();
            if (e is ScriptHostException || e.InnerException is ScriptHostException) throw e as ScriptHostException ?? (ScriptHostException)e.InnerException!;
            if (_limits.Stop.IsCancellationRequested) throw new OperationCanceledException("the script's owner stopped", e, _limits.Stop);
            throw new ScriptRunException(Describe(e, lineOffset));
        }
    }

    private string Describe(Exception e, int lineOffset) => e switch
    {
        RegexMatchTimeoutException => $"a regular expression ran longer than {_limits.Timeout.TotalMilliseconds:0} ms",
        TimeoutException => $"script ran longer than {_limits.Timeout.TotalMilliseconds:0} ms",
        StatementsCountOverflowException => $"script ran more than {_limits.MaxStatements:N0} statements",
        RecursionDepthOverflowException => $"script recursed deeper than {_limits.MaxRecursion}",
        MemoryLimitExceededException m when m.Message.StartsWith("Script has allocated", StringComparison.Ordinal)
            => $"script allocated more than {_limits.MaxAllocatedBytes / (1024 * 1024)} MB",
        MemoryLimitExceededException => e.Message,
        JavaScriptException js => $"{NameOf(js)}{js.Message} (line {Math.Max(1, js.Location.Start.Line - lineOffset)}, column {js.Location.Start.Column + 1})",
        OutOfMemoryException => "script ran out of memory",
        _ => $"script failed: {e.Message}",
    };

    /// <summary>"TypeError: " and the like, as a JS console prints an error.</summary>
    private static string NameOf(JavaScriptException js) =>
        js.Error is ObjectInstance error && error.Get("name") is JsString name && !js.Message.StartsWith(name.ToString(), StringComparison.Ordinal) ? $"{name}: " : "";

    /// <summary>The clock of a deterministic sandbox: reading it fails the run (date parsing and arithmetic still work, in UTC).</summary>
    private sealed class NoClock : ITimeSystem
    {
        private readonly DefaultTimeSystem _utc = new(TimeZoneInfo.Utc, System.Globalization.CultureInfo.InvariantCulture);

        public static string Refusal(string what) =>
            $"{what} is not allowed in a map or reduce: an index must give the same entries whenever it is built (ETL transforms may use it)";

        /// <summary>
        /// <c>Intl.DateTimeFormat().format()</c> and <c>formatToParts()</c> without a date format the current time (Jint reads the
        /// machine's clock there, not the time system): in a deterministic sandbox they need a date. Wrapped before <see cref="Seal"/>.
        /// </summary>
        public static void GuardIntl(Engine engine)
        {
            if (engine.Global.GetOwnProperty("Intl").Value is not ObjectInstance intl || intl.Get("DateTimeFormat") is not ObjectInstance format) return;
            var prototype = format.Get("prototype").AsObject();
            var refusal = Refusal("Intl.DateTimeFormat's format() without a date (it formats the current time)");
            var original = prototype.GetOwnProperty("format");
            if (original.Get is { } getter && getter.IsCallable())
                prototype.DefineOwnProperty("format", new Jint.Runtime.Descriptors.GetSetPropertyDescriptor(
                    new ClrFunction(engine, "get format", (self, _) =>
                    {
                        var bound = getter.Call(self, []);
                        return new ClrFunction(engine, "format", (_, args) =>
                            args.Length == 0 || args[0].IsUndefined() ? throw new ScriptRunException(refusal) : bound.Call(JsValue.Undefined, args), 1);
                    }), null, enumerable: false, configurable: true));
            if (prototype.Get("formatToParts") is { } parts && parts.IsCallable())
                prototype.Set("formatToParts", new ClrFunction(engine, "formatToParts", (self, args) =>
                    args.Length == 0 || args[0].IsUndefined() ? throw new ScriptRunException(refusal) : parts.Call(self, args), 1));
        }

        public DateTimeOffset GetUtcNow() => throw new ScriptRunException(Refusal("reading the clock (Date.now(), new Date() without arguments, Temporal.Now)"));
        public TimeZoneInfo DefaultTimeZone => _utc.DefaultTimeZone;
        public bool TryParse(string date, out long epochMilliseconds) => _utc.TryParse(date, out epochMilliseconds);
        public TimeSpan GetUtcOffset(long epochMilliseconds) => _utc.GetUtcOffset(epochMilliseconds);
    }
}
