using Acornima.Ast;
using Jint;
using Jint.Native;
using Jint.Native.Object;
using Magpie.Contracts.Changes;
using Magpie.Scripting;

namespace Magpie.Indexer.Maps;

/// <summary>One index entry as the map returned it: property name → value (string, double, bool, null, a list of those, or nested JSON text).</summary>
public sealed record MappedEntry(IReadOnlyList<KeyValuePair<string, object?>> Values);

/// <summary>
/// An index's maps, RavenDB style: each string calls <c>map('Collection', doc => ({ … }))</c> once; the
/// function returns an entry, an array of entries, or null/undefined for none. <c>id(doc)</c> is the document
/// id. <c>load(id)</c> (or <c>load(id, 'Collection')</c>, null unless the document is of that collection) reads another
/// document through <see cref="Loader"/>, null when it does not exist; the ids a map loaded are in <see cref="Loaded"/>, so the
/// index can map it again when one of them changes. Each map is parsed once; per document its top level runs again in a
/// deterministic sandbox whose globals are reset, so nothing one document's map did (a counter, a cache in a closure) is seen by the next.
/// </summary>
public sealed class MapScript
{
    private readonly ScriptSandbox _sandbox;
    private readonly int _maxDepth;
    private readonly List<(string Collection, Prepared<Script> Source, FieldProjection? Projection)> _maps = [];
    private (JsValue Collection, JsValue Map)? _registered;
    private string _currentId = "";
    private JsValue _current = JsValue.Undefined;
    private readonly HashSet<string> _loaded = new(StringComparer.Ordinal);

    /// <summary>Most documents one document's maps may load.</summary>
    public const int MaxLoadsPerDocument = 128;

    /// <summary>Reads a document for <c>load(id)</c>: its JSON with <c>@metadata</c>, or null. Null: every load answers null.</summary>
    public Func<string, System.Text.Json.JsonElement?>? Loader { get; set; }

    /// <summary>The ids the last document's maps loaded (<see cref="Run"/>, <see cref="RunJson"/>), found or not.</summary>
    public IReadOnlyCollection<string> Loaded => _loaded;

    /// <summary>Whether any map calls <c>load</c> (or RavenDB's <c>LoadDocument</c>): the index then keeps what each document loaded.</summary>
    public bool Loads { get; private set; }

    private MapScript(ScriptLimits limits)
    {
        _maxDepth = limits.MaxJsonDepth;
        _sandbox = new ScriptSandbox(limits, deterministic: true);
        _sandbox.Define("map", args =>
        {
            if (_registered is not null) throw new ScriptRunException("a map source must call map('Collection', doc => ({ … })) exactly once");
            _registered = (args.Length > 0 ? args[0] : JsValue.Undefined, args.Length > 1 ? args[1] : JsValue.Undefined);
            return JsValue.Undefined;
        }, 2);
        _sandbox.Define("id", args => args.Length > 0 && args[0] is ObjectInstance o && ReferenceEquals(o, _current) ? _currentId : JsValue.Undefined, 1);
        _sandbox.Define("load", args => Load(args.Length > 0 ? args[0] : JsValue.Undefined, args.Length > 1 ? args[1] : JsValue.Undefined), 2);
        _sandbox.Define("LoadDocument", args => Load(args.Length > 0 ? args[0] : JsValue.Undefined, args.Length > 1 ? args[1] : JsValue.Undefined), 2);
        _sandbox.Define("createVector", args => CreateVector(args.Length > 0 ? args[0] : JsValue.Undefined), 1);
        _sandbox.Define("embedding", "text", args => EmbeddingOf(args.Length > 0 ? args[0] : JsValue.Undefined, args.Length > 1 ? args[1] : JsValue.Undefined), 2);
        // ai.task('name'), RavenDB's way to name who embeds: the embedding connection (embedding.text(p.Title, ai.task('openai'))).
        _sandbox.Define("ai", "task", args => args.Length > 0 && args[0].IsString() && Embeddings.Connections.EmbeddingConnection.NameProblem(args[0].AsString()) is null
            ? args[0]
            : throw new ScriptRunException(args.Length > 0 && args[0].IsString() ? Embeddings.Connections.EmbeddingConnection.NameProblem(args[0].AsString())! : "ai.task names an embedding connection: ai.task('name')"), 1);
        foreach (var quantized in new[] { "text_i8", "text_i1" })
            _sandbox.Define("embedding", quantized, _ => throw new ScriptRunException(
                $"in a map, embedding.text makes the vector; to hold it quantized, set the field's vector.quantization (\"int8\" or \"binary\"; embedding.{quantized} is for queries on automatic indexes)"), 1);
        _sandbox.Seal();
    }

