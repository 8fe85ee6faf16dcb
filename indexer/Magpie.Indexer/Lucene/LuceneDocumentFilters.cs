using Lucene.Net.Index;
using Lucene.Net.Search;
using Lucene.Net.Store;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// <see cref="IDocumentFilters"/> on the index's own code: the maps (<see cref="MapScript"/>, <see cref="EntryMapping"/>) make
/// the document's entries, <see cref="LuceneDocuments"/> writes them into a small in-memory index exactly as an index writes
/// them, and the query (<see cref="LuceneQueries"/>) runs there. One document is in it at a time.
/// </summary>
public sealed class LuceneDocumentFilters(ScriptLimits limits) : IDocumentFilters
{
    private static readonly TextAnalyzer Analyzer = new();

    public IDocumentFilter Create(IndexDefinition definition, SearchQuery query) =>
        new Filter(definition, MapScript.Compile(definition.Maps, limits), LuceneQueries.Build(query, Analyzer, scored: false));

    private sealed class Filter(IndexDefinition definition, MapScript maps, Query query) : IDocumentFilter, IDisposable
    {
        private readonly System.Threading.Lock _lock = new();
        private readonly RAMDirectory _directory = new();
        private IndexWriter? _writer;

        public bool Matches(ChangeEvent change)
        {
            if (change.Document is null || !maps.Covers(change.Collection)) return false;
            lock (_lock)
            {
                List<Engine.IndexEntry> entries;
                try { entries = maps.Run(change).Select(e => EntryMapping.From(e, definition)).ToList(); }
                catch (Exception e) when (e is ScriptRunException or EntryRefusedException) { return false; }
                if (entries.Count == 0) return false;
                _writer ??= new IndexWriter(_directory, new IndexWriterConfig(LuceneEngine.Version, Analyzer));
                var fields = LuceneDocuments.Fields();
                try
                {
                    _writer.AddDocuments(entries.Select(e => LuceneDocuments.Build(fields, change.Id, e)).ToList());
                    using var reader = DirectoryReader.Open(_writer, applyAllDeletes: true);
                    return new IndexSearcher(reader).Search(query, 1).TotalHits > 0;
                }
                catch (ArgumentException) { return false; }   // a value the engine refuses: the index would not hold the entry either
                finally { _writer.DeleteAll(); }
            }
        }

        public void Dispose()
        {
            _writer?.Dispose();
            _directory.Dispose();
        }
    }
}
