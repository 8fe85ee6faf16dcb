using System.Globalization;
using System.Text;

namespace Magpie.Query.Rql;

/// <summary>
/// Number literals and parameters as they compare: a double, or — from 2^53 to 2^63, where neighbouring integers share a
/// double — the exact 64-bit integer (compared against what the index keeps exactly, <see cref="Contracts.Indexes.EntryFields.Integer"/>).
/// </summary>
internal static class RqlNumbers
{
    /// <summary>
    /// The value of a number as written: a double below 2^53 (and past 2^63 when the double is the number written), a long for
    /// an integer between; null with <paramref name="why"/> when no kept value can equal it (digits past what a double or a
    /// long holds: …993.5, 9223372036854775809).
    /// </summary>
    public static object? Exact(string literal, double value, out string? why)
    {
        why = null;
        if (Math.Abs(value) < Contracts.Indexes.EntryFields.ExactIntegers.Limit) return value;
        // Past decimal's range (7.9e28) a number is the double it reads as: numbers there are kept as doubles too.
        if (!decimal.TryParse(literal, NumberStyles.Float, CultureInfo.InvariantCulture, out var exact)) return value;
        if (exact == decimal.Truncate(exact))
        {
            if (exact >= long.MinValue && exact <= long.MaxValue) return (long)exact;
            if (new System.Numerics.BigInteger(exact) == new System.Numerics.BigInteger(value)) return value;
        }
        why = $"the number {literal} has more digits than Magpie keeps past 2^53 (integers are exact up to 2^63, other numbers are doubles): it would match its neighbours too";
        return null;
    }
}

internal enum RqlTokenKind { Identifier, String, Number, Parameter, Symbol, Script, End }

internal sealed record RqlToken(RqlTokenKind Kind, string Text, object? Value, int Position)
{
    public bool Is(string keyword) => Kind == RqlTokenKind.Identifier && string.Equals(Text, keyword, StringComparison.OrdinalIgnoreCase);
    public bool IsSymbol(string symbol) => Kind == RqlTokenKind.Symbol && Text == symbol;
}

/// <summary>
/// Splits RQL into tokens: identifiers (dotted paths allowed, <c>Lines[].Product</c> too), 'strings' and "strings" with backslash
/// escapes, numbers, $parameters, symbols, and a JavaScript block <c>{ … }</c> (a projection or a declared function's body) as one
/// token, to its matching brace outside strings, template literals and comments.
/// </summary>
internal static class RqlLexer
{
    /// <summary>A name or a value as an RQL string literal (backslash escapes), as the lexer reads it back.</summary>
    public static string Quote(string s) => "'" + s.Replace("\\", "\\\\").Replace("'", "\\'") + "'";