    /// <summary>The collections the maps cover (case-insensitive); <see cref="AllDocs"/> stands for every one.</summary>
    public IReadOnlySet<string> Collections { get; private set; } = new HashSet<string>();

    /// <summary><c>map('@all_docs', …)</c>: a map over every collection (RavenDB's <c>from @all_docs</c>).</summary>
    public const string AllDocs = "@all_docs";

    /// <summary>Whether a map reads documents of the collection.</summary>
    public bool Covers(string collection) => Covering(Collections, collection);

    /// <summary>The last change of each document of the maps' collections in the batch: earlier ones are superseded.</summary>
    public IEnumerable<ChangeEvent> LatestOf(ChangeBatch batch)
    {
        var latest = new Dictionary<string, ChangeEvent>(StringComparer.Ordinal);
        foreach (var change in batch.Changes)
            if (Covers(change.Collection)) latest[change.Id] = change;
        return latest.Values;
    }

    /// <summary>Whether maps reading <paramref name="collections"/> read documents of <paramref name="collection"/>.</summary>
    public static bool Covering(IReadOnlySet<string> collections, string collection) => collections.Contains(collection) || collections.Contains(AllDocs);

    /// <summary>Throws <see cref="ScriptSyntaxException"/> naming the map (0-based, as in the definition's array) and the position in it.</summary>
    /// <param name="fieldProjections">Maps that only copy fields skip the engine (<see cref="FieldProjection"/>); off, every map runs in it (tests compare the two).</param>
    public static MapScript Compile(IReadOnlyList<string> maps, ScriptLimits limits, bool fieldProjections = true)
    {
        if (maps.Count == 0) throw new ScriptSyntaxException("an index needs at least one map: map('Collection', doc => ({ … }))", 1, 1);
        var script = new MapScript(limits);
        for (var i = 0; i < maps.Count; i++)
        {
            var source = ScriptSandbox.Prepare(maps[i], $"maps[{i}]");
            if (source.Program is { } parsed && CallsLoad(parsed)) script.Loads = true;
            JsValue collection;
            try { collection = script._sandbox.Run(() => script.Register(source).Collection); }
            catch (ScriptRunException e) { throw new ScriptSyntaxException($"maps[{i}]: {e.Message}", 1, 1); }
            script._maps.Add((collection.AsString(), source, fieldProjections && source.Program is { } program ? FieldProjection.Of(program, maps[i]) : null));   // the AST Jint parsed: no second parse
        }
        script.Collections = script._maps.Select(m => m.Collection).ToHashSet(StringComparer.OrdinalIgnoreCase);
        return script;
    }

    /// <summary>Whether a map calls <c>load</c> or <c>LoadDocument</c>. The parser's nesting was bounded before this walk.</summary>
    private static bool CallsLoad(Node program)
    {
        var pending = new Stack<Node>([program]);
        while (pending.TryPop(out var node))
        {
            if (node is CallExpression { Callee: Identifier { Name: "load" or "LoadDocument" } }) return true;
            foreach (var child in node.ChildNodes) pending.Push(child);
        }
        return false;
    }

