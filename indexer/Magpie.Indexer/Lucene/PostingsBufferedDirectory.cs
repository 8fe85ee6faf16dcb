using Lucene.Net.Store;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// <see cref="NIOFSDirectory"/> (what the issue and lucenenet #1013/#1151 call for: 4.8's MMapDirectory crashes and crawls under
/// concurrent searches) with a larger read buffer for the files a query streams through: postings (8 KiB; 16 KiB, or the terms dictionary too, measured slower).
/// The default 1 KiB buffer makes every 1 KiB of a term's postings one locked positional read of the shared file handle.
/// </summary>
internal sealed class PostingsBufferedDirectory(DirectoryInfo path) : NIOFSDirectory(path)
{
    public const int PostingsBuffer = 8 * 1024;

    private static readonly string[] Streamed = [".doc", ".pos", ".pay"];

    public override IndexInput OpenInput(string name, IOContext context)
    {
        var input = base.OpenInput(name, context);
        // Clones (one per search per segment) keep the size; merges set their own.
        if (input is BufferedIndexInput buffered && context.Context != IOContext.UsageContext.MERGE && Streamed.Any(name.EndsWith))
            buffered.SetBufferSize(PostingsBuffer);
        return input;
    }
}
