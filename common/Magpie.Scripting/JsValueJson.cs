using System.Buffers;
using System.Globalization;
using System.Text.Encodings.Web;
using System.Text.Json;
using Jint.Native;
using Jint.Native.Array;
using Jint.Native.Date;
using Jint.Native.Json;
using Jint.Native.Object;
using Jint.Runtime;

namespace Magpie.Scripting;

/// <summary>
/// Documents into the engine and loaded objects out of it, without Jint 2's JSON text parser and
/// serializer: the ETL profile had them as the largest costs of a transform (string scanning and quoting
/// one character at a time). Output follows JSON.stringify (non-ASCII text stays as it is, not \u-escaped): undefined and functions are dropped from
/// objects and become null in arrays, NaN and infinities become null, dates and toJSON() are honoured.
/// </summary>
public static class JsValueJson
{
    private const int MaxDepth = 64;

    public static JsValue ToJs(Jint.Engine engine, JsonParser parser, JsonElement e) => e.ValueKind switch
    {
        JsonValueKind.Object => ObjectOf(engine, parser, e),
        JsonValueKind.Array => parser.CreateArrayInstance(e.EnumerateArray().Select(item => ToJs(engine, parser, item)).ToList()),
        JsonValueKind.String => new JsValue(e.GetString()!),
        JsonValueKind.Number => new JsValue(e.GetDouble()),
        JsonValueKind.True => JsValue.True,
        JsonValueKind.False => JsValue.False,
        _ => JsValue.Null,
    };

    private static ObjectInstance ObjectOf(Jint.Engine engine, JsonParser parser, JsonElement e)
    {
        var o = engine.Object.Construct(Arguments.Empty);
        foreach (var p in e.EnumerateObject()) o.FastAddProperty(p.Name, ToJs(engine, parser, p.Value), true, true, true);
        return o;
    }

    public static string Serialize(JsValue value)
    {
        var buffer = new ArrayBufferWriter<byte>(1024);
        using (var w = new Utf8JsonWriter(buffer, new JsonWriterOptions { SkipValidation = true, Encoder = JavaScriptEncoder.UnsafeRelaxedJsonEscaping }))
            if (!Write(w, value, 0)) w.WriteNullValue();
        return System.Text.Encoding.UTF8.GetString(buffer.WrittenSpan);
    }

    /// <summary>Writes the value; false when JSON.stringify would leave it out (undefined, functions).</summary>
    private static bool Write(Utf8JsonWriter w, JsValue v, int depth)
    {
        if (depth > MaxDepth) throw new ScriptRunException($"loaded object is nested deeper than {MaxDepth} levels (or refers to itself)");
        if (v.IsUndefined()) return false;
        if (v.IsNull()) { w.WriteNullValue(); return true; }
        if (v.IsBoolean()) { w.WriteBooleanValue(v.AsBoolean()); return true; }
        if (v.IsString()) { w.WriteStringValue(v.AsString()); return true; }
        if (v.IsNumber()) { WriteNumber(w, v.AsNumber()); return true; }
        var o = v.AsObject();
        if (o is DateInstance d)
        {
            w.WriteStringValue(d.ToDateTime().ToUniversalTime().ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture));
            return true;
        }
        if (o.Get("toJSON") is { } toJson && toJson.IsObject() && toJson.AsObject().Class == "Function")
            return Write(w, toJson.Invoke(v, Arguments.Empty), depth + 1);
        switch (o.Class)
        {
            case "Function": return false;
            case "String": w.WriteStringValue(TypeConverter.ToString(v)); return true;
            case "Number": WriteNumber(w, TypeConverter.ToNumber(v)); return true;
            case "Boolean": w.WriteBooleanValue(TypeConverter.ToBoolean(v)); return true;
        }
        if (o is ArrayInstance a)
        {
            w.WriteStartArray();
            var length = (uint)TypeConverter.ToNumber(a.Get("length"));
            for (uint i = 0; i < length; i++)
                if (!Write(w, a.Get(i.ToString(CultureInfo.InvariantCulture)), depth + 1)) w.WriteNullValue();
            w.WriteEndArray();
            return true;
        }
        w.WriteStartObject();
        foreach (var (name, descriptor) in o.GetOwnProperties().ToList())
        {
            if (descriptor.Enumerable != true) continue;
            var value = o.Get(name);
            if (value.IsUndefined() || (value.IsObject() && value.AsObject().Class == "Function")) continue;
            w.WritePropertyName(name);
            Write(w, value, depth + 1);
        }
        w.WriteEndObject();
        return true;
    }

    private static void WriteNumber(Utf8JsonWriter w, double n)
    {
        if (double.IsFinite(n)) w.WriteNumberValue(n);
        else w.WriteNullValue();
    }
}
