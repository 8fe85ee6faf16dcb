using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Magpie.EtlSinks.Messages;

namespace Magpie.EtlSinks.QueueSinks;

/// <summary>
/// One message as a broker handed it over: the body's bytes and what the broker says about it. RabbitMQ fills
/// <see cref="Exchange"/>/<see cref="RoutingKey"/>/<see cref="Redelivered"/>; Kafka fills <see cref="Partition"/>/<see cref="Offset"/>/<see cref="Key"/>.
/// </summary>
public sealed record IncomingMessage(
    string Source, byte[] Body, string? ContentType, string? MessageId, IReadOnlyDictionary<string, string> Headers,
    string? Exchange = null, string? RoutingKey = null, bool Redelivered = false,
    int? Partition = null, long? Offset = null, string? Key = null, ulong DeliveryTag = 0);

/// <summary>
/// What a sink's script is given for a message, and the id its writes are recorded under. <see cref="Recheck"/> false: this is
/// the first delivery of a message that carried no id (identified by its content), so the ledger is not asked — two equal
/// messages are two messages — but it is still told, so a redelivery of it is recognised.
/// </summary>
public sealed record SinkMessage(JsonElement Body, string Id, bool Recheck, JsonElement Description, JsonDocument Document) : IDisposable
{
    /// <summary>Gives the parsed body's pooled buffers back once the script has run.</summary>
    public void Dispose() => Document.Dispose();
}

/// <summary>Reads a message for a sink: JSON body, MassTransit's envelope unwrapped, the id that makes redeliveries recognisable.</summary>
public static class SinkMessages
{
    /// <summary>
    /// The message for the script, or why it cannot be one (it goes to the dead letters with that reason). <paramref name="describe"/>
    /// false: the script never names <c>message</c>, so its description is not built.
    /// </summary>
    public static SinkMessage? Read(IncomingMessage m, bool describe, out string? error)
    {
        error = null;
        JsonDocument document;
        try { document = JsonDocument.Parse(m.Body, new JsonDocumentOptions { MaxDepth = 128 }); }
        catch (JsonException e)
        {
            error = $"the message body is not JSON: {e.Message}";
            return null;
        }
        var root = document.RootElement;
        var envelope = MassTransitEnvelope.TryRead(root, m.ContentType);
        var body = envelope?.Message ?? root;
        var (id, recheck) = IdOf(m, envelope?.MessageId);
        return new SinkMessage(body, id, recheck, describe ? Describe(m, id, envelope) : default, document);
    }

    /// <summary>
    /// The envelope's message id, else the broker's (AMQP message-id, a Kafka <c>message-id</c> header), else where Kafka keeps it
    /// (<c>topic/partition@offset</c>), else a RabbitMQ message's content. Ids a ledger can't keep as they are (long, control
    /// characters) are kept as their SHA-256.
    /// </summary>
    public static (string Id, bool Recheck) IdOf(IncomingMessage m, string? envelopeId)
    {
        var id = envelopeId ?? m.MessageId ?? Header(m, "message-id") ?? Header(m, "MessageId");
        if (string.IsNullOrEmpty(id) && m.Offset is { } offset) return ($"{m.Source}/{m.Partition}@{offset}", true);
        if (string.IsNullOrEmpty(id))
            return (Hash(Encoding.UTF8.GetBytes($"{m.Source}\n{m.Exchange}\n{m.RoutingKey}\n"), m.Body), m.Redelivered);
        return (id.Length > 200 || id.Any(char.IsControl) ? Hash(Encoding.UTF8.GetBytes(id), []) : id, true);
    }

    private static string Hash(byte[] prefix, byte[] body)
    {
        using var sha = IncrementalHash.CreateHash(HashAlgorithmName.SHA256);
        sha.AppendData(prefix);
        sha.AppendData(body);
        return "sha256:" + Convert.ToHexStringLower(sha.GetHashAndReset());
    }

    private static string? Header(IncomingMessage m, string name) => m.Headers.TryGetValue(name, out var v) ? v : null;

    /// <summary>The script's <c>message</c>.</summary>
    private static JsonElement Describe(IncomingMessage m, string id, MassTransitEnvelope.Received? envelope)
    {
        var buffer = new System.Buffers.ArrayBufferWriter<byte>(512);
        using (var w = new Utf8JsonWriter(buffer))
        {
            w.WriteStartObject();
            w.WriteString("id", id);
            w.WriteString("source", m.Offset is null ? "rabbitmq" : "kafka");
            if (m.Offset is { } offset)
            {
                w.WriteString("topic", m.Source);
                w.WriteNumber("partition", m.Partition ?? 0);
                w.WriteNumber("offset", offset);
                if (m.Key is { } key) w.WriteString("key", key); else w.WriteNull("key");
            }
            else
            {
                w.WriteString("queue", m.Source);
                w.WriteString("exchange", m.Exchange);
                w.WriteString("routingKey", m.RoutingKey);
                w.WriteBoolean("redelivered", m.Redelivered);
            }
            if (m.ContentType is { } contentType) w.WriteString("contentType", contentType); else w.WriteNull("contentType");
            w.WriteStartObject("headers");
            foreach (var (name, value) in m.Headers) w.WriteString(name, value);
            w.WriteEndObject();
            w.WritePropertyName("massTransit");
            if (envelope is null) w.WriteNullValue();
            else envelope.Fields.WriteTo(w);
            w.WriteString("type", envelope?.MessageTypes.FirstOrDefault() ?? Header(m, "type"));
            w.WriteEndObject();
        }
        return JsonDocument.Parse(buffer.WrittenMemory).RootElement;
    }
}
