using System.IO.Hashing;
using System.Text;
using DuckDB.NET.Data;

namespace Magpie.Query.Postgres.Sql;

/// <summary>
/// The catalog rows that are the session's and the indexes' own, written into a statement's connection: each index is a
/// table of schema <c>public</c> (pg_class, pg_tables, information_schema.tables) whose fields are its columns (pg_attribute,
/// information_schema.columns); the database the client named, the settings it sees, its user as the one role. Every row
/// is a copy of the row PostgreSQL itself writes for such a table or column (PgCatalog.sql's templates) with the names changed.
/// </summary>
public static class PgSessionCatalog
{
    /// <summary>An index's table oid: the same for the same name across restarts, as a client that cached it expects.</summary>
    public static long Oid(string index) => 16384 + XxHash32.HashToUInt32(Encoding.UTF8.GetBytes(index)) % 1_000_000_000;

    public static void Write(DuckDBConnection connection, PgSessionInfo session, IReadOnlyList<(string Index, IReadOnlyList<PgColumn> Columns)> tables)
    {
        DuckDbDatabase.Execute(connection, "CREATE TEMP TABLE magpie_columns (relid BIGINT, relname VARCHAR, attname VARCHAR, attnum INTEGER, udt VARCHAR)");
        DuckDbDatabase.Execute(connection, "CREATE TEMP TABLE magpie_tables (relid BIGINT, relname VARCHAR, natts INTEGER)");
        using (var appender = connection.CreateAppender("temp", "main", "magpie_tables"))
            foreach (var (index, columns) in tables)
                appender.CreateRow().AppendValue(Oid(index)).AppendValue(index).AppendValue(columns.Count).EndRow();
        using (var appender = connection.CreateAppender("temp", "main", "magpie_columns"))
            foreach (var (index, columns) in tables)
                for (var i = 0; i < columns.Count; i++)
                    appender.CreateRow().AppendValue(Oid(index)).AppendValue(index).AppendValue(columns[i].Name).AppendValue(i + 1).AppendValue(Udt(columns[i].Type)).EndRow();

        Run(connection, session, """
            INSERT INTO pg_roles SELECT * REPLACE ($user AS rolname, false AS rolsuper, false AS rolcreaterole, false AS rolcreatedb, false AS rolreplication, false AS rolbypassrls) FROM magpie_template.pg_roles;
            INSERT INTO pg_user SELECT * REPLACE ($user AS usename, false AS usesuper, false AS usecreatedb, false AS userepl, false AS usebypassrls) FROM magpie_template.pg_user;
            INSERT INTO pg_database SELECT * REPLACE ($database AS datname) FROM magpie_template.pg_database;
            INSERT INTO pg_settings SELECT * FROM magpie_template.pg_settings;
            INSERT INTO information_schema_schemata SELECT * REPLACE ($database AS catalog_name, $user AS schema_owner) FROM magpie_template.schemata;
            INSERT INTO pg_class SELECT t.* REPLACE (m.relid AS oid, m.relname AS relname, m.relid AS relfilenode, 0 AS reltype, m.natts AS relnatts) FROM magpie_tables m, magpie_template.pg_class t ORDER BY m.relname;
            INSERT INTO pg_tables SELECT t.* REPLACE (m.relname AS tablename, $user AS tableowner) FROM magpie_tables m, magpie_template.pg_tables t ORDER BY m.relname;
            INSERT INTO information_schema_tables SELECT t.* REPLACE ($database AS table_catalog, m.relname AS table_name) FROM magpie_tables m, magpie_template.tables t ORDER BY m.relname;
            INSERT INTO pg_attribute SELECT t.* REPLACE (m.relid AS attrelid, m.attname AS attname, m.attnum AS attnum)
                FROM magpie_columns m JOIN pg_type y ON y.typname = m.udt JOIN magpie_template.pg_attribute t ON t.atttypid = y.oid ORDER BY m.relname, m.attnum;
            INSERT INTO information_schema_columns SELECT t.* REPLACE ($database AS table_catalog, m.relname AS table_name, m.attname AS column_name,
                    m.attnum AS ordinal_position, m.attnum::VARCHAR AS dtd_identifier, $database AS udt_catalog)
                FROM magpie_columns m JOIN magpie_template.columns t ON t.udt_name = m.udt ORDER BY m.relname, m.attnum;
            DROP TABLE magpie_columns;
            DROP TABLE magpie_tables
            """);
        var values = string.Join(", ", PgCatalog.SettingsOf(session).Select(s => $"({PgDialect.Literal(s.Key)}, {PgDialect.Literal(s.Value)})"));
        DuckDbDatabase.Execute(connection, $"UPDATE pg_settings SET setting = v.value, reset_val = v.value FROM (VALUES {values}) v(name, value) WHERE lower(pg_settings.name) = lower(v.name)");
    }

