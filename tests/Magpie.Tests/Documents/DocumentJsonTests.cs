using System.Text;
using Magpie.Ingest.Documents;

namespace Magpie.Tests.Documents;

/// <summary>
/// The store's check of a document a parser already read whole (a bulk command's, an input-topic message's) must refuse exactly
/// what the full check refuses, with the same reason: a lone surrogate escape or bytes that are not UTF-8 let through would be a
/// document a GET can't serve back.
/// </summary>
[Trait("Category", "Fast")]
public class DocumentJsonTests
{
    /// <summary>Pieces of string text: plain, escaped, pairs, halves of pairs, escaped backslashes before a 'u', and bad UTF-8.</summary>
    private static readonly byte[][] Pieces =
    [
        "a"u8.ToArray(), "é"u8.ToArray(), "😀"u8.ToArray(), @"\u0041"u8.ToArray(), @"\u003Cp\u003E"u8.ToArray(),
        @"\ud83d\ude00"u8.ToArray(), @"\uD83D\uDE00"u8.ToArray(), @"\ud800"u8.ToArray(), @"\uDFFF"u8.ToArray(), @"\udbff\udfff"u8.ToArray(),
        @"\\u"u8.ToArray(), @"\\ud800"u8.ToArray(), @"\\\ud800"u8.ToArray(), @"\"""u8.ToArray(), @"\n\t\/"u8.ToArray(), @"\ud83d\u0041"u8.ToArray(),
        [0xFF], [0xED, 0xA0, 0x80], [0xC3],
    ];

    [Fact]
    public void A_parsed_document_is_refused_exactly_when_the_full_check_refuses_it()
    {
        var random = new Random(20261127);
        int refused = 0, accepted = 0;
        for (var i = 0; i < 20_000; i++)
        {
            var json = Document(random);
            var full = DocumentJson.ValidateObject(json);
            Assert.True(full is null || !full.StartsWith("malformed", StringComparison.Ordinal), Encoding.UTF8.GetString(json));
            Assert.Equal(full, DocumentJson.ValidateParsedObject(json));
            if (full is null) accepted++; else refused++;
        }
        // Both kinds occur often enough for the comparison to mean something.
        Assert.True(accepted > 1000 && refused > 1000, $"{accepted} accepted, {refused} refused");
    }

    [Theory]
    [InlineData("""{"a":"\ud83d\ude00"}""", false)]
    [InlineData("""{"a":"\ud83d"}""", true)]
    [InlineData("""{"a":"\ude00\ud83d"}""", true)]
    [InlineData("""{"a":"\ud83d","b":"\ude00"}""", true)]   // halves in two strings are not a pair
    [InlineData("""{"a":"\\ud800"}""", false)]              // an escaped backslash, then the letters u d 8 0 0
    [InlineData("""{"\udc00":1}""", true)]
    [InlineData("""{"a":["x","\uDBFF\uDFFF"]}""", false)]
    public void Lone_surrogate_escapes_are_found(string json, bool lone) =>
        Assert.Equal(lone, DocumentJson.HasLoneSurrogateEscape(Encoding.UTF8.GetBytes(json)));

    [Fact]
    public void A_document_cut_short_is_not_read_past_its_end()
    {
        // The short check trusts an earlier parse; called on bytes no parser read, it must still answer rather than throw.
        var json = Encoding.UTF8.GetBytes("""{"a":"x\n\ud83d\ude00\u0041\\"}""");
        for (var length = 0; length < json.Length; length++)
        {
            var ex = Record.Exception(() => DocumentJson.HasLoneSurrogateEscape(json.AsSpan(0, length)));
            Assert.Null(ex);
        }
    }

    private static byte[] Document(Random random)
    {
        var json = new List<byte>();
        json.AddRange("{"u8);
        var fields = random.Next(1, 4);
        for (var f = 0; f < fields; f++)
        {
            if (f > 0) json.Add((byte)',');
            json.Add((byte)'"');
            json.AddRange(Encoding.ASCII.GetBytes($"k{f}"));
            if (random.Next(8) == 0) json.AddRange(Pieces[random.Next(Pieces.Length)]);
            json.AddRange("\":"u8);
            var inArray = random.Next(3) == 0;
            if (inArray) json.AddRange("[1,"u8);
            json.Add((byte)'"');
            // Mostly clean pieces, so that whole documents pass often.
            for (var p = random.Next(0, 4); p > 0; p--) json.AddRange(Pieces[random.Next(4) == 0 ? random.Next(Pieces.Length) : random.Next(7)]);
            json.Add((byte)'"');
            if (inArray) json.Add((byte)']');
        }
        json.Add((byte)'}');
        return [.. json];
    }
}
