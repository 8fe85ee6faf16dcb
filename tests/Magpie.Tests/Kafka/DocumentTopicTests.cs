using System.Net;
using System.Text;
using Confluent.Kafka;
using Magpie.Contracts;
using Magpie.Kafka;
using Magpie.Tests.Fixtures;
using Magpie.Tests.Http;

namespace Magpie.Tests.Kafka;

/// <summary>The input topic <c>magpie.documents</c>: puts, patches, deletes, and poison messages to the DLQ.</summary>
[Collection(KafkaCollection.Name)]
public sealed class DocumentTopicTests(KafkaFixture kafka)
{
    [Fact]
    public async Task Messages_are_applied_and_unusable_ones_go_to_the_dlq_without_blocking_the_partition()
    {
        var servers = kafka.Broker.BootstrapServers;
        await using var magpie = await MagpieProcess.StartAsync(servers);
        var g = $"topic{Guid.NewGuid():N}"[..13];
        var poison = new List<(string? Key, string Reason)>();

        await TopicAdmin.EnsureAsync(servers, TopicAdmin.DefaultTopics(6, 1));
        using (var producer = KafkaClients.BuildProducer<string?, string?>(KafkaClients.Producer(servers, "test")))
        {
            async Task Send(string? key, string? value, string? op = null, string? collection = null, string? ifMatch = null, string? expectReason = null)
            {
                var headers = new Headers();
                if (op is not null) headers.Add(Topics.Headers.Op, Encoding.UTF8.GetBytes(op));
                if (collection is not null) headers.Add(Topics.Headers.Collection, Encoding.UTF8.GetBytes(collection));
                if (ifMatch is not null) headers.Add(Topics.Headers.IfMatch, Encoding.UTF8.GetBytes(ifMatch));
                headers.Add("x-test", Encoding.UTF8.GetBytes(g));
                // One partition for the whole test: its order is the order applied, so "the last message
                // landed" means every earlier one (poison included) was dealt with and none blocked it.
                await producer.ProduceAsync(new TopicPartition(Topics.Documents, new Partition(0)),
                    new Message<string?, string?> { Key = key, Value = value, Headers = headers });
                if (expectReason is not null) poison.Add((key, expectReason));
            }

            await Send($"{g}/1", """{"Name":"one","Tags":[]}""", collection: "Things");
            await Send($"{g}/bad-json", """{"Name":""", expectReason: "malformed JSON");
            await Send(null, """{"orphan":true}""", expectReason: "no key");
            await Send($"{g}/2", """{"a":1}""", op: "frobnicate", expectReason: "unknown magpie-op");
            await Send($"{g}/array", """[1,2]""", expectReason: "must be a JSON object");
            await Send($"{g}/lone", """{"a":"\ud800"}""", expectReason: "lone surrogate");
            await Send($"{g}/1", """[{"op":"add","path":"/b","value":"\udfff"}]""", op: "patch", expectReason: "lone surrogate");
            await Send($"{g}/missing", """[{"op":"add","path":"/a","value":1}]""", op: "patch", expectReason: "NotFound");
            await Send($"{g}/1", """{"Name":"clobbered"}""", ifMatch: "999999999", expectReason: "Conflict");
            await Send($"{g}/1", """[{"op":"add","path":"/Tags/-","value":"patched"}]""", op: "patch");
            await Send($"{g}/3", """{"short":"lived"}""");
            await Send($"{g}/3", null, op: "delete");
            await Send($"{g}/bad-json", """{"Name":"fixed"}""");
            await Send($"{g}/4", """{"last":true}""", op: "PUT");
        }

        await Eventually(async () => (await magpie.Http.GetAsync($"docs/{g}/4")).StatusCode == HttpStatusCode.OK, "the last message was never applied");
        var one = await (await magpie.Http.GetAsync($"docs/{g}/1")).JsonAsync();
        Assert.Equal("one", one.GetProperty("Name").GetString());
        Assert.Equal(["patched"], one.GetProperty("Tags").EnumerateArray().Select(t => t.GetString()));
        Assert.Equal("Things", one.GetProperty("@metadata").GetProperty("@collection").GetString());
        Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.GetAsync($"docs/{g}/3")).StatusCode);
        Assert.Equal("fixed", (await (await magpie.Http.GetAsync($"docs/{g}/bad-json")).JsonAsync()).GetProperty("Name").GetString());
        foreach (var id in new[] { "2", "array", "missing", "lone" })
            Assert.Equal(HttpStatusCode.NotFound, (await magpie.Http.GetAsync($"docs/{g}/{id}")).StatusCode);

        var dead = await ReadDeadLetters(servers, g, poison.Count);
        Assert.True(poison.Count == dead.Count, $"expected {poison.Count} dead letters, got: {string.Join(" | ", dead.Select(d => $"{d.Key} {d.SourceOffset}: {d.Reason}"))}");
        foreach (var (key, reason) in poison)
        {
            var match = dead.Where(d => d.Key == key && d.Reason.Contains(reason, StringComparison.OrdinalIgnoreCase)).ToList();
            Assert.True(match.Count == 1, $"expected one dead letter for key '{key}' with reason containing '{reason}'; got: {string.Join(" | ", dead.Select(d => $"{d.Key}: {d.Reason}"))}");
            Assert.Equal(Topics.Documents, match[0].SourceTopic);
        }

        // Offsets were committed after the writes: a restart applies nothing twice.
        var lastEtag = (await magpie.StatsAsync()).GetProperty("lastEtag").GetInt64();
        await magpie.StopAsync();
        await magpie.StartAsync();
        await Task.Delay(TimeSpan.FromSeconds(4));
        Assert.Equal(lastEtag, (await magpie.StatsAsync()).GetProperty("lastEtag").GetInt64());

        // Even when Kafka redelivers everything (the group's offsets rewound, as after a crash between
        // the store commit and the offset commit), the store's own positions keep it exactly-once.
        await magpie.StopAsync();
        using (var rewind = KafkaClients.BuildConsumer<byte[], byte[]>(KafkaClients.Consumer(servers, magpie.ConsumerGroup)))
            rewind.Commit([new TopicPartitionOffset(Topics.Documents, 0, 0)]);
        await magpie.StartAsync();
        using (var producer = KafkaClients.BuildProducer<string, string>(KafkaClients.Producer(servers, "test")))
            await producer.ProduceAsync(new TopicPartition(Topics.Documents, new Partition(0)), new Message<string, string> { Key = $"{g}/sentinel", Value = "{}" });
        // Same partition: once the sentinel is in, every redelivered message before it has been dealt with.
        await Eventually(async () => (await magpie.Http.GetAsync($"docs/{g}/sentinel")).StatusCode == HttpStatusCode.OK, "the sentinel was never applied");
        Assert.Equal(lastEtag + 1, (await magpie.StatsAsync()).GetProperty("lastEtag").GetInt64());
        var again = await (await magpie.Http.GetAsync($"docs/{g}/1")).JsonAsync();
        Assert.Equal(["patched"], again.GetProperty("Tags").EnumerateArray().Select(t => t.GetString()));
    }

    private sealed record DeadLetter(string? Key, string Reason, string SourceTopic, string SourceOffset);

    /// <summary>This test's dead letters (marked by its x-test header), one per source offset.</summary>
    private static async Task<List<DeadLetter>> ReadDeadLetters(string servers, string marker, int expected)
    {
        using var consumer = KafkaClients.BuildConsumer<string?, string?>(KafkaClients.Consumer(servers, $"dlq-reader-{Guid.NewGuid():N}"));
        consumer.Subscribe(Topics.DocumentsDeadLetter);
        var found = new Dictionary<string, DeadLetter>();
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (found.Count < expected && DateTime.UtcNow < deadline)
        {
            var r = await Task.Run(() => consumer.Consume(TimeSpan.FromMilliseconds(500)));
            if (r is null) continue;
            string? H(string name) => r.Message.Headers.TryGetLastBytes(name, out var b) ? Encoding.UTF8.GetString(b) : null;
            if (H("x-test") != marker) continue;
            var offset = $"{H(Topics.Headers.DeadLetterPartition)}@{H(Topics.Headers.DeadLetterOffset)}";
            found[offset] = new DeadLetter(r.Message.Key, H(Topics.Headers.DeadLetterReason)!, H(Topics.Headers.DeadLetterTopic)!, offset);
        }
        consumer.Close();
        return found.Values.ToList();
    }

    private static async Task Eventually(Func<Task<bool>> condition, string failure)
    {
        var deadline = DateTime.UtcNow.AddSeconds(60);
        while (DateTime.UtcNow < deadline)
        {
            if (await condition()) return;
            await Task.Delay(200);
        }
        Assert.Fail(failure);
    }
}
