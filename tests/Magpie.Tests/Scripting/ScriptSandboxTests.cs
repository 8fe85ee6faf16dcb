using System.Diagnostics;
using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.EtlSinks.Scripts;
using Magpie.Indexer.Maps;
using Magpie.Indexer.MapReduce;
using Jint;
using Magpie.Scripting;

namespace Magpie.Tests.Scripting;

/// <summary>
/// Scripts as a hostile or careless user writes them, on the real Jint 4 sandbox: modern syntax works, and every
/// way one document's script could hang, crash or poison the process or the next document fails that document only.
/// </summary>
[Trait("Category", "Fast")]
public sealed class ScriptSandboxTests
{
    private static ChangeEvent Put(string id, string json) =>
        new(id, id.Split('/')[0], 1, ChangeOp.Put, DateTimeOffset.UtcNow, JsonDocument.Parse(json).RootElement);

    private static Dictionary<string, object?> Values(MappedEntry e) => e.Values.ToDictionary(v => v.Key, v => v.Value);

    private static MapScript Map(string body, ScriptLimits? limits = null) => MapScript.Compile([body], limits ?? ScriptLimits.Default);

    private static string Fails(MapScript maps, string json = "{}") => Assert.Throws<ScriptRunException>(() => maps.Run(Put("posts/1", json))).Message;

    /// <summary>After a failure the same script still maps a normal document.</summary>
    private static void StillWorks(MapScript maps) => Assert.Single(maps.Run(Put("posts/ok", """{"Title":"fine"}""")));

    [Fact]
    public void Maps_are_modern_JavaScript()
    {
        var maps = Map("""
            const shout = s => `${s.toUpperCase()}!`;
            map('Posts', ({ Title, Tags = [], Owner, ...rest }) => {
              let total = 0;
              for (const t of Tags) total += t.length;
              return { Title: shout(Title), Tags: [...Tags, 'x'].flatMap(t => [t, t]), Owner: Owner?.Name ?? 'nobody', Total: total, Keys: Object.keys(rest).join(), Max: Math.max(...[1, 7, 3]) };
            })
            """);
        var v = Values(Assert.Single(maps.Run(Put("posts/1", """{"Title":"hi","Tags":["ab","c"],"Score":3}"""))));
        Assert.Equal("HI!", v["Title"]);
        Assert.Equal(new List<object?> { "ab", "ab", "c", "c", "x", "x" }, v["Tags"]);
        Assert.Equal("nobody", v["Owner"]);
        Assert.Equal(3.0, v["Total"]);
        Assert.Equal("Score", v["Keys"]);
        Assert.Equal(7.0, v["Max"]);
    }

    [Fact]
    public void A_single_statement_or_regex_past_the_limits_is_stopped()
    {
        var limits = ScriptLimits.Default with { Timeout = TimeSpan.FromMilliseconds(500) };
        var arrays = Map("map('Posts', p => ({ S: new Array(1e8).join('x') }))", limits);
        Assert.Contains("array size 100000000 is larger than maximum allowed", Fails(arrays));
        StillWorks(Map("map('Posts', p => ({ S: p.Title }))", limits));

        var regex = Map("map('Posts', p => ({ M: /^(a+)+$/.test(p.Title) }))", limits);
        var started = Stopwatch.GetTimestamp();
        Assert.Contains("regular expression ran longer than 500 ms", Fails(regex, """{"Title":"aaaaaaaaaaaaaaaaaaaaaaaaaaa!"}"""));
        Assert.True(Stopwatch.GetElapsedTime(started) < TimeSpan.FromSeconds(10), "the 12 s catastrophic backtrack was cut at the regex timeout");
        StillWorks(regex);

        var strings = Map("map('Posts', p => { let s = 'x'; while (true) s = s + s; })", limits with { MaxAllocatedBytes = 64L << 20 });
        Assert.Contains("more than 64 MB", Fails(strings));
    }

