package magpie.lucene;

import java.io.*;
import java.nio.charset.StandardCharsets;
import java.nio.file.Paths;
import java.util.*;
import java.util.concurrent.*;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.standard.StandardAnalyzer;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;
import org.apache.lucene.document.*;
import org.apache.lucene.index.*;
import org.apache.lucene.search.*;
import org.apache.lucene.store.NIOFSDirectory;
import org.apache.lucene.util.BytesRef;
import org.apache.lucene.util.NumericUtils;

/**
 * Apache Lucene for Magpie's .NET indexer: one JVM child process per magpie process, one IndexWriter and
 * one SearcherManager (near-real-time) per open index, driven over stdin/stdout with length-prefixed
 * binary frames (see LuceneProtocol.cs for the layout; the two files change together). Requests run on a
 * pool, so searches go on while a batch is written; writes to one index are serialized by its writer.
 * The process exits when stdin closes, so it never outlives the magpie process that started it.
 */
public final class LuceneHost {
    static final byte OPEN = 1, WRITE = 2, COMMIT = 3, REFRESH = 4, SEARCH = 5, STATS = 6, CLOSE = 7, DELETE_ALL = 8, SNAPSHOT = 9, RELEASE = 10, SCAN_STATE = 11, FACETS = 12, FIELDS = 13;
    static final byte OK = 0, ERROR = 1;
    static final byte F_TEXT = 1, F_KEYWORD = 2, F_LONG = 4, F_DOUBLE = 5, F_STORED = 6;
    static final byte Q_ALL = 0, Q_TERM = 1, Q_LONG_RANGE = 2, Q_DOUBLE_RANGE = 3, Q_PREFIX = 4, Q_FULLTEXT = 5, Q_EXISTS = 6, Q_BOOL = 7, Q_TERMS = 8, Q_TERM_RANGE = 9;
    static final byte S_SCORE = 0, S_STRING = 1, S_LONG = 2, S_DOUBLE = 3;
    static final String ID = "@id", EXISTS = "@exists";
    /**
     * Entries that are an index's own state, not results (a map/reduce index keeps each (reduce key, source document)
     * map result beside its results, so both commit together): never matched by searches, not counted, read back by SCAN_STATE.
     */
    static final String STATE = "@state", STATE_KEY = "@state.key", STATE_SOURCE = "@state.source", STATE_VALUES = "@state.values";
    static final Term STATE_TERM = new Term(STATE, "1");

    static final class Index {
        final IndexWriter writer;
        final SearcherManager searchers;
        Index(IndexWriter writer) throws IOException { this.writer = writer; this.searchers = new SearcherManager(writer, true, true, null); }
    }

    final Analyzer analyzer = new StandardAnalyzer();
    /** A searcher held for a stream (point in time): its files stay readable whatever the writer does, until released. */
    record Snapshot(Index index, IndexSearcher searcher) { }

    final Map<Integer, Index> indexes = new ConcurrentHashMap<>();
    final Map<Long, Snapshot> snapshots = new ConcurrentHashMap<>();
    final java.util.concurrent.atomic.AtomicLong nextSnapshot = new java.util.concurrent.atomic.AtomicLong();
    final Map<String, Integer> handles = new HashMap<>();
    int nextHandle = 1;
    final DataOutputStream out;
    /** Facet columns of every open index, within one budget (MB, -Dmagpie.facetCacheMb, default 256). */
    final FacetColumns facetColumns = new FacetColumns(Long.getLong("magpie.facetCacheMb", 256) << 20);
    final ExecutorService pool = Executors.newFixedThreadPool(Math.max(4, Runtime.getRuntime().availableProcessors() * 2));

    LuceneHost(OutputStream out) { this.out = new DataOutputStream(new BufferedOutputStream(out, 1 << 16)); }

