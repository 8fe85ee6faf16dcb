using Magpie.Http;
using Magpie.Security;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace Magpie.Hosting.Security;

/// <summary>
/// <c>/keys</c> (admin): list, create (the key is in the answer, and nowhere else ever again), delete. The same as
/// <c>magpie keys …</c> on the command line, for a running deployment.
/// </summary>
public static class KeyEndpoints
{
    public sealed record KeyRequest(string? Name, string? Role);

    public static void MapKeyEndpoints(this WebApplication app)
    {
        var keys = app.MapGroup("/keys");
        keys.MapGet("/", (ApiKeyStore store) => Results.Ok(store.All.Select(Describe)));
        // The key a request came with (none: keys are not required here, and every request may do everything).
        keys.MapGet("/me", (HttpContext ctx, ApiKeyStore store) =>
            ctx.Items[ApiKeyAuthentication.KeyNameItem] is string name && store.All.FirstOrDefault(k => k.Name == name) is { } key
                ? Results.Ok(new { key.Name, role = key.Role.Name(), keysRequired = true })
                : Results.Ok(new { name = (string?)null, role = Role.Admin.Name(), keysRequired = false }));
        keys.MapPost("/", (KeyRequest request, ApiKeyStore store) =>
        {
            if (string.IsNullOrWhiteSpace(request.Name) || string.IsNullOrWhiteSpace(request.Role))
                return Problems.BadRequest("a key needs a name and a role: {\"name\": \"grafana\", \"role\": \"read\"} (roles: read, write, admin)");
            try
            {
                var (key, secret) = store.Create(request.Name, Roles.Parse(request.Role));
                return Results.Json(new { key.Name, role = key.Role.Name(), key.Created, key = secret }, statusCode: StatusCodes.Status201Created);
            }
            catch (ArgumentException e) { return Problems.BadRequest(e.Message); }
            catch (InvalidOperationException e) { return Problems.Create(StatusCodes.Status409Conflict, "Key exists", e.Message); }
        });
        keys.MapDelete("/{name}", (string name, ApiKeyStore store) =>
            store.Delete(name) ? Results.NoContent() : Problems.NotFound($"no key named '{name}'"));
    }

    public static object Describe(ApiKey key) => new { key.Name, role = key.Role.Name(), key.Created };
}
