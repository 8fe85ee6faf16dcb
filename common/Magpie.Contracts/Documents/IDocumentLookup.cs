using System.Text.Json;

namespace Magpie.Contracts.Documents;

/// <summary>Reads the latest version of a document, as GET /docs/{id} returns it (with <c>@metadata</c>); null when absent.</summary>
public interface IDocumentLookup
{
    ValueTask<JsonElement?> GetAsync(string id, CancellationToken ct = default);
}