    public static void main(String[] args) throws Exception {
        var host = new LuceneHost(System.out);
        System.setOut(System.err); // nothing else may write to the protocol stream
        var in = new DataInputStream(new BufferedInputStream(System.in, 1 << 16));
        try {
            while (true) {
                var frame = new byte[in.readInt()];
                in.readFully(frame);
                host.pool.execute(() -> host.handle(frame));
            }
        } catch (IOException e) { } // EOF (or a broken pipe): the parent is gone or done
        // The parent is gone (or done, having closed its indexes): stop at once, as a crash would. Lucene keeps the last
        // commit; nothing uncommitted may become durable with an old position, and the OS frees each write.lock now for
        // the next magpie process. halt, not exit: nothing may wait on in-flight requests or a concurrent exit.
        Runtime.getRuntime().halt(0);
    }

    void handle(byte[] frame) {
        var in = new DataInputStream(new ByteArrayInputStream(frame));
        int id = -1;
        try {
            id = in.readInt();
            var op = in.readByte();
            var response = new ByteArrayOutputStream(256);
            var w = new DataOutputStream(response);
            switch (op) {
                case OPEN -> open(in, w);
                case WRITE -> write(in);
                case COMMIT -> commit(in, w);
                case REFRESH -> index(in.readInt()).searchers.maybeRefreshBlocking();
                case SEARCH -> search(in, w);
                case STATS -> stats(in.readInt(), w);
                case CLOSE -> close(in.readInt());
                case DELETE_ALL -> { var index = index(in.readInt()); index.writer.deleteAll(); index.searchers.maybeRefreshBlocking(); }
                case SNAPSHOT -> snapshot(index(in.readInt()), w);
                case RELEASE -> release(in.readLong());
                case SCAN_STATE -> scanState(in, w);
                case FACETS -> facets(in, w);
                case FIELDS -> fields(index(in.readInt()), w);
                default -> throw new IllegalArgumentException("unknown op " + op);
            }
            reply(id, OK, response.toByteArray());
        } catch (Throwable t) {
            var message = t.getClass().getSimpleName() + ": " + t.getMessage();
            reply(id, ERROR, message.getBytes(StandardCharsets.UTF_8));
        }
    }

    void reply(int id, byte status, byte[] body) {
        synchronized (out) {
            try {
                out.writeInt(body.length + 5);
                out.writeInt(id);
                out.writeByte(status);
                out.write(body);
                out.flush();
            } catch (IOException e) {
                Runtime.getRuntime().halt(2); // the parent is gone
            }
        }
    }

    Index index(int handle) {
        var index = indexes.get(handle);
        if (index == null) throw new IllegalArgumentException("no open index #" + handle);
        return index;
    }

    // ---- OPEN / COMMIT / STATS / CLOSE ----

    void open(DataInputStream in, DataOutputStream w) throws IOException {
        var dir = readString(in);
        int handle;
        synchronized (handles) {
            var existing = handles.get(dir);
            if (existing != null) handle = existing;
            else {
                var config = new IndexWriterConfig(analyzer).setOpenMode(IndexWriterConfig.OpenMode.CREATE_OR_APPEND).setRAMBufferSizeMB(64);
                var writer = new IndexWriter(new NIOFSDirectory(Paths.get(dir)), config);
                handle = nextHandle++;
                indexes.put(handle, new Index(writer));
                handles.put(dir, handle);
            }
        }
        w.writeInt(handle);
        stats(handle, w);
    }

    void stats(int handle, DataOutputStream w) throws IOException {
        var index = index(handle);
        var data = new TreeMap<String, String>();
        var live = index.writer.getLiveCommitData();
        if (live != null) for (var e : live) data.put(e.getKey(), e.getValue());
        w.writeInt(data.size());
        for (var e : data.entrySet()) { writeString(w, e.getKey()); writeString(w, e.getValue()); }
        var searcher = index.searchers.acquire();
        try {
            var reader = searcher.getIndexReader();
            w.writeLong(reader.numDocs() - (reader.docFreq(STATE_TERM) > 0 ? searcher.count(new TermQuery(STATE_TERM)) : 0));
        } finally { index.searchers.release(searcher); }
        for (var v : facetColumns.stats(handle)) w.writeLong(v);
    }

