using System.Text;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Contracts.Documents;
using Microsoft.Extensions.Logging;

namespace Magpie.Kafka.Documents;

/// <summary>
/// Writes documents back through the input topic <c>magpie.documents</c> (key = id, <c>magpie-op</c> put or delete,
/// <c>magpie-collection</c>), for stages in processes without the store (a Kafka-mode indexer's output collection).
/// Returns once Kafka acknowledged every message; ingest applies them in order per id. The store is elsewhere: a collection's
/// documents are listed through <paramref name="list"/> (ingest's API) where the process knows an ingest address.
/// </summary>
public sealed class DocumentTopicOutput(string bootstrapServers, ILogger log,
    Func<string, string, string, CancellationToken, Task<IReadOnlyList<ListedDocument>>>? list = null) : IDocumentOutput, IDisposable
{
    public async Task<IReadOnlyList<ListedDocument>?> ListAsync(string collection, string metadata, string version, CancellationToken ct = default) =>
        list is null ? null : await list(collection, metadata, version, ct);

    private readonly Lazy<IProducer<string, byte[]?>> _producer = new(() =>
        KafkaClients.BuildProducer<string, byte[]?>(KafkaClients.Producer(bootstrapServers, "magpie-document-output"), log));

    public async Task<IReadOnlyList<OutputRefusal>> WriteAsync(IReadOnlyList<OutputDocument> documents, CancellationToken ct = default)
    {
        if (documents.Count == 0) return [];
        var sent = documents.Select(d => SendAsync(d, ct)).ToList();
        await Task.WhenAll(sent);
        // What the store refuses on arrival goes to the input topic's DLQ with its reason, as any producer's message does.
        return sent.Select(s => s.Result).OfType<OutputRefusal>().ToList();
    }

    private async Task<OutputRefusal?> SendAsync(OutputDocument d, CancellationToken ct)
    {
        try
        {
            var headers = new Headers
            {
                { Topics.Headers.Op, Encoding.UTF8.GetBytes(d.Json is null ? "delete" : "put") },
                { Topics.Headers.Collection, Encoding.UTF8.GetBytes(d.Collection) },
            };
            // A conditional write that finds the document changed is dead-lettered by ingest with the conflict as its reason.
            if (d.IfMatch is { } etag) headers.Add(Topics.Headers.IfMatch, Encoding.UTF8.GetBytes(Etag.ToHeader(etag)));
            await _producer.Value.ProduceAsync(Topics.Documents, new Message<string, byte[]?>
            {
                Key = d.Id,
                Value = d.Json is null ? null : Encoding.UTF8.GetBytes(d.Json),
                Headers = headers,
            }, ct);
            return null;
        }
        catch (ProduceException<string, byte[]?> e) when (e.Error.Code == ErrorCode.MsgSizeTooLarge)
        {
            return new OutputRefusal(d.Id, $"the document is larger than the broker accepts: {e.Error.Reason}");
        }
    }

    public void Dispose()
    {
        if (!_producer.IsValueCreated) return;
        _producer.Value.Flush(TimeSpan.FromSeconds(10));
        _producer.Value.Dispose();
    }
}
