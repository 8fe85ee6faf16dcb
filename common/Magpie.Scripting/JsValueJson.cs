using System.Buffers;
using System.Globalization;
using System.Text.Encodings.Web;
using System.Text.Json;
using Jint;
using Jint.Native;

namespace Magpie.Scripting;

/// <summary>
/// Documents into the engine and script results out of it, straight between <see cref="JsonElement"/> /
/// <see cref="Utf8JsonWriter"/> and Jint's values (no JSON text in between). Output follows JSON.stringify
/// (non-ASCII text stays as it is): undefined and functions are dropped from objects and become null in arrays,
/// NaN and infinities become null, dates and toJSON() are honoured. A result nested deeper than the sandbox's
/// <see cref="ScriptLimits.MaxJsonDepth"/> (or referring to itself) fails its document with a
/// <see cref="ScriptRunException"/>, before any recursion could exhaust the stack.
/// </summary>
public static class JsValueJson
{
    public static JsValue ToJs(Engine engine, JsonElement e) => e.ValueKind switch
    {
        JsonValueKind.Object => ObjectOf(engine, e),
        JsonValueKind.Array => ArrayOf(engine, e),
        JsonValueKind.String => JsString.Create(e.GetString()!),
        JsonValueKind.Number => JsNumber.Create(e.GetDouble()),
        JsonValueKind.True => JsBoolean.True,
        JsonValueKind.False => JsBoolean.False,
        _ => JsValue.Null,
    };

    private static JsObject ObjectOf(Engine engine, JsonElement e)
    {
        var properties = new List<KeyValuePair<string, JsValue>>();
        foreach (var p in e.EnumerateObject()) properties.Add(new(p.Name, ToJs(engine, p.Value)));
        return JsObject.CreateFromEntries(engine, properties);
    }

    private static JsArray ArrayOf(Engine engine, JsonElement e)
    {
        var items = new JsValue[e.GetArrayLength()];
        var i = 0;
        foreach (var item in e.EnumerateArray()) items[i++] = ToJs(engine, item);
        return new JsArray(engine, items);
    }

    /// <summary>The value as JSON text; <paramref name="depth"/> is how deep in a result it sits (its levels count toward the limit).</summary>
    public static string Serialize(Engine engine, JsValue value, int maxDepth, int depth = 0)
    {
        var buffer = new ArrayBufferWriter<byte>(1024);
        using (var w = new Utf8JsonWriter(buffer, new JsonWriterOptions { SkipValidation = true, Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping }))
            if (!Write(engine, w, value, depth, maxDepth)) w.WriteNullValue();
        return System.Text.Encoding.UTF8.GetString(buffer.WrittenSpan);
    }

    /// <summary>How many elements an array has (its <c>length</c>).</summary>
    public static uint LengthOf(JsArray a) => (uint)a.Get("length").AsNumber();

    /// <summary>Throws the <see cref="ScriptRunException"/> every conversion of a result uses past the depth limit.</summary>
    public static void CheckDepth(int depth, int maxDepth)
    {
        if (depth > maxDepth) throw new ScriptRunException($"the script's result is nested deeper than {maxDepth} levels (or refers to itself)");
    }

    /// <summary>Writes the value; false when JSON.stringify would leave it out (undefined, functions).</summary>
    private static bool Write(Engine engine, Utf8JsonWriter w, JsValue v, int depth, int maxDepth)
    {
        CheckDepth(depth, maxDepth);
        if (v.IsCallable()) return false;
        switch (v)
        {
            case JsUndefined: return false;
            case JsNull: w.WriteNullValue(); return true;
            case JsBoolean b: w.WriteBooleanValue(b.AsBoolean()); return true;
            case JsString s: w.WriteStringValue(s.ToString()); return true;
            case JsNumber n: WriteNumber(w, n.AsNumber()); return true;
            case JsDate d:
                if (double.IsFinite(d.DateValue)) w.WriteStringValue(d.ToDateTime().ToUniversalTime().ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture));
                else w.WriteNullValue();
                return true;
            case JsArray a:
                w.WriteStartArray();
                for (uint i = 0, n = LengthOf(a); i < n; i++)
                    if (!Write(engine, w, a.Get(i), depth + 1, maxDepth)) w.WriteNullValue();
                w.WriteEndArray();
                return true;
            case JsObject o:
                if (o.Get("toJSON") is var toJson && toJson.IsCallable()) return Write(engine, w, toJson.Call(o, []), depth + 1, maxDepth);
                w.WriteStartObject();
                foreach (var (key, descriptor) in o.GetOwnProperties())
                {
                    if (!key.IsString() || !descriptor.Enumerable) continue;
                    var value = descriptor.IsDataDescriptor() ? descriptor.Value : o.Get(key);
                    if (value is JsUndefined || value.IsCallable()) continue;
                    w.WritePropertyName(key.AsString());
                    Write(engine, w, value, depth + 1, maxDepth);
                }
                w.WriteEndObject();
                return true;
            default:
                // Boxed primitives, maps, typed arrays…: rare in results; JSON.stringify's own rules, at this depth.
                var json = new Jint.Native.Json.JsonSerializer(engine).Serialize(v);
                if (json is JsUndefined) return false;
                w.WriteRawValue(json.ToString(), skipInputValidation: true);
                return true;
        }
    }

    private static void WriteNumber(Utf8JsonWriter w, double n)
    {
        if (double.IsFinite(n)) w.WriteNumberValue(n);
        else w.WriteNullValue();
    }
}