    /** Searches never see state entries; the clause costs nothing on an index that has none. */
    static Query WithoutState(IndexSearcher searcher, Query query) throws IOException {
        if (searcher.getIndexReader().docFreq(STATE_TERM) == 0) return query;
        return new BooleanQuery.Builder().add(query, BooleanClause.Occur.MUST).add(new TermQuery(STATE_TERM), BooleanClause.Occur.MUST_NOT).build();
    }

    // ---- SCAN_STATE: the state entries of a held snapshot, in doc order, a page at a time ----

    void scanState(DataInputStream in, DataOutputStream w) throws IOException {
        var snapshot = snapshots.get(in.readLong());
        if (snapshot == null) throw new IllegalArgumentException("snapshot was released");
        var from = in.readInt();
        var max = in.readInt();
        var fields = Set.of(STATE_KEY, STATE_SOURCE, STATE_VALUES);
        var found = new ArrayList<Document>();
        var next = -1;
        for (var leaf : snapshot.searcher.getIndexReader().leaves()) {
            if (leaf.docBase + leaf.reader().maxDoc() <= from) continue;
            var postings = leaf.reader().postings(STATE_TERM);
            if (postings == null) continue;
            var live = leaf.reader().getLiveDocs();
            for (var doc = postings.advance(Math.max(0, from - leaf.docBase)); doc != PostingsEnum.NO_MORE_DOCS; doc = postings.nextDoc()) {
                if (live != null && !live.get(doc)) continue;
                if (found.size() == max) { next = leaf.docBase + doc; break; }
                found.add(leaf.reader().document(doc, fields));
            }
            if (next >= 0) break;
        }
        w.writeInt(next);
        w.writeInt(found.size());
        for (var d : found) { writeString(w, d.get(STATE_KEY)); writeString(w, d.get(STATE_SOURCE)); writeString(w, d.get(STATE_VALUES)); }
    }

    void commit(DataInputStream in, DataOutputStream w) throws IOException {
        var index = index(in.readInt());
        var n = in.readInt();
        var data = new HashMap<String, String>();
        for (var i = 0; i < n; i++) data.put(readString(in), readString(in));
        index.writer.setLiveCommitData(data.entrySet());
        index.writer.commit();
    }

    void snapshot(Index index, DataOutputStream w) throws IOException {
        var id = nextSnapshot.incrementAndGet();
        snapshots.put(id, new Snapshot(index, index.searchers.acquire()));
        w.writeLong(id);
    }

    void release(long id) throws IOException {
        var snapshot = snapshots.remove(id);
        if (snapshot != null) snapshot.index.searchers.release(snapshot.searcher);
    }

    void close(int handle) throws IOException {
        var index = indexes.remove(handle);
        if (index == null) return;
        synchronized (handles) { handles.values().remove(handle); }
        index.searchers.close();
        index.writer.close();
        facetColumns.dropIndex(handle);
    }

    // ---- WRITE: deletes, then each document's entries replace its old ones ----

    void write(DataInputStream in) throws IOException {
        var index = index(in.readInt());
        var deletes = in.readInt();
        for (var i = 0; i < deletes; i++) index.writer.deleteDocuments(new Term(ID, readString(in)));
        var docs = in.readInt();
        for (var d = 0; d < docs; d++) {
            var id = readString(in);
            var entries = in.readInt();
            var list = new ArrayList<Document>(entries);
            for (var e = 0; e < entries; e++) list.add(readEntry(in, id));
            index.writer.updateDocuments(new Term(ID, id), list);
        }
    }

