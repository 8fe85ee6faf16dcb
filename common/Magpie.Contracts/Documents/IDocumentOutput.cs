namespace Magpie.Contracts.Documents;

/// <summary>
/// A document another stage writes back into the store: the JSON to put, or null to delete it; with <paramref name="IfMatch"/>,
/// only while the document is still at that etag (a conditional delete that finds it changed is skipped).
/// </summary>
public sealed record OutputDocument(string Id, string Collection, string? Json, long? IfMatch = null);

/// <summary>A document of a collection as a listing gives it: its id and the etag it is at.</summary>
public sealed record ListedDocument(string Id, long Etag);

/// <summary>An output document the store refused (over a limit, not valid as a document): it fails only itself.</summary>
public sealed record OutputRefusal(string Id, string Reason);

/// <summary>
/// How a stage writes documents into the store it does not own (a map/reduce index's output collection): straight
/// into the store when it is in the same process, else through the <c>magpie.documents</c> input topic. Returns once
/// the writes are durable (stored, or acknowledged by Kafka); writing the same batch again leaves the same documents.
/// Documents refused for what they are come back as refusals, the rest are written; a failure of the store or the
/// broker itself throws.
/// </summary>
public interface IDocumentOutput
{
    Task<IReadOnlyList<OutputRefusal>> WriteAsync(IReadOnlyList<OutputDocument> documents, CancellationToken ct = default);

    /// <summary>
    /// The collection's documents whose <c>@metadata</c> names <paramref name="version"/> under <paramref name="metadata"/>
    /// (what an index version wrote), where the output can list them (the store in process, or ingest over HTTP); null where it cannot.
    /// </summary>
    Task<IReadOnlyList<ListedDocument>?> ListAsync(string collection, string metadata, string version, CancellationToken ct = default) =>
        Task.FromResult<IReadOnlyList<ListedDocument>?>(null);
}
