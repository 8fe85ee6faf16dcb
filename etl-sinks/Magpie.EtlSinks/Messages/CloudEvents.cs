using System.Globalization;

namespace Magpie.EtlSinks.Messages;

/// <summary>
/// CloudEvents 1.0 attributes in binary content mode: the body is the data, the attributes travel as
/// headers — <c>cloudEvents:</c>-prefixed AMQP application properties (the AMQP binding's convention),
/// <c>ce_</c>-prefixed Kafka headers (the Kafka protocol binding).
/// </summary>
public static class CloudEvents
{
    public const string AmqpPrefix = "cloudEvents:";
    public const string KafkaPrefix = "ce_";
    public const string JsonContentType = "application/json";

    public static IEnumerable<KeyValuePair<string, string>> Attributes(OutgoingMessage m, string source)
    {
        yield return new("specversion", "1.0");
        yield return new("id", m.CloudEventId);
        yield return new("type", m.CloudEventType);
        yield return new("source", m.Loaded.Source ?? source);
        yield return new("subject", m.Change.Id);
        yield return new("time", m.Change.LastModified.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fffffff'Z'", CultureInfo.InvariantCulture));
        // datacontenttype is not a header: both bindings carry it as the message's content type. Every
        // header costs the broker (the ETL benchmark measures it), so there are no extension attributes:
        // the etag is in the id, the document id is the subject.
    }
}
