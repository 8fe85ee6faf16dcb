using Magpie.Security;
using Microsoft.AspNetCore.Http;

namespace Magpie.Hosting.Security;

/// <summary>
/// The role each route needs, in one table a reader can check. Health probes and metrics need none (probes and Prometheus
/// carry no key, and they reveal no data). Anything not listed needs read to look at and admin to change, so a route added
/// later is closed until someone decides otherwise.
/// </summary>
public static class AccessRules
{
    private static readonly string[] Anonymous = ["/health", "/healthz", "/readyz", "/metrics"];

    // Reads that are POSTs: a query carries its RQL in the body; subscription clients fetch and ack; query processes ask indexers.
    private static readonly string[] ReadGroups = ["/queries", "/streams", "/subscriptions", "/shards"];

    // Connection settings hold passwords (ETL, embedding providers) and scripts run in the sinks (ETL tasks, queue sinks): even looking needs admin.
    private static readonly string[] AdminGroups = ["/etl", "/sinks", "/keys", "/embeddings"];

    /// <summary>The role a request needs, or null when it needs none.</summary>
    public static Role? RequiredRole(string method, PathString path)
    {
        var looks = HttpMethods.IsGet(method) || HttpMethods.IsHead(method) || HttpMethods.IsOptions(method);
        if (looks && Anonymous.Any(a => path.Equals(a, StringComparison.OrdinalIgnoreCase))) return null;
        // Studio's files and docs hold no data: the page asks for a key and sends it with every API call.
        if (looks && (path == "/" || path.StartsWithSegments("/studio", StringComparison.OrdinalIgnoreCase))) return null;
        // Which key this is (Studio shows what its role may do): any key may ask.
        if (looks && path.Equals("/keys/me", StringComparison.OrdinalIgnoreCase)) return Role.Read;
        if (AdminGroups.Any(g => path.StartsWithSegments(g, StringComparison.OrdinalIgnoreCase))) return Role.Admin;
        // A subscription holds back the change log's compaction until it is read: making or dropping one is a write; a client
        // with a read key fetches and acknowledges batches of one that exists.
        if (HttpMethods.IsDelete(method) && path.StartsWithSegments("/subscriptions", StringComparison.OrdinalIgnoreCase)
            || HttpMethods.IsPost(method) && path.Value!.TrimEnd('/').Equals("/subscriptions", StringComparison.OrdinalIgnoreCase))
            return Role.Write;
        if (ReadGroups.Any(g => path.StartsWithSegments(g, StringComparison.OrdinalIgnoreCase))) return Role.Read;
        // Update and delete by query (/operations) are writes to documents, and their progress is theirs to read; so are a sinks
        // process's writes through ingest (/message_writes).
        if (path.StartsWithSegments("/docs", StringComparison.OrdinalIgnoreCase) || path.StartsWithSegments("/bulk_docs", StringComparison.OrdinalIgnoreCase)
            || path.StartsWithSegments("/operations", StringComparison.OrdinalIgnoreCase) || path.StartsWithSegments("/message_writes", StringComparison.OrdinalIgnoreCase))
            return looks ? Role.Read : Role.Write;
        return looks ? Role.Read : Role.Admin;
    }
}
