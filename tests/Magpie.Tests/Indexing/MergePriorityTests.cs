using Lucene.Net.Documents;
using Lucene.Net.Index;
using Lucene.Net.Store;
using Magpie.Indexer.Lucene;

namespace Magpie.Tests.Indexing;

/// <summary>Merges run below the writes: their threads are niced on Linux, and only they are.</summary>
[Trait("Category", "Fast")]
public sealed class MergePriorityTests : IDisposable
{
    private readonly string _dir = System.IO.Directory.CreateTempSubdirectory("magpie-merge-").FullName;

    public void Dispose()
    {
        try { System.IO.Directory.Delete(_dir, recursive: true); } catch (IOException) { }
    }

    [Fact]
    public void A_merge_runs_on_a_thread_niced_10_steps_further_and_the_writing_thread_keeps_its_priority()
    {
        Assert.True(OperatingSystem.IsLinux(), "thread nice values are read from /proc");
        var writing = Nice("thread-self");
        var warmedAt = new List<int>();
        using var files = new NIOFSDirectory(new DirectoryInfo(_dir));
        var config = new IndexWriterConfig(LuceneEngine.Version, new Lucene.Net.Analysis.Core.KeywordAnalyzer())
        {
            MergeScheduler = new BackgroundMergeScheduler(),
            MergedSegmentWarmer = new Recorder(warmedAt),   // called on the thread that ran the merge
        };
        using (var writer = new IndexWriter(files, config))
        {
            using var reader = DirectoryReader.Open(writer, applyAllDeletes: true);   // near-real-time: merged segments get warmed
            for (var segment = 0; segment < 4; segment++)
            {
                for (var i = 0; i < 50; i++) writer.AddDocument([new StringField("id", $"{segment}/{i}", Field.Store.NO)]);
                writer.Commit();
            }
            writer.ForceMerge(1);
        }

        Assert.NotEmpty(warmedAt);
        Assert.All(warmedAt, nice => Assert.Equal(Math.Min(19, writing + BackgroundMergeScheduler.MergeNice), nice));
        Assert.Equal(writing, Nice("thread-self"));
        Assert.Equal(writing, Nice("self"));   // the process's main thread
    }

    /// <summary>A thread's nice value: field 19 of its stat line, counted after the command name in parentheses.</summary>
    private static int Nice(string proc)
    {
        var stat = File.ReadAllText($"/proc/{proc}/stat");
        return int.Parse(stat[(stat.LastIndexOf(')') + 2)..].Split(' ')[16]);
    }

    private sealed class Recorder(List<int> nices) : IndexWriter.IndexReaderWarmer
    {
        public override void Warm(AtomicReader reader)
        {
            lock (nices) nices.Add(Nice("thread-self"));
        }
    }
}
