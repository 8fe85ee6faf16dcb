using System.Text.RegularExpressions;

namespace Magpie.Query.Postgres;

/// <summary>
/// What a session asks the server rather than the data, and that no SQL engine answers for it: SHOW, and pg_sleep (which
/// clients use to try cancel requests and statement timeouts). The catalogs themselves (pg_catalog, information_schema,
/// version(), current_setting()) are tables and functions of the SQL engine (Catalog/, <see cref="Sql.DuckDbEvaluator"/>).
/// </summary>
public static partial class PgCatalog
{
    public const string Version = "16.0", VersionNum = "160000";

    private static readonly IReadOnlyDictionary<string, string> Settings = new Dictionary<string, string>(StringComparer.OrdinalIgnoreCase)
    {
        ["server_version"] = Version, ["server_version_num"] = VersionNum, ["server_encoding"] = "UTF8", ["client_encoding"] = "UTF8",
        ["search_path"] = "\"$user\", public", ["TimeZone"] = "UTC", ["DateStyle"] = "ISO, MDY", ["integer_datetimes"] = "on",
        ["standard_conforming_strings"] = "on", ["transaction_isolation"] = "read committed", ["max_identifier_length"] = "63",
        ["default_transaction_read_only"] = "on",
    };

    /// <summary>The settings a session sees (SHOW, current_setting, pg_settings).</summary>
    public static IEnumerable<KeyValuePair<string, string>> SettingsOf(PgSessionInfo session) =>
        Settings.Append(new("application_name", session.ApplicationName));

    /// <summary>The answer to SHOW or pg_sleep, or null when <paramref name="sql"/> is neither.</summary>
    public static async Task<PgOutcome?> AnswerAsync(string sql, PgSessionInfo session, CancellationToken ct)
    {
        if (ShowStatement().Match(sql) is { Success: true } show)
        {
            var name = show.Groups[1].Value.Trim('"');
            // The column is the setting's own name (SHOW timezone answers "TimeZone"), as PostgreSQL's.
            var setting = SettingsOf(session).FirstOrDefault(s => string.Equals(s.Key, name, StringComparison.OrdinalIgnoreCase));
            if (setting.Key is null) throw new PgException(PgException.UndefinedObject, $"unrecognized configuration parameter \"{SqlText.Shorten(name)}\"");
            return PgRows.Of([new PgColumn(setting.Key, PgType.Text)], [[setting.Value]]);
        }
        if (SleepFunction().Match(sql) is { Success: true } sleep)
        {
            var seconds = double.Parse(sleep.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture);
            await Task.Delay(TimeSpan.FromSeconds(Math.Min(seconds, 3600)), ct);
            return PgRows.Of([new PgColumn("pg_sleep", PgType.Text)], [[""]]);
        }
        return null;
    }

    [GeneratedRegex(@"^\s*show\s+([A-Za-z_.""]+)\s*$", RegexOptions.IgnoreCase)]
    private static partial Regex ShowStatement();

    [GeneratedRegex(@"^\s*select\s+(?:pg_catalog\.)?pg_sleep\(\s*(\d+(?:\.\d+)?)\s*\)\s*$", RegexOptions.IgnoreCase)]
    private static partial Regex SleepFunction();
}
