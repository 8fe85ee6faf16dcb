using Magpie.EtlSinks.Configuration;
using Magpie.EtlSinks.QueueSinks;
using Magpie.Http;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Routing;

namespace Magpie.EtlSinks.Http;

/// <summary><c>/sinks</c>: queue sinks at runtime (admin only: they hold scripts and name connections), and each sink's stats.</summary>
public static class SinkEndpoints
{
    public static IEndpointRouteBuilder MapSinkEndpoints(this IEndpointRouteBuilder app, EtlOptions options)
    {
        var sinks = app.MapGroup("/sinks");
        sinks.MapGet("/", (EtlConfigStore store, QueueSinkSupervisor supervisor) =>
            Results.Ok(store.Current.Sinks.Select(s => new { name = s.Key, s.Value.Connection, sources = s.Value.Sources, state = supervisor.Stats(s.Key)?.State })));
        sinks.MapGet("/{name}", (string name, EtlConfigStore store) => store.Current.Sinks.TryGetValue(name, out var s)
            ? Results.Json(s, EtlConfigStore.Json) : Problems.NotFound($"sink '{name}' does not exist"));
        sinks.MapPut("/{name}", async (string name, HttpRequest request, EtlConfigStore store) =>
            await EtlEndpoints.Apply(request, (QueueSinkDefinition s) => store.PutSink(name, s, sink => SinkScript.Compile(sink.Script, options.ScriptLimits))));
        sinks.MapDelete("/{name}", (string name, EtlConfigStore store) => EtlEndpoints.Apply(() => store.DeleteSink(name)));
        sinks.MapGet("/{name}/stats", (string name, QueueSinkSupervisor supervisor) => supervisor.Stats(name) is { } s
            ? Results.Json(s, EtlConfigStore.Json) : Problems.NotFound($"sink '{name}' does not exist"));
        return app;
    }
}
