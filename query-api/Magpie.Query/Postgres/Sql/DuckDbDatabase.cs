using DuckDB.NET.Data;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// The one DuckDB database of the process, in memory: PostgreSQL's settings where DuckDB's differ, the built-in catalog rows
/// and PostgreSQL's catalog functions, loaded once. Each statement gets its own connection to it (<see cref="Open"/>) and
/// writes what is its own — the indexes it reads and the session's catalog rows — as temporary tables, which only that
/// connection sees and which go with it.
/// </summary>
public sealed class DuckDbDatabase : IDisposable
{
    private static readonly string[] CatalogScript = [.. Statements(Resource("PgCatalog.sql"))];

    private static readonly HashSet<string> CatalogTables = new(
        CatalogScript.Select(s => System.Text.RegularExpressions.Regex.Match(s, @"^CREATE (?:TEMP )?TABLE ([a-z_]+) "))
            .Where(m => m.Success).Select(m => m.Groups[1].Value), StringComparer.OrdinalIgnoreCase);

    /// <summary>Whether a table name (unqualified, as a statement reads it once <see cref="PgDialect.Prepare"/> ran) is one of the catalogs.</summary>
    public bool IsCatalogTable(string name) => CatalogTables.Contains(name);

    private readonly Lazy<(DuckDBConnection Root, string[] SessionTables)> _database = new(Create, LazyThreadSafetyMode.ExecutionAndPublication);

    /// <summary>A connection of its own for one statement, with the session's catalog tables created (empty).</summary>
    public DuckDBConnection Open()
    {
        var (root, sessionTables) = _database.Value;
        var connection = root.Duplicate();
        if (connection.State != System.Data.ConnectionState.Open) connection.Open();
        foreach (var table in sessionTables) Execute(connection, table);
        return connection;
    }

    private static (DuckDBConnection, string[]) Create()
    {
        var root = new DuckDBConnection("DataSource=:memory:");
        root.Open();
        // PostgreSQL's semantics where DuckDB's differ; no files, no extensions, and no statement may change any of it.
        foreach (var setting in (string[])["SET GLOBAL default_null_order = 'nulls_last_on_asc_first_on_desc'", "SET GLOBAL integer_division = true",
                     "SET GLOBAL TimeZone = 'UTC'", "SET GLOBAL threads = 2", "SET GLOBAL memory_limit = '1GB'", "SET GLOBAL enable_external_access = false",
                     "SET GLOBAL autoinstall_known_extensions = false", "SET GLOBAL autoload_known_extensions = false"])
            Execute(root, setting);
        Execute(root, "CREATE SCHEMA magpie_template");
        var sessionTables = new List<string>();
        foreach (var statement in CatalogScript)
        {
            // The root connection has the session's tables too (empty), for the functions over them to be created.
            if (statement.StartsWith("CREATE TEMP TABLE", StringComparison.Ordinal)) sessionTables.Add(statement);
            Execute(root, statement);
        }
        foreach (var statement in Statements(Resource("PgFunctions.sql"))) Execute(root, statement);
        Execute(root, "SET GLOBAL lock_configuration = true");
        return (root, [.. sessionTables]);
    }

    /// <summary>A script's statements: each ends with ';' at the end of a line (no literal in these scripts does).</summary>
    private static IEnumerable<string> Statements(string script) =>
        script.Split(";\n").Select(s => string.Join('\n', s.Split('\n').Where(l => !l.StartsWith("--", StringComparison.Ordinal))).Trim())
            .Where(s => s.Length > 0);

    private static string Resource(string name)
    {
        using var stream = typeof(DuckDbDatabase).Assembly.GetManifestResourceStream($"Magpie.Query.Postgres.Catalog.{name}")
            ?? throw new InvalidOperationException($"{name} is not embedded in {typeof(DuckDbDatabase).Assembly.GetName().Name}");
        return new StreamReader(stream).ReadToEnd();
    }

    public static void Execute(DuckDBConnection connection, string sql)
    {
        using var command = connection.CreateCommand();
        command.CommandText = sql;
        command.ExecuteNonQuery();
    }

    public void Dispose()
    {
        if (_database.IsValueCreated) _database.Value.Root.Dispose();
    }
}
