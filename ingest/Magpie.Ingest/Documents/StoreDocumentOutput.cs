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
            ? WriteCommand.Delete(d.Id, d.IfMatch)
            : WriteCommand.Put(d.Id, Encoding.UTF8.GetBytes(d.Json), collection: d.Collection)).ToList();
        // Deleting a document that is already gone is what a replay after a crash does, and a conditional delete that finds the
        // document changed (only deletes carry an etag) is skipped by intent: neither is an error.
        return (await store.WriteAsync(commands, atomic: false, ct))
            .Where(o => o.Error is { Kind: not (WriteErrorKind.NotFound or WriteErrorKind.Conflict) })
            .Select(o => new OutputRefusal(o.Id, o.Error!.Message)).ToList();
    }

    public async Task<IReadOnlyList<ListedDocument>?> ListAsync(string collection, string metadata, string version, CancellationToken ct = default)
    {
        var listed = new List<ListedDocument>();
        long cursor = 0;
        while (true)
        {
            var page = await store.BrowseAsync(collection, 0, 1024, cursor, ct);
            foreach (var d in page.Results)
            {
                using var parsed = System.Text.Json.JsonDocument.Parse(d.Json);
                if (DocumentMetadata.Holds(parsed.RootElement, metadata, version)) listed.Add(new ListedDocument(d.Id, d.Etag));
            }
            if (page.NextCursor is not { } next) return listed;
            cursor = next;
        }
    }
}
