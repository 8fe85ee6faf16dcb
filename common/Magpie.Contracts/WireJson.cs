using System.Text.Json;

namespace Magpie.Contracts;

/// <summary>
/// The JSON settings of every response and process-to-process message that carries documents: web defaults, and a depth limit
/// above anything the store accepts (<see cref="MaxDocumentDepth"/>), so a document the store took can always be written back,
/// inside a page, a stream line or a shard's answer (System.Text.Json's own default of 64 made a 63-level document a 500).
/// </summary>
public static class WireJson
{
    /// <summary>The deepest document a store may be configured to accept.</summary>
    public const int MaxDocumentDepth = 512;

    /// <summary>Room for the envelopes around a document (a page, its results array, a shard answer, a projection).</summary>
    public const int MaxDepth = MaxDocumentDepth + 32;

    public static readonly JsonSerializerOptions Web = new(JsonSerializerDefaults.Web) { MaxDepth = MaxDepth };
}
