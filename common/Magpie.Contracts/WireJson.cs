using System.Text.Json;

namespace Magpie.Contracts;

/// <summary>
/// The JSON settings of every response and process-to-process message: web defaults; a depth limit above anything the store accepts
/// (<see cref="MaxDocumentDepth"/>), so a document the store took can always be written back, inside a page, a stream line or a
/// shard's answer (System.Text.Json's own default of 64 made a 63-level document a 500); and text as written: responses are
/// <c>application/json</c>, never HTML, so <c>'</c>, <c>&lt;</c>, <c>&gt;</c>, <c>&amp;</c> and non-ASCII letters need no escape (an index's
/// map came back as <c>map(\u0027Users\u0027, u =\u003E …)</c>).
/// </summary>
public static class WireJson
{
    /// <summary>The deepest document a store may be configured to accept.</summary>
    public const int MaxDocumentDepth = 512;

    /// <summary>Room for the envelopes around a document (a page, its results array, a shard answer, a projection).</summary>
    public const int MaxDepth = MaxDocumentDepth + 32;

    public static readonly JsonSerializerOptions Web = Configure(new JsonSerializerOptions(JsonSerializerDefaults.Web));

    /// <summary>A writer's settings for the same text as written (documents Magpie's producers make, say).</summary>
    public static readonly JsonWriterOptions Writer = new() { Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping, MaxDepth = MaxDepth };

    /// <summary>Sets these settings on <paramref name="options"/> (ASP.NET's own, say) and returns it.</summary>
    public static JsonSerializerOptions Configure(JsonSerializerOptions options)
    {
        options.MaxDepth = MaxDepth;
        options.Encoder = System.Text.Encodings.Web.JavaScriptEncoder.UnsafeRelaxedJsonEscaping;
        return options;
    }
}
