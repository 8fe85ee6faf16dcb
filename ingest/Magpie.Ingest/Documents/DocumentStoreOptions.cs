namespace Magpie.Ingest.Documents;

public sealed class DocumentStoreOptions
{
    /// <summary>Folder holding the change log, the id index and their checkpoints.</summary>
    public required string Directory { get; init; }

    /// <summary>Largest document accepted; the log page is sized to hold it.</summary>
    public int MaxDocumentBytes { get; init; } = 16 * 1024 * 1024;

    /// <summary>Deepest nesting a document may have (a patch's result is held to it, as a PUT body is).</summary>
    public int MaxJsonDepth { get; init; } = DocumentJson.DefaultMaxDepth;

    /// <summary>FasterKV hash index size in bytes (64 MB ≈ 8M buckets slots).</summary>
    public long IndexBytes { get; init; } = 1L << 26;

    /// <summary>FasterKV in-memory log size in bytes; records beyond it spill to disk.</summary>
    public long IndexMemoryBytes { get; init; } = 1L << 28;

    /// <summary>FasterLog in-memory buffer (bytes, power of two, at least 4 pages); pages are allocated as the log grows into it.</summary>
    public long LogMemoryBytes { get; init; } = 1L << 30;

    /// <summary>
    /// Free disk space the store keeps in reserve: a write that would leave less is refused (507) before it touches the
    /// log, and accepted again as soon as space returns. Covers log pages and checkpoints written after the check.
    /// </summary>
    public long MinFreeDiskBytes { get; init; } = 64L << 20;

    /// <summary>How often the id index is checkpointed while writes arrive (recovery replays the log after it).</summary>
    public TimeSpan CheckpointInterval { get; init; } = TimeSpan.FromSeconds(60);
}
