using Lucene.Net.Index;
using Lucene.Net.Store;
using Magpie.Indexer.Engine;
using Magpie.Indexer.Lucene;
using Microsoft.Extensions.Logging.Abstractions;

namespace Magpie.Tests.Indexing;

/// <summary>
/// The index directory unlinks deleted files on a task of its own (a commit's deletes no longer hold the writer's lock that
/// refreshes need). For Lucene a deleted file must be gone at once, and no file a commit names may ever go.
/// </summary>
[Trait("Category", "Fast")]
public sealed class IndexDirectoryTests : IDisposable
{
    private readonly string _dir = System.IO.Directory.CreateTempSubdirectory("magpie-indexdir-").FullName;

    public void Dispose()
    {
        try { System.IO.Directory.Delete(_dir, recursive: true); } catch (IOException) { }
    }

    private static void Write(IndexDirectory files, string name, byte value)
    {
        using var output = files.CreateOutput(name, IOContext.DEFAULT);
        output.WriteByte(value);
    }

    [Fact]
    public void A_deleted_file_is_gone_for_lucene_at_once_and_from_the_disk_once_the_directory_closes()
    {
        var files = new IndexDirectory(new DirectoryInfo(_dir));
        Write(files, "_0.fdt", 1);
        Write(files, "_1.fdt", 2);

        files.DeleteFile("_0.fdt");

#pragma warning disable CS0618 // FileExists: obsolete in Lucene.Net, still what Lucene asks
        Assert.False(files.FileExists("_0.fdt"));
        Assert.True(files.FileExists("_1.fdt"));
#pragma warning restore CS0618
        Assert.Equal(["_1.fdt"], files.ListAll());
        Assert.Throws<FileNotFoundException>(() => files.OpenInput("_0.fdt", IOContext.DEFAULT));
        Assert.Throws<FileNotFoundException>(() => files.FileLength("_0.fdt"));
        Assert.Throws<FileNotFoundException>(() => files.DeleteFile("_0.fdt"));
        Assert.Throws<FileNotFoundException>(() => files.DeleteFile("never-written"));

        files.Dispose();
        Assert.Equal(["_1.fdt"], System.IO.Directory.GetFiles(_dir).Select(Path.GetFileName));
    }

    [Fact]
    public void A_name_written_again_while_its_old_file_waits_to_be_unlinked_keeps_the_new_file()
    {
        var files = new IndexDirectory(new DirectoryInfo(_dir));
        // Many deletes first, so the one that matters is most likely still waiting when the name is written again.
        for (var i = 0; i < 200; i++) Write(files, $"_{i}.tmp", 0);
        for (var i = 0; i < 200; i++) files.DeleteFile($"_{i}.tmp");
        Write(files, "_199.tmp", 7);

        using (var input = files.OpenInput("_199.tmp", IOContext.DEFAULT)) Assert.Equal(7, input.ReadByte());
        files.Dispose();
        Assert.Equal(["_199.tmp"], System.IO.Directory.GetFiles(_dir).Select(Path.GetFileName));
        Assert.Equal([7], File.ReadAllBytes(Path.Combine(_dir, "_199.tmp")));
    }

    [Fact]
    public async Task After_commits_and_merges_the_folder_holds_exactly_the_files_of_the_last_commit_and_every_document()
    {
        using var engine = new LuceneEngine(NullLogger.Instance);
        var index = engine.Open(_dir);
        // Small batches, each refreshed and committed: many small segments, merged away as they pile up, so every commit
        // leaves files of the one before it to delete.
        for (var batch = 0; batch < 60; batch++)
        {
            var docs = Enumerable.Range(batch * 50, 50)
                .Select(i => new IndexedDocument($"posts/{i}", [new IndexEntry([new KeywordField("Tag", $"t{i % 7}"), new LongField("N", i)])]))
                .ToList();
            await index.WriteAsync([], docs);
            await index.RefreshAsync();
            await index.CommitAsync(new Dictionary<string, string> { ["batch"] = batch.ToString() });
        }
        index.Close();

        using (var reader = FSDirectory.Open(_dir))
        {
            var commit = new SegmentInfos();
            commit.Read(reader);
            var named = commit.GetFiles(reader, includeSegmentsFile: true).Append("segments.gen").Append("write.lock").ToHashSet();
            var onDisk = System.IO.Directory.GetFiles(_dir).Select(Path.GetFileName).ToHashSet();
            Assert.True(commit.Count < 60, $"merges ran ({commit.Count} segments)");
            Assert.Empty(onDisk.Except(named));
            Assert.Empty(commit.GetFiles(reader, includeSegmentsFile: true).Except(onDisk));
            Assert.Equal("59", commit.UserData["batch"]);
        }

        var reopened = engine.Open(_dir);
        Assert.Equal(3000, (await reopened.StateAsync()).Entries);
        reopened.Close();
    }
}