    /// <summary>The vectors this run's <c>createVector</c> made, by the object it returned (that object in an entry is the vector).</summary>
    private readonly Dictionary<ObjectInstance, float[]> _vectors = new(ReferenceEqualityComparer.Instance);

    /// <summary>The texts this run's <c>embedding.text</c> asked vectors of (and who makes them), by the object it returned.</summary>
    private readonly Dictionary<ObjectInstance, EmbeddingValue> _embeddings = new(ReferenceEqualityComparer.Instance);

    /// <summary>
    /// <c>embedding.text(p.Title + ' ' + p.Body)</c>: a vector the built-in model makes of the text (an array of strings is one text,
    /// its elements on lines of their own). Nothing (no vector) for null, undefined, or text that is empty or whitespace.
    /// <c>embedding.text(text, ai.task('name'))</c>: the embedding connection <c>name</c> makes it.
    /// </summary>
    private JsValue EmbeddingOf(JsValue value, JsValue connection)
    {
        string? by = null;
        if (connection.IsString()) by = connection.AsString();
        else if (!connection.IsUndefined()) throw new ScriptRunException($"embedding.text's second argument names the embedding connection (ai.task('name')), not {connection.Type}");
        string text;
        if (value.IsNull() || value.IsUndefined()) return JsValue.Undefined;
        if (value.IsString()) text = value.AsString();
        else if (value is JsArray array)
        {
            var lines = new List<string>();
            for (uint i = 0, n = JsValueJson.LengthOf(array); i < n; i++)
                if (array.Get(i) is var item && item.IsString()) lines.Add(item.AsString());
                else if (!item.IsNull() && !item.IsUndefined()) throw new ScriptRunException($"embedding.text takes text or an array of texts: element {i} is {item.Type}");
            text = string.Join('\n', lines);
        }
        else throw new ScriptRunException($"embedding.text takes text or an array of texts, not {value.Type}");
        if (Magpie.Embeddings.EmbeddingText.Of(text) is not { } cut) return JsValue.Undefined;
        var made = new JsObject(_sandbox.Engine);
        _embeddings[made] = new EmbeddingValue(cut, by);
        return made;
    }

    /// <summary>
    /// <c>createVector([0.1, …])</c> or <c>createVector('base64 of float32s')</c>: a vector value for an entry. What is not an array of
    /// finite numbers (or whole little-endian float32s in base64), or has more than 4,096 dimensions, fails the document.
    /// </summary>
    private JsValue CreateVector(JsValue value)
    {
        // createVector(embedding.text(…)), RavenDB's form: the text's vector, made with the batch's others.
        if (value is ObjectInstance asked && _embeddings.ContainsKey(asked)) return asked;
        if (value.IsUndefined()) return JsValue.Undefined;
        float[] vector;
        if (value is JsArray array)
        {
            var n = JsValueJson.LengthOf(array);
            if (n is 0 or > Contracts.Indexes.VectorFieldOptions.MaxDimensions) throw new ScriptRunException($"createVector takes 1 to {Contracts.Indexes.VectorFieldOptions.MaxDimensions:N0} numbers, not {n:N0}");
            vector = new float[n];
            for (uint i = 0; i < n; i++)
                vector[i] = array.Get(i) is JsNumber x && float.IsFinite((float)x.AsNumber()) ? (float)x.AsNumber()
                    : throw new ScriptRunException($"createVector takes numbers within float32's range: element {i} is {array.Get(i)}");
        }
        else if (value.IsString())
        {
            byte[] bytes;
            try { bytes = Convert.FromBase64String(value.AsString()); }
            catch (FormatException) { throw new ScriptRunException("createVector's string is not base64"); }
            if (bytes.Length == 0 || bytes.Length % 4 != 0 || bytes.Length / 4 > Contracts.Indexes.VectorFieldOptions.MaxDimensions)
                throw new ScriptRunException($"createVector's base64 holds {bytes.Length} bytes: 1 to {Contracts.Indexes.VectorFieldOptions.MaxDimensions:N0} little-endian float32s");
            vector = System.Runtime.InteropServices.MemoryMarshal.Cast<byte, float>(bytes).ToArray();
            if (!BitConverter.IsLittleEndian) throw new ScriptRunException("createVector's base64 needs a little-endian host");
            foreach (var x in vector) if (!float.IsFinite(x)) throw new ScriptRunException("createVector's base64 holds a value that is not a finite number");
        }
        else throw new ScriptRunException($"createVector takes an array of numbers or a base64 string, not {value.Type}");
        if (Contracts.Indexes.VectorFieldOptions.Unsearchable(vector) is { } problem) throw new ScriptRunException($"createVector's vector {problem}");
        var made = new JsObject(_sandbox.Engine);
        _vectors[made] = vector;
        return made;
    }