    Document readEntry(DataInputStream in, String id) throws IOException {
        var doc = new Document();
        doc.add(new StringField(ID, id, Field.Store.YES));
        // @id keeps its doc values on every entry: a segment holding only state entries must still sort by it (a
        // searched field without them fails). State entries (ids starting with \u0001) skip the rest: no doc values on
        // their own fields, no exists terms.
        doc.add(new SortedDocValuesField(ID, new BytesRef(id)));
        var state = id.startsWith("\u0001");
        var fields = in.readInt();
        var present = new HashSet<String>();
        for (var f = 0; f < fields; f++) {
            var kind = in.readByte();
            var name = readString(in);
            var stored = in.readBoolean();
            if (state && kind == F_KEYWORD) { doc.add(new StringField(name, readString(in), Field.Store.NO)); continue; }
            if (!state && present.add(name)) doc.add(new StringField(EXISTS, name, Field.Store.NO));
            switch (kind) {
                case F_TEXT -> {
                    var value = readString(in);
                    doc.add(new TextField(name, value, stored ? Field.Store.YES : Field.Store.NO));
                    // Full-text fields sort too (order by Title), by their lower-cased start: doc values cap a term at 32 KB.
                    var sortable = value.toLowerCase(java.util.Locale.ROOT);
                    doc.add(new SortedSetDocValuesField(name, new BytesRef(sortable.length() > 256 ? sortable.substring(0, 256) : sortable)));
                }
                case F_KEYWORD -> {
                    var value = readString(in);
                    doc.add(new StringField(name, value, stored ? Field.Store.YES : Field.Store.NO));
                    doc.add(new SortedSetDocValuesField(name, new BytesRef(value)));
                }
                case F_LONG -> {
                    var value = in.readLong();
                    doc.add(new LongPoint(name, value));
                    doc.add(new SortedNumericDocValuesField(name, value));
                    if (stored) doc.add(new StoredField(name, value));
                }
                case F_DOUBLE -> {
                    var value = in.readDouble();
                    doc.add(new DoublePoint(name, value));
                    doc.add(new SortedNumericDocValuesField(name, NumericUtils.doubleToSortableLong(value)));
                    if (stored) doc.add(new StoredField(name, value));
                }
                case F_STORED -> doc.add(new StoredField(name, readString(in)));
                default -> throw new IllegalArgumentException("unknown field kind " + kind);
            }
        }
        return doc;
    }

    // ---- FACETS: counts (and aggregates) per value or range over a query's matching entries, one pass ----

    void facets(DataInputStream in, DataOutputStream w) throws IOException {
        var handle = in.readInt();
        var index = index(handle);
        var snapshotId = in.readLong();
        var snapshot = snapshotId == 0 ? null : snapshots.get(snapshotId);
        if (snapshotId != 0 && snapshot == null) throw new IllegalArgumentException("snapshot " + snapshotId + " was released");
        var searcher = snapshot != null ? snapshot.searcher : index.searchers.acquire();
        try {
            var query = WithoutState(searcher, readQuery(in));
            var specs = new FacetCounter.Spec[in.readInt()];
            for (var i = 0; i < specs.length; i++) specs[i] = FacetCounter.readSpec(in, searcher, this);
            var counter = new FacetCounter(facetColumns, handle, specs);
            searcher.search(query, counter);
            counter.write(w);
        } finally {
            if (snapshot == null) index.searchers.release(searcher);
        }
    }

    /** The names of the index's fields (every segment's), what a schema listing reads (PostgreSQL's information_schema). */
    void fields(Index index, DataOutputStream w) throws IOException {
        var names = new TreeSet<String>();
        var searcher = index.searchers.acquire();
        try {
            for (var leaf : searcher.getIndexReader().leaves())
                for (var info : leaf.reader().getFieldInfos()) names.add(info.name);
        } finally { index.searchers.release(searcher); }
        w.writeInt(names.size());
        for (var n : names) writeString(w, n);
    }

    // ---- SEARCH ----