    [Fact]
    public void Results_and_JSON_deeper_than_the_limit_fail_their_document_not_the_process()
    {
        var deepResult = Map("map('Posts', p => { let a = []; if (p.Deep) for (let i = 0; i < 30000; i++) a = [a]; return { A: a }; })");
        Assert.Contains("nested deeper than 64 levels", Fails(deepResult, """{"Deep":true}"""));
        StillWorks(deepResult);

        var deepObject = Map("map('Posts', p => { let o = {}; for (let i = 0; i < 30000; i++) o = { o }; return { O: o }; })");
        Assert.Contains("nested deeper than 64 levels", Fails(deepObject));

        var parse = Map("map('Posts', p => ({ A: JSON.parse('['.repeat(100000) + ']'.repeat(100000)) }))");
        Assert.Contains("Max. depth level of JSON reached", Fails(parse));

        var stringify = Map("map('Posts', p => { let a = []; if (p.Deep) for (let i = 0; i < 30000; i++) a = [a]; return { S: JSON.stringify(a) }; })");
        Assert.Contains("RangeError", Fails(stringify, """{"Deep":true}"""));
        StillWorks(stringify);

        var reduce = ReduceScript.Compile("groupBy(x => x.K).aggregate(g => { let a = []; for (let i = 0; i < 30000; i++) a = [a]; return { K: g.key, A: a }; })", ScriptLimits.Default);
        Assert.Contains("nested deeper", Assert.Throws<ScriptRunException>(() => reduce.Aggregate("\"k\"", ["""{"K":"k"}"""])).Message);
    }

    [Fact]
    public void Nothing_one_document_does_is_seen_by_the_next()
    {
        var prototype = Map("map('Posts', p => { if (p.Evil) Object.prototype.Leak = 'yes'; return { Leak: ({}).Leak ?? null }; })");
        Assert.Contains("TypeError", Fails(prototype, """{"Evil":true}"""));
        Assert.Null(Values(Assert.Single(prototype.Run(Put("posts/2", "{}"))))["Leak"]);

        var builtins = Map("map('Posts', p => { Array.prototype.map = () => []; return {}; })");
        Assert.Contains("TypeError", Fails(builtins));

        // Top-level state, a closure's state and globalThis all start over for every document.
        var counters = Map("""
            var seen = 0;
            const next = (() => { let n = 0; return () => ++n; })();
            map('Posts', p => { globalThis.hits = (globalThis.hits ?? 0) + 1; return { Seen: ++seen, Next: next(), Hits: globalThis.hits }; })
            """);
        foreach (var i in Enumerable.Range(1, 3))
        {
            var v = Values(Assert.Single(counters.Run(Put($"posts/{i}", "{}"))));
            Assert.Equal((1.0, 1.0, 1.0), ((double)v["Seen"]!, (double)v["Next"]!, (double)v["Hits"]!));
        }
    }

    [Fact]
    public void Maps_and_reduces_cannot_read_the_clock_or_random_numbers_but_ETL_transforms_can()
    {
        foreach (var call in new[] { "Date.now()", "new Date().getTime()", "Math.random()", "Temporal.Now.instant().epochMilliseconds" })
        {
            var maps = Map($"map('Posts', p => ({{ V: {call} }}))");
            Assert.Contains("is not allowed in a map or reduce", Fails(maps));
        }
        var dates = Values(Assert.Single(Map("map('Posts', p => ({ T: new Date(p.At).getTime(), Y: new Date(p.At).getUTCFullYear() }))").Run(Put("posts/1", """{"At":"2015-01-27T20:09:32.720Z"}"""))));
        Assert.Equal((1422389372720.0, 2015.0), ((double)dates["T"]!, (double)dates["Y"]!));

        var reduce = ReduceScript.Compile("groupBy(x => x.K).aggregate(g => ({ K: g.key, At: Date.now() }))", ScriptLimits.Default);
        Assert.Contains("is not allowed in a map or reduce", Assert.Throws<ScriptRunException>(() => reduce.Aggregate("\"k\"", ["""{"K":"k","At":0}"""])).Message);

        var transform = TransformScript.Compile("loadToX({ now: Date.now(), r: Math.random() });", ScriptLimits.Default);
        var body = JsonDocument.Parse(Assert.Single(transform.Run(Put("x/1", "{}"))).BodyJson).RootElement;
        Assert.InRange(body.GetProperty("now").GetDouble(), DateTimeOffset.UtcNow.AddMinutes(-1).ToUnixTimeMilliseconds(), DateTimeOffset.UtcNow.AddMinutes(1).ToUnixTimeMilliseconds());
        Assert.InRange(body.GetProperty("r").GetDouble(), 0, 1);
    }