    /// <summary><c>load(id[, collection])</c>: the document, or null (no such document, not of that collection, or no id).</summary>
    private JsValue Load(JsValue id, JsValue collection)
    {
        if (!id.IsString() || id.AsString() is not { Length: > 0 } key) return JsValue.Null;
        if (_loaded.Add(key) && _loaded.Count > MaxLoadsPerDocument)
            throw new ScriptRunException($"the map loaded more than {MaxLoadsPerDocument} documents for one document (the limit)");
        if (Loader?.Invoke(key) is not { } document) return JsValue.Null;
        if (collection.IsString() && !(document.TryGetProperty("@metadata", out var m) && m.TryGetProperty("@collection", out var c)
            && string.Equals(c.GetString(), collection.AsString(), StringComparison.OrdinalIgnoreCase))) return JsValue.Null;
        return JsValueJson.ToJs(_sandbox.Engine, document);
    }

    /// <summary>Runs a map source's top level; what its <c>map(…)</c> call registered. Inside a sandbox run.</summary>
    private (JsValue Collection, JsValue Map) Register(Prepared<Script> source)
    {
        _registered = null;
        _sandbox.Engine.Execute(source);
        if (_registered is not var (collection, map) || !collection.IsString() || !map.IsCallable())
            throw new ScriptRunException("must call map('Collection', doc => ({ … })) exactly once");
        return (collection, map);
    }

    /// <summary>The entries of one document (none if no map covers its collection). Throws <see cref="ScriptRunException"/>.</summary>
    public IReadOnlyList<MappedEntry> Run(ChangeEvent change)
    {
        _loaded.Clear();
        _vectors.Clear();
        _embeddings.Clear();
        var entries = new List<MappedEntry>();
        if (change.Document is not { } document) return entries;
        foreach (var map in _maps)
        {
            if (!string.Equals(map.Collection, change.Collection, StringComparison.OrdinalIgnoreCase) && map.Collection != AllDocs) continue;
            // A map that only copies fields reads them from the JSON; what it declines, the engine maps.
            if (map.Projection?.TryMap(document, change.Id, _maxDepth) is { } projected) entries.Add(projected);
            else RunOne(map.Source, change.Id, document, value => entries.Add(EntryOf(value)));
        }
        return entries;
    }

    /// <summary>Whether each map runs in the engine (false) or only copies fields (true), in the definition's order.</summary>
    public IReadOnlyList<bool> Projections => _maps.Select(m => m.Projection is not null).ToList();

    /// <summary>The entries of one document as JSON text (map/reduce: what the reduce reads). Throws <see cref="ScriptRunException"/>.</summary>
    public IReadOnlyList<string> RunJson(ChangeEvent change)
    {
        _loaded.Clear();
        var entries = new List<string>();
        _vectors.Clear();
        _embeddings.Clear();
        Each(change, value => entries.Add(JsValueJson.Serialize(_sandbox.Engine, ObjectOf(value), _maxDepth)));
        if (_vectors.Count + _embeddings.Count > 0) throw new ScriptRunException("createVector makes values for map indexes to search; a reduce does not take them");
        return entries;
    }

