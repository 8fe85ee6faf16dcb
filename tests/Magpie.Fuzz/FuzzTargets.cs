using System.Text;
using Magpie.Ingest.Documents;
using Magpie.Query.Postgres;
using Magpie.Query.Postgres.Sql;
using Magpie.Query.Rql;

namespace Magpie.Fuzz;

/// <summary>
/// One function per parser: takes any bytes and returns normally, or throws only the errors that parser reports to
/// clients (400 / SQLSTATE / a patch failure). Anything else escaping is a crash: under AFL++ the harness lets it out
/// and the input is saved; in the tests the corpora are replayed through the same functions.
/// </summary>
public static class FuzzTargets
{
    public static readonly IReadOnlyDictionary<string, Action<byte[]>> All = new Dictionary<string, Action<byte[]>>
    {
        ["rql"] = Rql,
        ["sql"] = Sql,
        ["pgwire"] = PgWire,
        ["pgextended"] = PgExtended,
        ["bulk"] = Bulk,
        ["patch"] = Patch,
    };

    /// <summary>The RQL parser, then the planner of its where over an automatic index (the full-text, fuzzy, regex and id() nodes).</summary>
    public static void Rql(byte[] input)
    {
        try
        {
            var query = RqlParser.Parse(Encoding.UTF8.GetString(input));
            var definition = new Magpie.Contracts.Indexes.IndexDefinition { Maps = ["map('Posts', p => ({ Title: p.Title }))"] };
            new QueryPlanner(definition, null).Where(query.Where);
        }
        catch (RqlException) { }
    }

    public static void Sql(byte[] input)
    {
        try { SqlParser.Parse(Encoding.UTF8.GetString(input)); }
        catch (PgException) { }
    }

    /// <summary>
    /// A whole client connection: the bytes are what the client sends (startup, then messages). Statements are parsed as
    /// SQL and answered with a command tag; the session must end by itself (end of input) without an exception.
    /// </summary>
    public static void PgWire(byte[] input)
    {
        var options = new PgOptions { StartupTimeout = TimeSpan.FromSeconds(5) };
        using var admission = new PgAdmission(options).Enter("fuzz", () => true);
        var session = new PgSession(new ClientBytes(input), options, null, new ParseOnly(), new PgCancellations(), admission);
        if (!session.RunAsync(CancellationToken.None).Wait(TimeSpan.FromSeconds(10))) throw new TimeoutException("the session did not end at the end of its input");
    }

    /// <summary>
    /// The extended protocol, framed right so the fuzzer spends its time on the session's states, not on lengths: the bytes
    /// choose messages (Parse, Bind, Describe, Execute, Close, Sync, Flush, Query, and bursts of Parses under new names) and
    /// their names, SQL and parameters. What the session keeps must stay inside its caps while it runs and be gone after.
    /// </summary>
    public static void PgExtended(byte[] input)
    {
        var options = new PgOptions { StartupTimeout = TimeSpan.FromSeconds(5) };
        using var admission = new PgAdmission(options).Enter("fuzz", () => true);
        var statements = new KeptChecked();
        var session = new PgSession(new ClientBytes(ExtendedSession.Frame(input)), options, null, statements, new PgCancellations(), admission);
        statements.Session = session;
        if (!session.RunAsync(CancellationToken.None).Wait(TimeSpan.FromSeconds(20))) throw new TimeoutException("the session did not end at the end of its input");
        statements.Check();
        if (session.Kept.Count != 0) throw new InvalidOperationException($"the session ended keeping {session.Kept.Count} statements and portals");
    }

    /// <summary>Answers as <see cref="ParseOnly"/> does, checking the session's caps at every statement it runs.</summary>
    private sealed class KeptChecked : IPgStatements
    {
        public PgSession? Session { get; set; }

        public Task<PgOutcome> RunAsync(string statement, PgSessionInfo session, CancellationToken ct)
        {
            Check();
            return new ParseOnly().RunAsync(statement, session, ct);
        }

        public void Check()
        {
            var (count, chars) = Session!.Kept;
            // Statements and portals are capped apart (each at MaxPrepared, plus the unnamed ones).
            if (count > 2 * PgSession.MaxPrepared + 2 || chars > PgSession.MaxKeptChars)
                throw new InvalidOperationException($"the session keeps {count} statements and portals, {chars:N0} characters");
        }
    }

    public static void Bulk(byte[] input) => BulkCommandParser.Parse(input, DocumentJson.DefaultMaxDepth, out _);

    /// <summary>A patch applied to a small document, then checked as the store checks a result.</summary>
    public static void Patch(byte[] input)
    {
        var patch = DocumentPatcher.Parse(input, out _);
        if (patch is null) return;
        try
        {
            var result = DocumentPatcher.Apply("""{"a":1.50,"b":[1,{"c":"2015-01-27T20:09:32.720"}],"d":{"e":null}}"""u8, patch, DocumentJson.DefaultMaxDepth, maxBytes: 64 * 1024);
            DocumentJson.ValidateObject(result);
        }
        catch (DocumentPatchException) { }
    }

    private sealed class ParseOnly : IPgStatements
    {
        public Task<PgOutcome> RunAsync(string statement, PgSessionInfo session, CancellationToken ct)
        {
            var first = statement.TrimStart().Split([' ', '\n', '\t', '('], 2)[0];
            if (first.Equals("select", StringComparison.OrdinalIgnoreCase)) SqlParser.Parse(statement);
            return Task.FromResult<PgOutcome>(new PgCommand("SELECT 0"));
        }
    }

    /// <summary>The client's side of a connection: reads give the input then end; what the server writes goes nowhere.</summary>
    private sealed class ClientBytes(byte[] input) : Stream
    {
        private readonly MemoryStream _in = new(input, writable: false);
        public override bool CanRead => true;
        public override bool CanSeek => false;
        public override bool CanWrite => true;
        public override long Length => throw new NotSupportedException();
        public override long Position { get => throw new NotSupportedException(); set => throw new NotSupportedException(); }
        public override void Flush() { }
        public override int Read(byte[] buffer, int offset, int count) => _in.Read(buffer, offset, count);
        public override long Seek(long offset, SeekOrigin origin) => throw new NotSupportedException();
        public override void SetLength(long value) => throw new NotSupportedException();
        public override void Write(byte[] buffer, int offset, int count) { }
    }
}