    void search(DataInputStream in, DataOutputStream w) throws IOException {
        var index = index(in.readInt());
        var snapshotId = in.readLong(); // 0: the current searcher
        var query = readQuery(in);
        var sortCount = in.readInt();
        var fields = new ArrayList<SortField>();
        for (var i = 0; i < sortCount; i++) fields.add(readSort(in));
        fields.add(new SortField(ID, SortField.Type.STRING)); // unique last key: cursors survive refreshes and merges
        var sort = new Sort(fields.toArray(new SortField[0]));
        var skip = in.readInt();
        var pageSize = in.readInt();
        FieldDoc after = null;
        if (in.readBoolean()) after = readCursor(in, fields);
        var storedCount = in.readInt();  // -1: all stored fields
        Set<String> stored = null;
        if (storedCount >= 0) {
            stored = new HashSet<>();
            for (var i = 0; i < storedCount; i++) stored.add(readString(in));
            stored.add(ID);
        }

        var snapshot = snapshotId == 0 ? null : snapshots.get(snapshotId);
        if (snapshotId != 0 && snapshot == null) throw new IllegalArgumentException("snapshot " + snapshotId + " was released");
        var searcher = snapshot != null ? snapshot.searcher : index.searchers.acquire();
        try {
            // Counting every hit (not Lucene's default of "at least 1,000") so totalResults is exact.
            var collector = TopFieldCollector.create(sort, Math.max(1, after != null ? pageSize : skip + pageSize), after, Integer.MAX_VALUE);
            query = WithoutState(searcher, query);
            searcher.search(query, collector);
            var top = collector.topDocs();
            if (top.scoreDocs.length > 0) TopFieldCollector.populateScores(top.scoreDocs, searcher, query);
            var hits = top.scoreDocs;
            var from = after != null ? 0 : Math.min(skip, hits.length);
            w.writeLong(top.totalHits.value);
            w.writeInt(hits.length - from);
            for (var i = from; i < hits.length; i++) {
                var hit = (FieldDoc) hits[i];
                var doc = stored == null ? searcher.doc(hit.doc) : searcher.doc(hit.doc, stored);
                writeString(w, doc.get(ID));
                w.writeFloat(Float.isNaN(hit.score) ? 0f : hit.score);
                var storedFields = doc.getFields().stream().filter(f -> !f.name().equals(ID)).toList();
                w.writeInt(storedFields.size());
                for (var f : storedFields) {
                    writeString(w, f.name());
                    var n = f.numericValue();
                    if (n instanceof Long l) { w.writeByte(F_LONG); w.writeLong(l); }
                    else if (n != null) { w.writeByte(F_DOUBLE); w.writeDouble(n.doubleValue()); }
                    else { w.writeByte(F_KEYWORD); writeString(w, f.stringValue()); }
                }
                writeCursor(w, hit);
            }
        } finally {
            if (snapshot == null) index.searchers.release(searcher);
        }
    }

    Query readQuery(DataInputStream in) throws IOException {
        var type = in.readByte();
        return switch (type) {
            case Q_ALL -> new MatchAllDocsQuery();
            case Q_TERM -> new TermQuery(new Term(readString(in), readString(in)));
            case Q_LONG_RANGE -> LongPoint.newRangeQuery(readString(in), in.readLong(), in.readLong());
            case Q_DOUBLE_RANGE -> DoublePoint.newRangeQuery(readString(in), in.readDouble(), in.readDouble());
            case Q_PREFIX -> new PrefixQuery(new Term(readString(in), readString(in)));
            case Q_FULLTEXT -> fullText(readString(in), readString(in));
            case Q_EXISTS -> new TermQuery(new Term(EXISTS, readString(in)));
            case Q_BOOL -> {
                var b = new BooleanQuery.Builder();
                var must = in.readInt();
                for (var i = 0; i < must; i++) b.add(readQuery(in), BooleanClause.Occur.MUST);
                var should = in.readInt();
                for (var i = 0; i < should; i++) b.add(readQuery(in), BooleanClause.Occur.SHOULD);
                var mustNot = in.readInt();
                for (var i = 0; i < mustNot; i++) b.add(readQuery(in), BooleanClause.Occur.MUST_NOT);
                if (must == 0 && should == 0) b.add(new MatchAllDocsQuery(), BooleanClause.Occur.MUST);
                if (must > 0 && should > 0) b.setMinimumNumberShouldMatch(1);
                yield b.build();
            }
            case Q_TERMS -> {
                var field = readString(in);
                var n = in.readInt();
                var terms = new ArrayList<BytesRef>(n);
                for (var i = 0; i < n; i++) terms.add(new BytesRef(readString(in)));
                yield new TermInSetQuery(field, terms);
            }
            case Q_TERM_RANGE -> TermRangeQuery.newStringRange(readString(in), readString(in), readString(in), in.readBoolean(), in.readBoolean());
            default -> throw new IllegalArgumentException("unknown query node " + type);
        };
    }

