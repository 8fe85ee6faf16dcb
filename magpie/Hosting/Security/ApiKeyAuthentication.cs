using Magpie.Http;
using Magpie.Security;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;

namespace Magpie.Hosting.Security;

/// <summary>
/// Every request but health and metrics carries an API key (<c>Authorization: Bearer mgp_…</c> or <c>X-Api-Key</c>) once any
/// key exists, or whenever Magpie listens beyond loopback without <c>--unsecured</c> (so deleting the last key fails closed).
/// 401 for a missing or unknown key (answered late: <see cref="FailedLogins"/>), 403 for a key whose role is too low.
/// </summary>
public static class ApiKeyAuthentication
{
    public const string KeyNameItem = "magpie.key";

    public static void UseApiKeys(this WebApplication app, ApiKeyStore keys, FailedLogins failures, bool requiredWithoutKeys)
    {
        app.Use(async (ctx, next) =>
        {
            var required = AccessRules.RequiredRole(ctx.Request.Method, ctx.Request.Path);
            if (required is null || !requiredWithoutKeys && !keys.Any)
            {
                await next(ctx);
                return;
            }
            if (await RefusalAsync(ctx, required.Value, keys, failures) is { } refusal)
            {
                await refusal.ExecuteAsync(ctx);
                return;
            }
            await next(ctx);
        });
    }

    private static async Task<IResult?> RefusalAsync(HttpContext ctx, Role required, ApiKeyStore keys, FailedLogins failures)
    {
        var request = ctx.Request;
        var secret = Credentials(request);
        if (secret is null)
        {
            ctx.Response.Headers.WWWAuthenticate = "Bearer realm=\"magpie\"";
            return Problems.Create(401, "API key required",
                keys.Any ? $"{request.Method} {request.Path} needs a key with the {required.Name()} role: send it as 'Authorization: Bearer <key>' or 'X-Api-Key: <key>'"
                         : "Magpie listens beyond loopback and has no API key yet: create one with `magpie keys create --role admin`");
        }
        var key = keys.Authenticate(secret);
        if (key is null)
        {
            var source = ctx.Connection.RemoteIpAddress?.ToString() ?? "unknown";
            if (!await failures.FailedAsync(source, "HTTP", $"an unknown API key on {request.Method} {request.Path}", ctx.RequestAborted))
            {
                ctx.Response.Headers.RetryAfter = "5";
                return Problems.Create(429, "Too many failed logins", "this address has too many unknown keys waiting for an answer; retry later with a valid key");
            }
            ctx.Response.Headers.WWWAuthenticate = "Bearer realm=\"magpie\", error=\"invalid_token\"";
            return Problems.Create(401, "API key not recognised", "the key sent matches no key of this deployment (it may have been deleted)");
        }
        ctx.Items[KeyNameItem] = key.Name;
        if (key.Role < required)
            return Problems.Create(403, "Role too low",
                $"the key '{key.Name}' has the {key.Role.Name()} role; {request.Method} {request.Path} needs {required.Name()}");
        return null;
    }

    private static string? Credentials(HttpRequest request)
    {
        if (request.Headers.Authorization.ToString() is { Length: > 7 } auth && auth.StartsWith("Bearer ", StringComparison.OrdinalIgnoreCase))
            return auth[7..].Trim();
        return request.Headers["X-Api-Key"].ToString() is { Length: > 0 } key ? key.Trim() : null;
    }
}
