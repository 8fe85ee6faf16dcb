using System.Diagnostics.Metrics;

namespace Magpie.Ingest.Documents;

/// <summary>
/// What the ingest stage reports on <c>/metrics</c> (meter <c>Magpie.Ingest</c>). Counters are bumped where the
/// work happens; the gauges read the store and the relay when scraped.
/// </summary>
public static class IngestMetrics
{
    public const string MeterName = "Magpie.Ingest";
    private static readonly Meter Meter = new(MeterName);

    private static readonly Counter<long> Written = Meter.CreateCounter<long>("magpie.documents.written", "{document}",
        "Writes made durable in the document store, by method (put, patch, delete) and source (http, kafka).");
    private static readonly Counter<long> Rejected = Meter.CreateCounter<long>("magpie.documents.rejected", "{document}",
        "Writes the store refused (conflict, not found, invalid, patch failed), by reason.");
    private static readonly Counter<long> DeadLettered = Meter.CreateCounter<long>("magpie.dlq.messages", "{message}",
        "Input-topic messages sent to magpie.documents.dlq because they could not be applied.");

    public static void Wrote(IReadOnlyList<WriteOutcome> outcomes, bool fromKafka)
    {
        var source = new KeyValuePair<string, object?>("source", fromKafka ? "kafka" : "http");
        foreach (var o in outcomes)
        {
            if (o.Error is { } e) Rejected.Add(1, new KeyValuePair<string, object?>("reason", e.Kind.ToString().ToLowerInvariant()), source);
            // No etag: a delete of an absent document, which writes nothing.
            else if (o.Etag is not null) Written.Add(1, new KeyValuePair<string, object?>("method", o.Method.ToString().ToLowerInvariant()), source);
        }
    }

    public static void DeadLetter(int messages) => DeadLettered.Add(messages);

    /// <summary>A store the gauges read: the one store, or a partition of a partitioned store (tagged with its number).</summary>
    public sealed record ObservedStore(int? Partition, DocumentStore Store, Func<long>? RelayLag);

    /// <summary>
    /// Gauges over the live stores (and their relays in Kafka mode); called once per process. A partitioned store's etags are
    /// per partition, so its last etag is reported per partition.
    /// </summary>
    public static void Observe(Func<IReadOnlyList<ObservedStore>> stores, bool relayed)
    {
        Meter.CreateObservableGauge("magpie.documents.last_etag", () => stores().Select(s => s.Partition is { } p
            ? new Measurement<long>(s.Store.LastEtag, new KeyValuePair<string, object?>("partition", p))
            : new Measurement<long>(s.Store.LastEtag)), "{etag}", "The newest etag the store has made durable (per partition, when partitioned).");
        Meter.CreateObservableGauge("magpie.documents.stored", () => stores().Sum(s => s.Store.Stats().Documents), "{document}",
            "Documents in the store (latest versions, deletes excluded); a partitioned store's: those of the partitions this process holds.");
        if (relayed)
            Meter.CreateObservableGauge("magpie.relay.lag", () => stores().Sum(s => s.RelayLag?.Invoke() ?? 0), "{change}",
                "Changes committed to the store and not yet confirmed by Kafka on magpie.changes.");
    }
}