    /** The text through the same analyzer as the field; any of its terms matches (RavenDB's search() default). */
    Query fullText(String field, String text) throws IOException {
        var b = new BooleanQuery.Builder();
        var any = false;
        try (TokenStream ts = analyzer.tokenStream(field, text)) {
            var term = ts.addAttribute(CharTermAttribute.class);
            ts.reset();
            while (ts.incrementToken()) {
                var t = term.toString();
                Query q = t.endsWith("*") ? new PrefixQuery(new Term(field, t.substring(0, t.length() - 1))) : new TermQuery(new Term(field, t));
                b.add(q, BooleanClause.Occur.SHOULD);
                any = true;
            }
            ts.end();
        }
        return any ? b.build() : new MatchNoDocsQuery("no terms in '" + text + "'");
    }

    SortField readSort(DataInputStream in) throws IOException {
        var kind = in.readByte();
        var field = readString(in);
        var reverse = in.readBoolean();
        return switch (kind) {
            case S_SCORE -> new SortField(null, SortField.Type.SCORE, !reverse);
            // Multi-valued fields sort by their smallest value ascending and their largest descending (as Elasticsearch does).
            case S_STRING -> new SortedSetSortField(field, reverse, reverse ? SortedSetSelector.Type.MAX : SortedSetSelector.Type.MIN);
            case S_LONG -> new SortedNumericSortField(field, SortField.Type.LONG, reverse, reverse ? SortedNumericSelector.Type.MAX : SortedNumericSelector.Type.MIN);
            case S_DOUBLE -> new SortedNumericSortField(field, SortField.Type.DOUBLE, reverse, reverse ? SortedNumericSelector.Type.MAX : SortedNumericSelector.Type.MIN);
            default -> throw new IllegalArgumentException("unknown sort kind " + kind);
        };
    }

    void writeCursor(DataOutputStream w, FieldDoc hit) throws IOException {
        w.writeInt(hit.fields.length);
        for (var v : hit.fields) {
            if (v == null) w.writeByte(0);
            else if (v instanceof BytesRef b) { w.writeByte(1); w.writeInt(b.length); w.write(b.bytes, b.offset, b.length); }
            else if (v instanceof Long l) { w.writeByte(2); w.writeLong(l); }
            else if (v instanceof Double d) { w.writeByte(3); w.writeDouble(d); }
            else if (v instanceof Float f) { w.writeByte(4); w.writeFloat(f); }
            else throw new IllegalStateException("sort value " + v.getClass());
        }
    }

    FieldDoc readCursor(DataInputStream in, List<SortField> fields) throws IOException {
        var n = in.readInt();
        if (n != fields.size()) throw new IllegalArgumentException("cursor has " + n + " sort values, the query sorts by " + fields.size());
        var values = new Object[n];
        for (var i = 0; i < n; i++) {
            values[i] = switch (in.readByte()) {
                case 0 -> null;
                case 1 -> { var b = new byte[in.readInt()]; in.readFully(b); yield new BytesRef(b); }
                case 2 -> in.readLong();
                case 3 -> in.readDouble();
                case 4 -> in.readFloat();
                default -> throw new IllegalArgumentException("bad cursor");
            };
        }
        return new FieldDoc(Integer.MAX_VALUE, Float.NaN, values);
    }

    static String readString(DataInputStream in) throws IOException {
        var n = in.readInt();
        if (n < 0) return null;
        var b = new byte[n];
        in.readFully(b);
        return new String(b, StandardCharsets.UTF_8);
    }

    static void writeString(DataOutputStream w, String s) throws IOException {
        if (s == null) { w.writeInt(-1); return; }
        var b = s.getBytes(StandardCharsets.UTF_8);
        w.writeInt(b.length);
        w.write(b);
    }
}