    [Fact]
    public void Loops_allocation_bombs_recursion_and_escape_attempts_fail_with_a_reason()
    {
        var limits = ScriptLimits.Default with { Timeout = TimeSpan.FromMilliseconds(500), MaxAllocatedBytes = 64L << 20 };
        Assert.Contains("longer than 500 ms", Fails(Map("map('Posts', p => { for (;;) {} })", limits with { MaxStatements = int.MaxValue })));
        Assert.Contains("more than 1,000,000 statements", Fails(Map("map('Posts', p => { for (;;) {} })", limits with { Timeout = TimeSpan.FromMinutes(1) })));
        Assert.Contains("more than 64 MB", Fails(Map("map('Posts', p => { const xs = []; for (;;) xs.push({ s: 'x'.repeat(1000) }); })", limits with { MaxStatements = int.MaxValue, Timeout = TimeSpan.FromMinutes(1) })));
        Assert.Contains("recursed deeper than 64", Fails(Map("const f = n => f(n + 1); map('Posts', p => ({ N: f(0) }))", limits)));

        Assert.Contains("require is not defined", Fails(Map("map('Posts', p => ({ F: require('fs') }))")));
        Assert.Contains("System is not defined", Fails(Map("map('Posts', p => ({ F: System.IO.File.ReadAllText('/etc/passwd') }))")));
        Assert.Contains("importNamespace is not defined", Fails(Map("map('Posts', p => ({ F: importNamespace('System.IO') }))")));
        Assert.Contains("String compilation has been disabled", Fails(Map("map('Posts', p => ({ F: eval('1 + 1') }))")));
        Assert.Contains("String compilation has been disabled", Fails(Map("map('Posts', p => ({ F: new Function('return 1')() }))")));
        Assert.Contains("Module loading has been disabled", Fails(Map("map('Posts', p => ({ F: import('fs') }))")));
        Assert.Throws<ScriptSyntaxException>(() => Map("import fs from 'fs'; map('Posts', p => ({}))"));
        Assert.Equal("undefined/undefined", Values(Assert.Single(Map("map('Posts', p => ({ T: typeof clr + '/' + typeof host }))").Run(Put("posts/1", "{}"))))["T"]);
    }

