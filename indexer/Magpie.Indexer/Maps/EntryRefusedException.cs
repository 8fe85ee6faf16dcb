namespace Magpie.Indexer.Maps;

/// <summary>A mapped (or reduced) entry the index engine cannot hold: a reserved field name, a term over Lucene's limit. It fails its document, never the index.</summary>
public sealed class EntryRefusedException(string message) : Exception(message);
