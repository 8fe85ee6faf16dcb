using System.Security.Cryptography;
using System.Text;
using System.Text.Json;
using Magpie.Contracts.Changes;
using Magpie.Contracts.Etl;

namespace Magpie.EtlSinks.Messages;

/// <summary>
/// MassTransit 8's JSON envelope (<c>application/vnd.masstransit+json</c>) around a <see cref="DocumentChanged"/>,
/// so <c>IConsumer&lt;DocumentChanged&gt;</c> receives it as if a MassTransit bus had published it.
/// MassTransit wants a Guid message id: it is derived from the change id, so a re-delivery keeps it.
/// Queue sinks read the same envelope the other way (<see cref="TryRead"/>).
/// </summary>
public static class MassTransitEnvelope
{
    public const string ContentType = "application/vnd.masstransit+json";

    public static byte[] Serialize(OutgoingMessage m, string hostAddress, string source)
    {
        using var body = JsonDocument.Parse(m.Loaded.BodyJson);
        var envelope = new
        {
            messageId = MessageId(m),
            conversationId = MessageId(m),
            sourceAddress = $"{hostAddress}/{source.TrimStart('/')}",
            destinationAddress = $"{hostAddress}/{m.Destination}",
            messageType = new[] { DocumentChanged.MessageUrn },
            message = new DocumentChanged
            {
                Id = m.Change.Id,
                Collection = m.Change.Collection,
                Etag = m.Change.Etag,
                Operation = ChangeEventJson.OpName(m.Change.Op),
                LastModified = m.Change.LastModified,
                Document = body.RootElement,
                ChangeId = m.ChangeId,
            },
            sentTime = DateTime.UtcNow,
            headers = CloudEvents.Attributes(m, source).ToDictionary(a => CloudEvents.AmqpPrefix + a.Key, a => a.Value),
            host = new { machineName = Environment.MachineName, processName = "magpie", assembly = "Magpie.EtlSinks" },
        };
        return JsonSerializer.SerializeToUtf8Bytes(envelope, JsonOptions);
    }

    /// <summary>A name-based (SHA-1, RFC 4122 version 5 layout) Guid of the change id.</summary>
    public static Guid MessageId(OutgoingMessage m)
    {
        var hash = SHA1.HashData(Encoding.UTF8.GetBytes("magpie:" + m.ChangeId));
        var bytes = hash.AsSpan(0, 16).ToArray();
        bytes[6] = (byte)((bytes[6] & 0x0F) | 0x50);
        bytes[8] = (byte)((bytes[8] & 0x3F) | 0x80);
        return new Guid(bytes, bigEndian: true);
    }

    /// <summary>An envelope a MassTransit bus sent: the message inside, its id and types, and the envelope's other fields (without the message).</summary>
    public sealed record Received(JsonElement Message, string? MessageId, IReadOnlyList<string> MessageTypes, JsonElement Fields);

    /// <summary>
    /// The envelope, when <paramref name="root"/> is one: the content type says so, or (a raw Kafka message, a broker that drops the
    /// content type) the body is an object with <c>messageType</c> and <c>message</c>, as every MassTransit JSON envelope has.
    /// </summary>
    public static Received? TryRead(JsonElement root, string? contentType)
    {
        if (root.ValueKind != JsonValueKind.Object || !root.TryGetProperty("message", out var message)) return null;
        var types = root.TryGetProperty("messageType", out var t) && t.ValueKind == JsonValueKind.Array
            ? t.EnumerateArray().Where(e => e.ValueKind == JsonValueKind.String).Select(e => e.GetString()!).ToList()
            : null;
        var declared = contentType?.StartsWith(ContentType, StringComparison.OrdinalIgnoreCase) == true;
        if (!declared && types is null) return null;
        var fields = new System.Buffers.ArrayBufferWriter<byte>(256);
        using (var w = new Utf8JsonWriter(fields))
        {
            w.WriteStartObject();
            foreach (var p in root.EnumerateObject())
                if (p.Name != "message") p.WriteTo(w);
            w.WriteEndObject();
        }
        var id = root.TryGetProperty("messageId", out var m) && m.ValueKind == JsonValueKind.String ? m.GetString() : null;
        return new Received(message, id, types ?? [], JsonDocument.Parse(fields.WrittenMemory).RootElement);
    }

    private static readonly JsonSerializerOptions JsonOptions = new(JsonSerializerDefaults.Web);
}
