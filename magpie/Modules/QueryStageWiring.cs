using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Query;
using Magpie.Query.Http;
using Magpie.Query.Postgres;
using Microsoft.AspNetCore.Builder;

namespace Magpie.Modules;

/// <summary>postgres: the PostgreSQL wire endpoint over the query module's coordinator (off with <c>Pg:Port</c> -1).</summary>
public sealed class PostgresWiring : IMagpieModule
{
    public string Name => "postgres";

    public void AddServices(WebApplicationBuilder builder, MagpieSettings settings, HostSecurity security)
    {
        if (settings.Pg.Port >= 0)
            builder.Services.AddPostgresEndpoint(sp => OptionsOf(settings.Pg, security, sp.GetRequiredService<Magpie.Security.FailedLogins>()));
    }

    private static PgOptions OptionsOf(PgSettings pg, HostSecurity security, Magpie.Security.FailedLogins failedLogins) => new()
    {
        Port = pg.Port,
        Address = security.PgAddress,
        Keys = security.Keys,
        KeysRequired = security.KeysRequiredWithoutKeys,
        FailedLogins = failedLogins,
        AllowCleartext = pg.AllowCleartext,
        Certificate = security.Certificate,
        MaxConnections = pg.MaxConnections,
        StatementTimeout = TimeSpan.FromSeconds(pg.StatementTimeoutSeconds),
        StartupTimeout = TimeSpan.FromSeconds(pg.StartupTimeoutSeconds),
        MaxPendingConnections = pg.MaxPendingConnections,
    };
}

/// <summary>studio: the browser UI; what it shows is mostly what the query API reads.</summary>
public sealed class StudioWiring : IMagpieModule
{
    public string Name => "studio";

    public void Map(WebApplication app, MagpieSettings settings) => Studio.StudioEndpoints.MapStudio(app);
}
