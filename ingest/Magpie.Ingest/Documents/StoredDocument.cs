namespace Magpie.Ingest.Documents;

/// <summary>The latest committed version of a document, with its JSON exactly as written.</summary>
public sealed record StoredDocument(string Id, string Collection, long Etag, DateTimeOffset LastModified, byte[] Json);