    public static List<RqlToken> Tokenize(string text)
    {
        var tokens = new List<RqlToken>();
        var i = 0;
        while (i < text.Length)
        {
            var c = text[i];
            if (char.IsWhiteSpace(c)) { i++; continue; }
            // Comments, as RavenDB's RQL has them: to the end of the line, or between /* and */.
            if (c == '/' && i + 1 < text.Length && text[i + 1] == '/')
            {
                while (i < text.Length && text[i] != '\n') i++;
                continue;
            }
            if (c == '/' && i + 1 < text.Length && text[i + 1] == '*')
            {
                var close = text.IndexOf("*/", i + 2, StringComparison.Ordinal);
                if (close < 0) throw Error(text, i, "a comment '/*' that never closes");
                i = close + 2;
                continue;
            }
            var start = i;
            if (c is '\'' or '"')
            {
                var sb = new StringBuilder();
                i++;
                while (true)
                {
                    if (i >= text.Length) throw Error(text, start, "unclosed string");
                    if (text[i] == '\\' && i + 1 < text.Length) { sb.Append(text[i + 1]); i += 2; continue; }
                    if (text[i] == c) { i++; break; }
                    sb.Append(text[i++]);
                }
                tokens.Add(new RqlToken(RqlTokenKind.String, text[start..i], sb.ToString(), start));
            }
            else if (char.IsDigit(c) || (c == '-' && i + 1 < text.Length && char.IsDigit(text[i + 1]) && ValueExpected(tokens)))
            {
                i++;
                while (i < text.Length && (char.IsDigit(text[i]) || text[i] is '.' or 'e' or 'E' || (text[i] is '+' or '-' && text[i - 1] is 'e' or 'E'))) i++;
                var literal = text[start..i];
                if (!double.TryParse(literal, NumberStyles.Float, CultureInfo.InvariantCulture, out var d)) throw Error(text, start, $"'{literal}' is not a number");
                var value = RqlNumbers.Exact(literal, d, out var inexact) ?? throw Error(text, start, inexact!);
                tokens.Add(new RqlToken(RqlTokenKind.Number, literal, value, start));
            }
            else if (c == '$')
            {
                i++;
                while (i < text.Length && (char.IsLetterOrDigit(text[i]) || text[i] == '_')) i++;
                if (i == start + 1) throw Error(text, start, "a parameter needs a name: $name");
                tokens.Add(new RqlToken(RqlTokenKind.Parameter, text[start..i], text[(start + 1)..i], start));
            }
            else if (c == '{')
            {
                i = ScriptEnd(text, i);
                tokens.Add(new RqlToken(RqlTokenKind.Script, text[start..i], null, start));
            }
            else if (char.IsLetter(c) || c is '_' or '@')
            {
                while (i < text.Length)
                {
                    if (char.IsLetterOrDigit(text[i]) || text[i] is '_' or '.' or '@' or '/') i++;
                    else if (text[i] == '[' && i + 1 < text.Length && text[i + 1] == ']') i += 2;   // Lines[].Product: every element
                    else break;
                }
                tokens.Add(new RqlToken(RqlTokenKind.Identifier, text[start..i], null, start));
            }
            else
            {
                var two = i + 1 < text.Length ? text.Substring(i, 2) : "";
                var symbol = two is "!=" or "<=" or ">=" or "<>" or "==" ? two : c is '=' or '<' or '>' or '(' or ')' or ',' ? c.ToString() : null;
                if (symbol is null) throw Error(text, start, $"unexpected character '{c}'");
                // RQL writes equality either way: == is =; <> is !=.
                tokens.Add(new RqlToken(RqlTokenKind.Symbol, symbol switch { "<>" => "!=", "==" => "=", _ => symbol }, null, start));
                i += symbol.Length;
            }
        }
        tokens.Add(new RqlToken(RqlTokenKind.End, "end of query", null, text.Length));
        return tokens;
    }

    /// <summary>Where the JavaScript block opening at <paramref name="open"/> ends (after its closing brace).</summary>
    private static int ScriptEnd(string text, int open)
    {
        var depth = 0;
        for (var i = open; i < text.Length; i++)
        {
            var c = text[i];
            if (c is '\'' or '"' or '`')
            {
                for (i++; i < text.Length && text[i] != c; i++) if (text[i] == '\\') i++;
                if (i >= text.Length) break;
            }
            else if (c == '/' && i + 1 < text.Length && text[i + 1] == '/') { while (i < text.Length && text[i] != '\n') i++; }
            else if (c == '/' && i + 1 < text.Length && text[i + 1] == '*')
            {
                var close = text.IndexOf("*/", i + 2, StringComparison.Ordinal);
                if (close < 0) break;
                i = close + 1;
            }
            else if (c == '{') depth++;
            else if (c == '}' && --depth == 0) return i + 1;
        }
        throw Error(text, open, "a JavaScript block '{' that never closes");
    }

    /// <summary>A minus sign starts a negative number where a value is expected: after an operator, comma, opening parenthesis or keyword.</summary>
    private static bool ValueExpected(List<RqlToken> tokens) =>
        tokens.Count == 0
        || tokens[^1].Kind == RqlTokenKind.Symbol && tokens[^1].Text != ")"
        || tokens[^1].Kind == RqlTokenKind.Identifier && tokens[^1].Text.ToLowerInvariant() is "and" or "between" or "limit" or "offset" or "in";


    public static RqlException Error(string text, int position, string message)
    {
        var line = 1 + text.AsSpan(0, Math.Min(position, text.Length)).Count('\n');
        var column = position - (position == 0 ? 0 : text.LastIndexOf('\n', Math.Min(position, text.Length) - 1) + 1) + 1;
        return new RqlException(message, line, column);
    }
}
