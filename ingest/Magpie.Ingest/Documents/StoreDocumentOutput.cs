using System.Text;
using Magpie.Contracts.Documents;

namespace Magpie.Ingest.Documents;

/// <summary>Other stages in the same process write documents straight into the store (one atomic batch, durable on return).</summary>
public sealed class StoreDocumentOutput(DocumentStore store) : IDocumentOutput
{
    public async Task<IReadOnlyList<OutputRefusal>> WriteAsync(IReadOnlyList<OutputDocument> documents, CancellationToken ct = default)
    {
        if (documents.Count == 0) return [];
        var commands = documents.Select(d => d.Json is null
            ? WriteCommand.Delete(d.Id)
            : WriteCommand.Put(d.Id, Encoding.UTF8.GetBytes(d.Json), collection: d.Collection)).ToList();
        // Deleting a document that is already gone is what a replay after a crash does: not an error.
        return (await store.WriteAsync(commands, atomic: false, ct))
            .Where(o => o.Error is { Kind: not WriteErrorKind.NotFound })
            .Select(o => new OutputRefusal(o.Id, o.Error!.Message)).ToList();
    }

    public async Task<IReadOnlyList<string>?> IdsAsync(string collection, CancellationToken ct = default)
    {
        var ids = new List<string>();
        long cursor = 0;
        while (true)
        {
            var page = await store.BrowseAsync(collection, 0, 1024, cursor, ct);
            ids.AddRange(page.Results.Select(d => d.Id));
            if (page.NextCursor is not { } next) return ids;
            cursor = next;
        }
    }
}
