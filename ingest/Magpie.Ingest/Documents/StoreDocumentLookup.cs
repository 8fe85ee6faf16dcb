using System.Buffers;
using System.Text.Json;
using Magpie.Contracts.Documents;

namespace Magpie.Ingest.Documents;

/// <summary>The store as other stages in the same process read it (query results are documents).</summary>
public sealed class StoreDocumentLookup(DocumentStore store) : IDocumentLookup
{
    public async ValueTask<JsonElement?> GetAsync(string id, CancellationToken ct = default)
    {
        if (await store.GetAsync(id, ct) is not { } doc) return null;
        var buffer = new ArrayBufferWriter<byte>(doc.Json.Length + 256);
        using (var w = new Utf8JsonWriter(buffer)) DocumentJson.WriteWithMetadata(w, doc);
        return JsonDocument.Parse(buffer.WrittenMemory).RootElement;
    }
}
