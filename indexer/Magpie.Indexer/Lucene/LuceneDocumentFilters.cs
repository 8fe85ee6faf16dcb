using Lucene.Net.Analysis;
using Lucene.Net.Index;
using Lucene.Net.Index.Memory;
using Lucene.Net.Search;
using Lucene.Net.Store;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;
using Magpie.Indexer.Maps;
using Magpie.Scripting;

using Magpie.Indexer.Lucene.Text;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// <see cref="IDocumentFilters"/> on the index's own code: the maps (<see cref="MapScript"/>, <see cref="EntryMapping"/>) make
/// the document's entries, each entry becomes a one-document in-memory index with the terms the index would hold, and the
/// query (<see cref="LuceneQueries"/>) runs there; a document matches when one of its entries does.
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
                // A condition never searches vectors (vector.search runs on an index): texts to embed are left out, not embedded.
                try { entries = maps.Run(change).Select(e => EntryMapping.From(e, definition)).Select(e => e.Fields.Any(f => f is Engine.EmbeddingField) ? new Engine.IndexEntry([.. e.Fields.Where(f => f is not Engine.EmbeddingField)]) : e).ToList(); }
                catch (Exception e) when (e is ScriptRunException or EntryRefusedException) { return false; }
                if (entries.Count == 0) return false;
                try
                {
                    foreach (var entry in entries)
                        if (InMemory(change.Id, entry) is { } memory ? memory.CreateSearcher().Search(query, 1).TotalHits > 0 : WrittenMatches(change.Id, entry))
                            return true;
                    return false;
                }
                catch (ArgumentException) { return false; }   // a value the engine refuses: the index would not hold the entry either
            }
        }

        /// <summary>
        /// The entry as Lucene.Net.Memory's one-document index, with the terms <see cref="LuceneDocuments"/> would index: text through
        /// the analyzer (several values one after another, as the writer puts them), keywords, the <c>@exists</c> and <c>@id</c> terms,
        /// numbers as numeric terms. Null for an entry with several numbers in one field (the memory index takes a field once).
        /// </summary>
        private static MemoryIndex? InMemory(string id, Engine.IndexEntry entry)
        {
            var texts = new Dictionary<string, List<string>>();
            var keywords = new Dictionary<string, List<string>> { [LuceneDocuments.Id] = [id], [LuceneDocuments.Exists] = [] };
            var numbers = new Dictionary<string, NumericTokenStream>();
            foreach (var field in entry.Fields)
            {
                switch (field)
                {
                    case Engine.TextField t: Add(texts, t.Name, t.Value); break;
                    case Engine.KeywordField k: Add(keywords, k.Name, k.Value); break;
                    case Engine.LongField l when !numbers.ContainsKey(l.Name): numbers[l.Name] = new NumericTokenStream(LuceneDocuments.PrecisionStep).SetInt64Value(l.Value); break;
                    case Engine.DoubleField d when !numbers.ContainsKey(d.Name): numbers[d.Name] = new NumericTokenStream(LuceneDocuments.PrecisionStep).SetDoubleValue(d.Value); break;
                    case Engine.LongField or Engine.DoubleField: return null;
                    default: break;   // stored only: no terms, but it exists
                }
                if (!keywords[LuceneDocuments.Exists].Contains(field.Name)) keywords[LuceneDocuments.Exists].Add(field.Name);
            }
            var memory = new MemoryIndex();
            foreach (var (name, values) in texts) memory.AddField(name, string.Join("\n", values), Analyzer);
            foreach (var (name, values) in keywords) memory.AddField(name, memory.KeywordTokenStream(values));
            foreach (var (name, stream) in numbers) memory.AddField(name, stream);
            return memory;

            static void Add(Dictionary<string, List<string>> kind, string name, string value)
            {
                if (!kind.TryGetValue(name, out var values)) kind[name] = values = [];
                values.Add(value);
            }
        }

        /// <summary>The entry written by the index's own document builder into a small directory, then searched (entries the memory index can't take).</summary>
        private bool WrittenMatches(string id, Engine.IndexEntry entry)
        {
            _writer ??= new IndexWriter(_directory, new IndexWriterConfig(LuceneEngine.Version, Analyzer));
            try
            {
                _writer.AddDocument(LuceneDocuments.Build(LuceneDocuments.Fields(), id, entry));
                using var reader = DirectoryReader.Open(_writer, applyAllDeletes: true);
                return new IndexSearcher(reader).Search(query, 1).TotalHits > 0;
            }
            finally { _writer.DeleteAll(); }
        }

        public void Dispose()
        {
            _writer?.Dispose();
            _directory.Dispose();
        }
    }
}