    [Fact]
    public async Task A_stop_ends_a_running_script_at_once()
    {
        using var stop = new CancellationTokenSource();
        var maps = Map("map('Posts', p => { for (;;) {} })", ScriptLimits.Default with { Timeout = TimeSpan.FromMinutes(10), MaxStatements = int.MaxValue, Stop = stop.Token });
        var running = Task.Run(() => maps.Run(Put("posts/1", "{}")));
        await Task.Delay(200);
        Assert.False(running.IsCompleted);
        stop.Cancel();
        // Without the stop the run would go on for ten minutes; the wait is only a guard against hanging the suite.
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => running.WaitAsync(TimeSpan.FromMinutes(1)));
    }

    [Fact]
    public void Every_prototype_a_script_can_reach_is_frozen_so_no_document_leaks_into_the_next()
    {
        // Objects no global names, reached by syntax and by calls: iterators, generators, async functions, regexp matches.
        var probe = Map("""
            map('Posts', p => {
              const reached = {
                ArrayIterator: [][Symbol.iterator](), StringIterator: ''[Symbol.iterator](), MapIterator: new Map().entries(),
                SetIterator: new Set().values(), RegExpStringIterator: 'a'.matchAll(/a/g), Generator: (function* () {})(),
                GeneratorFunction: function* () {}, AsyncFunction: async function () {}, AsyncGenerator: (async function* () {})(),
                AsyncGeneratorFunction: async function* () {}, Promise: Promise.resolve(1), Arguments: (function () { return arguments; })(),
                IteratorHelper: [1].values().map(x => x), TypedArray: new Uint8Array(1), Error: new TypeError('x'),
              };
              const open = [];
              // A generator's own prototype is its function's .prototype, made with the function in this run: not shared.
              const own = new Set([Object.getPrototypeOf(reached.Generator), Object.getPrototypeOf(reached.AsyncGenerator)]);
              for (const [name, o] of Object.entries(reached))
                for (let proto = own.has(Object.getPrototypeOf(o)) ? Object.getPrototypeOf(Object.getPrototypeOf(o)) : Object.getPrototypeOf(o), depth = 0; proto !== null; proto = Object.getPrototypeOf(proto), depth++)
                  if (!Object.isFrozen(proto)) open.push(name + '^' + depth);
              return { Open: open.join(' ') };
            })
            """);
        Assert.Equal("", Values(Assert.Single(probe.Run(Put("posts/1", "{}"))))["Open"]);

        // One document's map changing a shared prototype fails that document; the next sees the built-in.
        var leak = Map("""
            map('Posts', p => {
              const proto = Object.getPrototypeOf([][Symbol.iterator]());
              if (p.Evil) proto.next = () => ({ done: true });
              return { N: [...[1, 2, 3]].length };
            })
            """);
        Assert.Contains("TypeError", Fails(leak, """{"Evil":true}"""));
        Assert.Equal(3.0, Values(Assert.Single(leak.Run(Put("posts/2", "{}"))))["N"]);
    }

    [Fact]
    public void The_engine_s_intrinsics_are_enumerated_and_all_frozen()
    {
        // The sandbox freezes what the engine holds, not a list: the enumeration must find the objects no global names.
        var sandbox = new ScriptSandbox(ScriptLimits.Default, deterministic: true);
        var intrinsics = ScriptSandbox.Intrinsics(sandbox.Engine).ToList();
        var names = intrinsics.Select(o => o.GetType().Name).ToHashSet();
        foreach (var expected in new[] { "ArrayIteratorPrototype", "StringIteratorPrototype", "MapIteratorPrototype", "SetIteratorPrototype", "RegExpStringIteratorPrototype", "IteratorPrototype" })
            Assert.Contains(expected, names);
        sandbox.Seal();
        var isFrozen = sandbox.Engine.Evaluate("Object.isFrozen");
        Assert.All(intrinsics, o => Assert.True(isFrozen.Call(Jint.Native.JsValue.Undefined, [o]).AsBoolean(), o.GetType().Name));
        Assert.True(sandbox.Frozen >= intrinsics.Count, $"{sandbox.Frozen} frozen, {intrinsics.Count} intrinsics");
    }

    [Fact]
    public void Shared_memory_weak_references_a_second_realm_and_the_Intl_clock_are_not_there()
    {
        var types = Values(Assert.Single(Map("map('Posts', p => ({ T: [typeof Atomics, typeof SharedArrayBuffer, typeof ShadowRealm, typeof WeakRef, typeof FinalizationRegistry].join() }))").Run(Put("posts/1", "{}"))));
        Assert.Equal("undefined,undefined,undefined,undefined,undefined", types["T"]);
        // Intl formats a date it is given; without one it would format the current time.
        Assert.Contains("is not allowed in a map or reduce", Fails(Map("map('Posts', p => ({ V: new Intl.DateTimeFormat('en-US').format() }))")));
        Assert.Contains("is not allowed in a map or reduce", Fails(Map("map('Posts', p => ({ V: Intl.DateTimeFormat('en-US').formatToParts().length }))")));
        var formatted = Values(Assert.Single(Map("map('Posts', p => ({ V: new Intl.DateTimeFormat('en-US', { timeZone: 'UTC' }).format(new Date(p.At)) }))").Run(Put("posts/1", """{"At":"2015-01-27T20:09:32.720Z"}"""))));
        Assert.Equal("1/27/2015", formatted["V"]);
        // ETL transforms keep Intl as it is, but not shared memory either.
        var transform = TransformScript.Compile("loadToX({ t: typeof Atomics, f: typeof new Intl.DateTimeFormat('en-US').format() });", ScriptLimits.Default);
        var body = JsonDocument.Parse(Assert.Single(transform.Run(Put("x/1", "{}"))).BodyJson).RootElement;
        Assert.Equal(("undefined", "string"), (body.GetProperty("t").GetString(), body.GetProperty("f").GetString()));
    }

    [Fact]
    public void One_wall_clock_budget_covers_the_whole_run_not_each_regex_or_call()
    {
        // 100 catastrophic regexes, each caught: every one is cut at the regex timeout, and the run at its own budget.
        var limits = ScriptLimits.Default with { Timeout = TimeSpan.FromMilliseconds(300) };
        var regexes = Map("""
            map('Posts', p => {
              let n = 0;
              for (let i = 0; i < 100; i++) { try { if (/^(a+)+$/.test(p.Title)) n++; } catch (e) { n--; } }
              return { N: n };
            })
            """, limits);
        var started = Stopwatch.GetTimestamp();
        Fails(regexes, """{"Title":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!"}""");
        // Each regex alone takes 300 ms: 100 of them would be 30 s. The guard is far above the budget so a slow machine passes.
        Assert.True(Stopwatch.GetElapsedTime(started) < TimeSpan.FromSeconds(5), $"{Stopwatch.GetElapsedTime(started).TotalSeconds:0.0} s");
        StillWorks(regexes);

        // A run that calls back into the engine many times (getters read while the entry is converted) shares the one budget.
        var getters = Map("""
            map('Posts', p => {
              const o = {};
              for (let i = 0; i < 50; i++) Object.defineProperty(o, 'F' + i, { enumerable: true, get() { const t = p.Title; let s = 0; for (let j = 0; j < 1e9; j++) s += j; return s; } });
              return o;
            })
            """, limits with { MaxStatements = int.MaxValue });
        started = Stopwatch.GetTimestamp();
        Assert.Contains("longer than 300 ms", Fails(getters, """{"Title":"x"}"""));
        Assert.True(Stopwatch.GetElapsedTime(started) < TimeSpan.FromSeconds(5), $"{Stopwatch.GetElapsedTime(started).TotalSeconds:0.0} s");

        // Memory too: each getter allocates 24 MB, under the 64 MB limit alone; ten of them in one run are over it.
        var hungry = Map("""
            map('Posts', p => {
              const o = {};
              for (let i = 0; i < 10; i++) Object.defineProperty(o, 'F' + i, { enumerable: true, get() { const xs = []; for (let j = 0; j < 30000; j++) xs.push('y'.repeat(100) + j); return xs.length; } });
              return o;
            })
            """, ScriptLimits.Default with { MaxAllocatedBytes = 64L << 20, MaxStatements = int.MaxValue, Timeout = TimeSpan.FromMinutes(1) });
        Assert.Contains("more than 64 MB", Fails(hungry));
    }

    [Fact]
    public void Entries_with_too_many_fields_fail_their_document()
    {
        var wide = Map("map('Posts', p => { const o = {}; for (let i = 0; i < p.N; i++) o['F' + i] = i; return o; })", ScriptLimits.Default with { MaxStatements = int.MaxValue });
        var started = Stopwatch.GetTimestamp();
        Assert.Contains($"more than {MapScript.MaxEntryFields:N0} fields", Fails(wide, """{"N":100000}"""));
        Assert.True(Stopwatch.GetElapsedTime(started) < TimeSpan.FromSeconds(10), $"{Stopwatch.GetElapsedTime(started).TotalSeconds:0.0} s");
        Assert.Equal(MapScript.MaxEntryFields, Assert.Single(wide.Run(Put("posts/2", $$"""{"N":{{MapScript.MaxEntryFields}}}"""))).Values.Count);
    }

    [Theory]
    [InlineData("(", ")")]
    [InlineData("[", "]")]
    [InlineData("{ ", " }")]
    public void Scripts_nested_past_the_budget_are_refused_before_the_parser_recurses(string open, string close)
    {
        var inner = open == "{ " ? "{ " + string.Concat(Enumerable.Repeat(open, 10_000)) + string.Concat(Enumerable.Repeat(close, 10_000)) + " return { N: 1 }; }" : "({ N: " + string.Concat(Enumerable.Repeat(open, 10_000)) + "1" + string.Concat(Enumerable.Repeat(close, 10_000)) + " })";
        var e = Assert.Throws<ScriptSyntaxException>(() => Map($"map('Posts', p => {inner})"));
        Assert.Contains($"nest deeper than {ScriptShape.MaxNesting} levels", e.Message);
    }

    [Fact]
    public void Nesting_the_bracket_count_cannot_see_is_the_parser_s_refusal_and_brackets_in_text_do_not_count()
    {
        // Prefix operators and chained ternaries nest without brackets: the parser's own guard, reported as a syntax error.
        Assert.Throws<ScriptSyntaxException>(() => Map("map('Posts', p => ({ N: " + new string('!', 100_000) + "p }))"));
        Assert.Throws<ScriptSyntaxException>(() => Map("map('Posts', p => ({ N: " + string.Concat(Enumerable.Repeat("p.a ? 1 : ", 20_000)) + "2 }))"));
        Assert.Contains("over the limit", Assert.Throws<ScriptSyntaxException>(() => Map("map('Posts', p => ({ N: 1 }))" + new string(' ', ScriptShape.MaxLength))).Message);
        // Brackets inside strings, templates and comments are text: 300 of each, and a template's ${ } nests as code.
        var text = new string('(', 300);
        var maps = Map($$"""
            // {{text}}
            /* {{text}} */
            map('Posts', p => ({ A: '{{text}}', B: "{{text}}", C: `{{text}}${ `${ p.X }` }`, D: /\(/.test('(') }))
            """);
        var v = Values(Assert.Single(maps.Run(Put("posts/1", """{"X":"x"}"""))));
        Assert.Equal((text, text, text + "x", true), ((string)v["A"]!, (string)v["B"]!, (string)v["C"]!, (bool)v["D"]!));
    }

    [Fact]
    public void A_map_loads_other_documents_by_id_and_says_which_it_loaded()
    {
        var users = new Dictionary<string, string> { ["users/1"] = """{"Name":"Ada","@metadata":{"@id":"users/1","@collection":"Users"}}""" };
        var maps = Map("map('Posts', p => ({ Owner: (load(p.OwnerId) || {}).Name ?? null, Typed: (load(p.OwnerId, 'Companies') || { Name: 'none' }).Name, Old: LoadDocument(p.Other) }))");
        Assert.True(maps.Loads);
        maps.Loader = id => users.TryGetValue(id, out var json) ? System.Text.Json.JsonDocument.Parse(json).RootElement : null;
        var v = Values(Assert.Single(maps.Run(Put("posts/1", """{"OwnerId":"users/1","Other":"users/404"}"""))));
        Assert.Equal(("Ada", "none", (object?)null), ((string)v["Owner"]!, (string)v["Typed"]!, v["Old"]));
        Assert.Equal(["users/1", "users/404"], maps.Loaded.Order());
        // A load of no id loads nothing; a map that loads too much fails its document.
        Assert.Single(maps.Run(Put("posts/2", """{"OwnerId":null}""")));
        Assert.Empty(maps.Loaded);
        var greedy = Map("map('Posts', p => ({ N: [...Array(200).keys()].map(i => load('users/' + i)).length }))");
        Assert.Contains("more than 128 documents", Assert.Throws<ScriptRunException>(() => greedy.Run(Put("posts/1", "{}"))).Message);
        // A property named load is not the call.
        Assert.False(Map("map('Posts', p => ({ L: p.load }))").Loads);
        // The store unreachable is not the document's error: it passes through the sandbox, so the batch is retried.
        maps.Loader = _ => throw new ScriptHostException("ingest at http://ingest did not answer");
        Assert.Contains("did not answer", Assert.Throws<ScriptHostException>(() => maps.Run(Put("posts/3", """{"OwnerId":"users/1"}"""))).Message);
        // And the same maps run on once the store answers again.
        maps.Loader = id => users.TryGetValue(id, out var json) ? System.Text.Json.JsonDocument.Parse(json).RootElement : null;
        Assert.Equal("Ada", (string)Values(Assert.Single(maps.Run(Put("posts/3", """{"OwnerId":"users/1"}"""))))["Owner"]!);
    }
}
