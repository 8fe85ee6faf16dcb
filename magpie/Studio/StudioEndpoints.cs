using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.StaticFiles;
using Microsoft.Extensions.FileProviders;

namespace Magpie.Studio;

/// <summary>
/// Magpie Studio under <c>/studio</c>: static files (HTML, CSS and one ES module per page — no build step, no CDN, nothing beyond
/// the .NET SDK), copied beside the executable, and the repository's own <c>docs/</c> pages for its help buttons, served offline.
/// The page is a client of the public HTTP API only; it carries no data, so it needs no key (the API it calls does).
/// </summary>
public static class StudioEndpoints
{
    public static void MapStudio(this WebApplication app)
    {
        var root = Path.Combine(AppContext.BaseDirectory, "studio");
        if (!Directory.Exists(root)) throw new InvalidOperationException($"Studio's files are missing from {root} (a build copies them there)");
        var types = new FileExtensionContentTypeProvider();
        types.Mappings[".md"] = "text/markdown; charset=utf-8";
        app.UseStaticFiles(new StaticFileOptions
        {
            FileProvider = new PhysicalFileProvider(root), RequestPath = "/studio", ContentTypeProvider = types,
            OnPrepareResponse = file => Harden(file.Context.Response),
        });
        app.MapGet("/", () => Results.Redirect("/studio/"));
        // One route matches both (routing ignores a trailing slash): the page is served at /studio/, so its relative paths resolve there.
        app.MapGet("/studio", (HttpContext ctx) =>
        {
            if (!ctx.Request.Path.Value!.EndsWith('/')) return Results.Redirect("/studio/");
            Harden(ctx.Response);
            return Results.File(Path.Combine(root, "index.html"), "text/html; charset=utf-8");
        });
    }

    /// <summary>
    /// The browser's second line behind escaping: scripts only from Studio's own files (no inline script, no eval, no other
    /// origin), no plugins, no framing, no remote images; inline style attributes stay allowed (they cannot run code).
    /// </summary>
    public const string ContentSecurityPolicy =
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; connect-src 'self'; " +
        "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

    private static void Harden(HttpResponse response)
    {
        response.Headers.ContentSecurityPolicy = ContentSecurityPolicy;
        response.Headers.XContentTypeOptions = "nosniff";
        response.Headers["Referrer-Policy"] = "no-referrer";
    }
}