    /// <summary>Runs the maps of the document's collection and hands each entry they returned (arrays flattened, nulls skipped) to <paramref name="entry"/>, inside the run.</summary>
    private void Each(ChangeEvent change, Action<JsValue> entry)
    {
        if (change.Document is not { } document) return;
        foreach (var (collection, source, _) in _maps)
            if (string.Equals(collection, change.Collection, StringComparison.OrdinalIgnoreCase)) RunOne(source, change.Id, document, entry);
    }

    /// <summary>Runs one map over the document in the engine, handing each entry it returned to <paramref name="entry"/>.</summary>
    private void RunOne(Prepared<Script> source, string id, System.Text.Json.JsonElement document, Action<JsValue> entry) =>
        _sandbox.Run(() =>
        {
            var (_, map) = Register(source);
            _currentId = id;
            _current = JsValueJson.ToJs(_sandbox.Engine, document);
            var result = map.Call(JsValue.Undefined, [_current]);
            if (result is JsArray array)
                for (uint i = 0, n = JsValueJson.LengthOf(array); i < n; i++) Emit(array.Get(i), entry);
            else Emit(result, entry);
            return true;
        });

    private static void Emit(JsValue value, Action<JsValue> entry)
    {
        if (!value.IsNull() && !value.IsUndefined()) entry(value);
    }

    private static ObjectInstance ObjectOf(JsValue value) =>
        value is ObjectInstance o and not JsArray && !value.IsCallable() ? o : throw new ScriptRunException("a map must return an object, an array of objects, or null");

    /// <summary>Most fields one entry may have: each becomes Lucene fields and terms; a map copying a document's keys wholesale stops here.</summary>
    public const int MaxEntryFields = 10_000;

    private MappedEntry EntryOf(JsValue value)
    {
        var o = ObjectOf(value);
        var values = new List<KeyValuePair<string, object?>>();
        foreach (var (key, descriptor) in o.GetOwnProperties())
        {
            if (!key.IsString() || !descriptor.Enumerable) continue;
            if (values.Count == MaxEntryFields) throw new ScriptRunException($"the map returned an entry of more than {MaxEntryFields:N0} fields");
            var v = descriptor.IsDataDescriptor() ? descriptor.Value : o.Get(key);
            if (v is JsUndefined || v.IsCallable()) continue;
            values.Add(new(key.AsString(), ToClr(v, 1)));
        }
        return new MappedEntry(values);
    }

    private object? ToClr(JsValue v, int depth)
    {
        JsValueJson.CheckDepth(depth, _maxDepth);
        if (v is ObjectInstance made && _vectors.TryGetValue(made, out var vector)) return new VectorValue(vector);
        if (v is ObjectInstance asked && _embeddings.TryGetValue(asked, out var embedding)) return embedding;
        switch (v)
        {
            case JsNull or JsUndefined: return null;
            case JsString s: return s.ToString();
            case JsNumber n: return n.AsNumber();
            case JsBoolean b: return b.AsBoolean();
            case JsArray a:
                var list = new List<object?>();
                for (uint i = 0, n = JsValueJson.LengthOf(a); i < n; i++) list.Add(ToClr(a.Get(i), depth + 1));
                return list;
            default: return new NestedJson(JsValueJson.Serialize(_sandbox.Engine, v, _maxDepth, depth));
        }
    }
}

/// <summary>A vector an entry holds (<c>createVector</c>).</summary>
public sealed record VectorValue(float[] Values);

/// <summary>A vector an entry holds, still to be made from its text by the embedding model (<c>embedding.text</c>); <paramref name="Connection"/> null: the built-in model.</summary>
public sealed record EmbeddingValue(string Text, string? Connection);

/// <summary>An object value inside an entry: indexed as its JSON text, as RavenDB does.</summary>
public sealed record NestedJson(string Json);