    /// <summary>
    /// The session's functions, as constants (DuckDB evaluates no subquery in a table function's arguments, where Grafana
    /// calls current_setting): the settings, the database, the server's version, the session's user as the owner of everything.
    /// </summary>
    public static void WriteFunctions(DuckDBConnection connection, PgSessionInfo session)
    {
        var settings = string.Join(" ", PgCatalog.SettingsOf(session).Select(s => $"WHEN {PgDialect.Literal(s.Key.ToLowerInvariant())} THEN {PgDialect.Literal(s.Value)}"));
        var unknown = "error('unrecognized configuration parameter \"' || n || '\"')";
        DuckDbDatabase.Execute(connection, $"CREATE TEMP MACRO current_setting(n) AS CASE lower(n) {settings} ELSE {unknown} END, "
            + $"(n, missing_ok) AS CASE lower(n) {settings} ELSE CASE WHEN missing_ok THEN NULL ELSE {unknown} END END");
        DuckDbDatabase.Execute(connection, $"CREATE TEMP MACRO current_database() AS {PgDialect.Literal(session.Database)}");
        foreach (var name in (string[])["current_user", "session_user", "current_role", "user"])
            DuckDbDatabase.Execute(connection, $"CREATE TEMP MACRO \"{name}\"() AS {PgDialect.Literal(session.User)}");
        DuckDbDatabase.Execute(connection, $"CREATE TEMP MACRO \"current_catalog\"() AS {PgDialect.Literal(session.Database)}");
        DuckDbDatabase.Execute(connection, $"CREATE TEMP MACRO version() AS {PgDialect.Literal($"PostgreSQL {PgCatalog.Version} (Magpie: RQL and SQL over its indexes)")}");
        // 10 is the owner of everything (PostgreSQL's bootstrap superuser), here the session's user; 6171 owns schema public.
        DuckDbDatabase.Execute(connection, $"CREATE TEMP MACRO pg_get_userbyid(o) AS CASE o WHEN 10 THEN {PgDialect.Literal(session.User)} WHEN 6171 THEN 'pg_database_owner' ELSE 'unknown (OID=' || o || ')' END");
    }

    private static void Run(DuckDBConnection connection, PgSessionInfo session, string script)
    {
        foreach (var sql in script.Split(";\n"))
        {
            using var command = connection.CreateCommand();
            command.CommandText = sql;
            foreach (var (name, value) in (ReadOnlySpan<(string, string)>)[("user", session.User), ("database", session.Database)])
                if (sql.Contains("$" + name, StringComparison.Ordinal)) command.Parameters.Add(new DuckDBParameter(name, value));
            command.ExecuteNonQuery();
        }
    }

    /// <summary>The PostgreSQL type name (pg_type.typname) of a column Magpie reports.</summary>
    private static string Udt(PgType type) => type switch
    {
        PgType.Float8 => "float8", PgType.TimestampTz => "timestamptz", PgType.Int8 => "int8", PgType.Int4 => "int4",
        PgType.Bool => "bool", PgType.Json => "json", _ => "text",
    };
}
