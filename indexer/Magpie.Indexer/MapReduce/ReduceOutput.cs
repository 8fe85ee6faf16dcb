using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Magpie.Contracts.Documents;

namespace Magpie.Indexer.MapReduce;

/// <summary>
/// <c>outputReduceToCollection</c>: each reduce result also becomes a document of the output collection, its id
/// derived from the reduce key (<see cref="IdOf"/>), rewritten when the result changes and deleted when the key goes
/// — so sinks and other indexes can use aggregates like any document. Written before the index commits: a replay
/// after a crash writes the same documents again.
/// </summary>
public sealed class ReduceOutput(string collection, IDocumentOutput output)
{
    public Task WriteAsync(ReduceFlush flush, CancellationToken ct) => output.WriteAsync(
        [
            .. flush.Results.Select(r => new OutputDocument(IdOf(collection, r.Key), collection, r.Result)),
            .. flush.Gone.Select(k => new OutputDocument(IdOf(collection, k), collection, null)),
        ], ct);

    /// <summary>
    /// <c>DailySales/2024-01-02</c> for the key "2024-01-02", <c>DailySales/users/1/2024-01-02</c> for a composite key
    /// (its values in order); a key that would make an id over 512 bytes becomes a hash of the key.
    /// </summary>
    public static string IdOf(string collection, string keyJson)
    {
        using var key = JsonDocument.Parse(keyJson);
        var root = key.RootElement;
        var part = root.ValueKind switch
        {
            JsonValueKind.String => root.GetString()!,
            JsonValueKind.Object => string.Join('/', root.EnumerateObject().Select(p => Text(p.Value))),
            _ => Text(root),
        };
        var id = $"{collection}/{part}";
        return Encoding.UTF8.GetByteCount(id) <= 512 && !id.Any(char.IsControl)
            ? id
            : $"{collection}/{Convert.ToHexString(SHA256.HashData(Encoding.UTF8.GetBytes(keyJson)))[..32].ToLowerInvariant()}";
    }

    private static string Text(JsonElement e) => e.ValueKind == JsonValueKind.String ? e.GetString()! : e.GetRawText();
}
