using System.Buffers;
using System.Text;
using System.Text.Json;

namespace Magpie.Producers.Sources;

/// <summary>
/// Deterministic posts shaped like Stack Overflow's (id <c>posts/{n}</c>, ~1 KB each): the same seed
/// gives the same documents, so benchmark runs are comparable. Users and tags follow skewed
/// distributions, as real ones do.
/// </summary>
public static class SyntheticPosts
{
    private static readonly string[] Words =
    [
        "array", "async", "await", "buffer", "cache", "class", "compile", "database", "debug", "deploy", "error", "exception",
        "function", "generic", "index", "interface", "json", "kafka", "lambda", "linq", "list", "memory", "method", "null",
        "object", "parse", "performance", "pointer", "query", "queue", "reference", "regex", "server", "socket", "stream",
        "string", "task", "thread", "timeout", "type", "value", "variable", "vector", "version", "xml", "yield", "lucene",
    ];

    private static readonly string[] Tags =
    [
        "c#", ".net", "javascript", "python", "java", "sql", "linq", "asp.net-core", "json", "kafka", "lucene", "performance",
        "multithreading", "entity-framework", "docker", "regex", "xml", "async-await", "generics", "testing",
    ];

    public static IEnumerable<DocumentWrite> Generate(long count, int seed, long firstId = 1)
    {
        var random = new Random(seed);
        var epoch = new DateTime(2008, 8, 1, 0, 0, 0, DateTimeKind.Utc);
        var buffer = new ArrayBufferWriter<byte>(1536);
        var text = new StringBuilder(1024);
        for (var n = firstId; n < firstId + count; n++)
        {
            buffer.ResetWrittenCount();
            using (var w = new Utf8JsonWriter(buffer, Magpie.Contracts.WireJson.Writer))
            {
                var created = epoch.AddSeconds(random.NextInt64(0, 16L * 365 * 24 * 3600));
                w.WriteStartObject();
                w.WriteNumber("Id", n);
                w.WriteNumber("PostTypeId", random.Next(3) == 0 ? 1 : 2);
                w.WriteString("CreationDate", created);
                w.WriteNumber("Score", (int)Math.Round(Math.Exp(random.NextDouble() * 6) - 3));
                w.WriteNumber("ViewCount", random.Next(10, 250_000));
                w.WriteNumber("OwnerUserId", Skewed(random, 50_000));
                w.WriteString("Title", Sentence(random, text, 6 + random.Next(8)));
                w.WriteString("Body", "<p>" + Sentence(random, text, 110 + random.Next(30)) + "</p>");
                w.WriteStartArray("Tags");
                var tagCount = 1 + random.Next(4);
                for (var t = 0; t < tagCount; t++) w.WriteStringValue(Tags[Skewed(random, Tags.Length) - 1]);
                w.WriteEndArray();
                w.WriteNumber("AnswerCount", random.Next(0, 12));
                w.WriteNumber("CommentCount", random.Next(0, 20));
                w.WriteEndObject();
            }
            yield return DocumentWrite.Put($"posts/{n}", buffer.WrittenSpan.ToArray());
        }
    }

    /// <summary>1..max with a long tail: low values are much more likely (like posts per user).</summary>
    private static int Skewed(Random random, int max) => 1 + (int)(Math.Pow(random.NextDouble(), 3) * (max - 1));

    private static string Sentence(Random random, StringBuilder text, int words)
    {
        text.Clear();
        for (var i = 0; i < words; i++)
        {
            if (i > 0) text.Append(' ');
            text.Append(Words[random.Next(Words.Length)]);
        }
        return text.ToString();
    }
}
