using System.Text;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// RavenDB's alphanumeric order as bytes: a value is read as runs of digits and runs of other characters; runs compare in turn,
/// a digit run before a text run, digit runs as numbers (leading zeros ignored: shorter number first, then digit by digit),
/// text runs character by character ignoring case (a run that is a prefix of the other first), and a value that is a prefix of
/// the other first. Digits are 0–9. Values that compare equal (<c>a01</c>, <c>a1</c>) are told apart by their text, after the key.
/// </summary>
internal static class AlphanumericKey
{
    private const byte End = 0, DigitRun = 1, TextRun = 2;

    public static byte[] Of(string value)
    {
        var key = new List<byte>(value.Length * 3 + 8);
        var i = 0;
        while (i < value.Length)
        {
            if (char.IsAsciiDigit(value[i]))
            {
                while (i < value.Length && value[i] == '0') i++;
                var from = i;
                while (i < value.Length && char.IsAsciiDigit(value[i])) i++;
                // Longer numbers are larger: the length first (terms are at most 32,766 bytes, so two bytes hold it).
                var length = i - from;
                key.Add(DigitRun);
                key.Add((byte)(length >> 8));
                key.Add((byte)length);
                for (var d = from; d < i; d++) key.Add((byte)value[d]);
                // Zeros alone ("00") end here too: the loop above ate them.
                continue;
            }
            key.Add(TextRun);
            while (i < value.Length && !char.IsAsciiDigit(value[i]))
            {
                // Each character as three bytes, never all zero (the run's end): a code point plus one, so a pair of surrogates
                // (a character past U+FFFF) sorts after every single UTF-16 character, as RavenDB's comparer has it.
                int point;
                if (char.IsHighSurrogate(value[i]) && i + 1 < value.Length && char.IsLowSurrogate(value[i + 1]))
                {
                    point = char.ConvertToUtf32(value[i], value[i + 1]);
                    i += 2;
                }
                else point = char.ToLowerInvariant(value[i++]);
                point++;
                key.Add((byte)(point >> 16));
                key.Add((byte)(point >> 8));
                key.Add((byte)point);
            }
            key.Add(End);
            key.Add(End);
            key.Add(End);
        }
        key.Add(End);
        key.AddRange(Encoding.UTF8.GetBytes(value));
        return [.. key];
    }
}
