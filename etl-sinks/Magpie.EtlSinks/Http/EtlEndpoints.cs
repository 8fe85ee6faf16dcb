using Magpie.Http;
using System.Text.Json;
using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.Scripts;
using Magpie.Scripting;
using Magpie.EtlSinks.Tasks;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.EtlSinks.Http;

/// <summary><c>/etl/connections</c> and <c>/etl/tasks</c>: configuration at runtime, and each task's stats.</summary>
public static class EtlEndpoints
{
    public static IEndpointRouteBuilder MapEtlEndpoints(this IEndpointRouteBuilder app, EtlOptions options)
    {
        var connections = app.MapGroup("/etl/connections");
        connections.MapGet("/", (EtlConfigStore store) => Results.Ok(store.Current.Connections.ToDictionary(c => c.Key, c => Masked(c.Value))));
        connections.MapGet("/{name}", (string name, EtlConfigStore store) => store.Current.Connections.TryGetValue(name, out var c)
            ? Results.Ok(Masked(c)) : NotFound($"connection '{name}' does not exist"));
        connections.MapPut("/{name}", async (string name, HttpRequest request, EtlConfigStore store) =>
            await Apply(request, (EtlConnection c) => store.PutConnection(name, c)));
        connections.MapDelete("/{name}", (string name, EtlConfigStore store) => Apply(() => store.DeleteConnection(name)));

        var tasks = app.MapGroup("/etl/tasks");
        tasks.MapGet("/", (EtlConfigStore store, EtlTaskSupervisor supervisor) =>
            Results.Ok(store.Current.Tasks.Select(t => new { name = t.Key, t.Value.Connection, state = supervisor.Stats(t.Key)?.State })));
        tasks.MapGet("/{name}", (string name, EtlConfigStore store) => store.Current.Tasks.TryGetValue(name, out var t)
            ? Results.Json(t, EtlConfigStore.Json) : NotFound($"task '{name}' does not exist"));
        tasks.MapPut("/{name}", async (string name, HttpRequest request, EtlConfigStore store) =>
            await Apply(request, (EtlTaskDefinition t) => store.PutTask(name, t, (task, _) => CompileScripts(task, options.ScriptLimits))));
        tasks.MapDelete("/{name}", (string name, EtlConfigStore store) => Apply(() => store.DeleteTask(name)));
        tasks.MapGet("/{name}/stats", (string name, EtlTaskSupervisor supervisor) => supervisor.Stats(name) is { } s
            ? Results.Json(s, EtlConfigStore.Json) : NotFound($"task '{name}' does not exist"));
        tasks.MapPost("/{name}/reset", async (string name, EtlConfigStore store, EtlTaskSupervisor supervisor) =>
        {
            if (!store.Current.Tasks.ContainsKey(name)) return NotFound($"task '{name}' does not exist");
            await supervisor.ResetAsync(name);
            return Results.NoContent();
        });
        return app;
    }

    private static void CompileScripts(EtlTaskDefinition task, ScriptLimits limits)
    {
        for (var i = 0; i < task.Transforms.Count; i++)
        {
            try { TransformScript.Compile(task.Transforms[i].Script, limits); }
            catch (ScriptSyntaxException e) { throw new ScriptProblem(i, e); }
        }
    }

    internal static async Task<IResult> Apply<T>(HttpRequest request, Action<T> apply)
    {
        T? body;
        try { body = await JsonSerializer.DeserializeAsync<T>(request.Body, EtlConfigStore.Json); }
        catch (JsonException e) { return BadRequest($"body is not valid JSON for this resource: {e.Message}"); }
        return body is null ? BadRequest("body must be a JSON object") : Apply(() => apply(body));
    }

    internal static IResult Apply(Action apply)
    {
        try
        {
            apply();
            return Results.NoContent();
        }
        catch (EtlConfigException e) { return Problems.Of(e.Status, e.Message); }
        catch (ScriptSyntaxException e)
        {
            return Problems.Of(400, e.Message, new Dictionary<string, object?> { ["line"] = e.Line, ["column"] = e.Column });
        }
        catch (ScriptProblem p)
        {
            return Problems.Of(400, $"transforms[{p.Transform}]: {p.Error.Message}",
                new Dictionary<string, object?> { ["transform"] = p.Transform, ["line"] = p.Error.Line, ["column"] = p.Error.Column });
        }
    }

    private static IResult BadRequest(string detail) => Problems.BadRequest(detail);

    private static IResult NotFound(string detail) => Problems.NotFound(detail);

    /// <summary>
    /// A connection as a GET shows it, by one rule: its address comes back, nothing that could be a credential does. Every option
    /// value is <c>***</c> (librdkafka alone has dozens of secret-bearing settings, <c>sasl.oauthbearer.config</c> among them: a list
    /// of names would always miss one), and so are the URL's password and every query value (<c>?password=</c>). The URL is cut by
    /// hand, not by <see cref="Uri"/>, so a password <c>Uri</c> would escape or refuse (a space, a '#') is masked all the same.
    /// </summary>
    internal static EtlConnection Masked(EtlConnection c) => c with
    {
        Url = c.Url is { } url ? MaskedUrl(url) : null,
        Options = c.Options?.ToDictionary(o => o.Key, _ => "***"),
    };

    private static string MaskedUrl(string url)
    {
        var start = url.IndexOf("://", StringComparison.Ordinal) is var s and >= 0 ? s + 3 : 0;
        var query = url.IndexOf('?', start);
        var path = query < 0 ? url : url[..query];
        var slash = path.IndexOf('/', start);
        var authority = slash < 0 ? path[start..] : path[start..slash];
        var at = authority.LastIndexOf('@');
        var colon = at < 0 ? -1 : authority.IndexOf(':');
        if (colon >= 0 && colon < at) path = string.Concat(path.AsSpan(0, start + colon + 1), "***", path.AsSpan(start + at));
        if (query < 0) return path;
        var parameters = url[(query + 1)..].Split('&').Select(p => p.IndexOf('=') is var eq and >= 0 ? p[..(eq + 1)] + "***" : p);
        return path + "?" + string.Join('&', parameters);
    }

    private sealed class ScriptProblem(int transform, ScriptSyntaxException error) : Exception(error.Message)
    {
        public int Transform { get; } = transform;
        public ScriptSyntaxException Error { get; } = error;
    }
}
