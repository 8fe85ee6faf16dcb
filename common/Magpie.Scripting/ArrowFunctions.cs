namespace Magpie.Scripting;

/// <summary>A script the rewriter can't handle, with the position in the user's text.</summary>
public sealed class ScriptSyntaxException(string message, int line, int column) : Exception($"{message} (line {line}, column {column})")
{
    public int Line { get; } = line;
    public int Column { get; } = column;
}

/// <summary>
/// Rewrites ES2015 arrow functions into ES5 function expressions, because the only JavaScript engine the
/// NuGet mirror offers (Jint 2.10.4) parses ES5.1 and RavenDB's index syntax is arrow functions:
/// <c>p => ({ A: p.A })</c> becomes <c>(function (p) { return ({ A: p.A }); }).bind(this)</c> (bind keeps
/// the lexical <c>this</c>). Only arrows are rewritten; newlines are kept, so line numbers of errors still
/// point at the user's lines. Template literals and other ES2015+ syntax are refused with their position.
/// </summary>
public static class ArrowFunctions
{
    private enum Kind { Identifier, Number, String, Regex, Punct, Arrow }

    private sealed record Token(Kind Kind, string Text, int Start, int End);

    public static string ToEs5(string script)
    {
        // Rightmost arrow first: its body can't contain another arrow, so each rewrite is local.
        while (true)
        {
            var tokens = Tokenize(script);
            var arrow = tokens.FindLastIndex(t => t.Kind == Kind.Arrow);
            if (arrow < 0) return script;
            script = RewriteOne(script, tokens, arrow);
        }
    }

    private static string RewriteOne(string script, List<Token> tokens, int arrow)
    {
        // Parameters: one identifier, or a parenthesized list.
        int paramsStart;
        string parameters;
        if (arrow > 0 && tokens[arrow - 1].Kind == Kind.Identifier)
        {
            paramsStart = tokens[arrow - 1].Start;
            parameters = tokens[arrow - 1].Text;
        }
        else if (arrow > 0 && tokens[arrow - 1].Text == ")")
        {
            var open = Matching(tokens, arrow - 1, backwards: true);
            paramsStart = tokens[open].Start;
            parameters = script[(tokens[open].End)..tokens[arrow - 1].Start];
        }
        else throw Error(script, tokens[arrow].Start, "'=>' must follow a parameter name or a parenthesized parameter list");

        var bodyStart = arrow + 1;
        if (bodyStart >= tokens.Count) throw Error(script, tokens[arrow].Start, "an arrow function needs a body");
        string replacement;
        int replaceEnd;
        if (tokens[bodyStart].Text == "{")
        {
            var close = Matching(tokens, bodyStart, backwards: false);
            replacement = $"(function ({parameters}) {script[tokens[bodyStart].Start..tokens[close].End]}).bind(this)";
            replaceEnd = tokens[close].End;
        }
        else
        {
            // An expression body runs until a comma, closing bracket or semicolon at its own depth.
            var i = bodyStart;
            var depth = 0;
            for (; i < tokens.Count; i++)
            {
                var t = tokens[i].Text;
                if (tokens[i].Kind != Kind.Punct) continue;
                if (t is "(" or "[" or "{") depth++;
                else if (t is ")" or "]" or "}") { if (depth == 0) break; depth--; }
                else if (depth == 0 && t is "," or ";") break;
            }
            var end = tokens[i - 1].End;
            replacement = $"(function ({parameters}) {{ return {script[tokens[bodyStart].Start..end]}; }}).bind(this)";
            replaceEnd = end;
        }
        return string.Concat(script.AsSpan(0, paramsStart), replacement, script.AsSpan(replaceEnd));
    }

    private static int Matching(List<Token> tokens, int at, bool backwards)
    {
        var (open, close) = backwards ? (tokens[at].Text, tokens[at].Text switch { ")" => "(", "]" => "[", _ => "{" })
                                      : (tokens[at].Text, tokens[at].Text switch { "(" => ")", "[" => "]", _ => "}" });
        var depth = 0;
        for (var i = at; backwards ? i >= 0 : i < tokens.Count; i += backwards ? -1 : 1)
        {
            if (tokens[i].Kind != Kind.Punct) continue;
            if (tokens[i].Text == open) depth++;
            else if (tokens[i].Text == close && --depth == 0) return i;
        }
        throw new ScriptSyntaxException($"unbalanced '{open}'", 1, 1);
    }

    private static List<Token> Tokenize(string s)
    {
        var tokens = new List<Token>();
        var i = 0;
        while (i < s.Length)
        {
            var c = s[i];
            if (char.IsWhiteSpace(c)) { i++; continue; }
            if (c == '/' && i + 1 < s.Length && s[i + 1] == '/') { while (i < s.Length && s[i] != '\n') i++; continue; }
            if (c == '/' && i + 1 < s.Length && s[i + 1] == '*')
            {
                var close = s.IndexOf("*/", i + 2, StringComparison.Ordinal);
                if (close < 0) throw Error(s, i, "unclosed comment");
                i = close + 2;
                continue;
            }
            var start = i;
            if (c is '"' or '\'')
            {
                i++;
                while (i < s.Length && s[i] != c) { if (s[i] == '\\') i++; if (i < s.Length && s[i] == '\n') throw Error(s, start, "unclosed string"); i++; }
                if (i >= s.Length) throw Error(s, start, "unclosed string");
                tokens.Add(new Token(Kind.String, s[start..++i], start, i));
                continue;
            }
            if (c == '`') throw Error(s, i, "template literals are not supported (scripts are ES5.1 plus arrow functions)");
            if (c == '/' && RegexAllowedAfter(tokens))
            {
                i++;
                var inClass = false;
                while (i < s.Length && (s[i] != '/' || inClass))
                {
                    if (s[i] == '\\') i++;
                    else if (s[i] == '[') inClass = true;
                    else if (s[i] == ']') inClass = false;
                    else if (s[i] == '\n') throw Error(s, start, "unclosed regular expression");
                    i++;
                }
                i++;
                while (i < s.Length && char.IsLetter(s[i])) i++;
                tokens.Add(new Token(Kind.Regex, s[start..i], start, i));
                continue;
            }
            if (char.IsLetter(c) || c is '_' or '$')
            {
                while (i < s.Length && (char.IsLetterOrDigit(s[i]) || s[i] is '_' or '$')) i++;
                tokens.Add(new Token(Kind.Identifier, s[start..i], start, i));
                continue;
            }
            if (char.IsDigit(c) || (c == '.' && i + 1 < s.Length && char.IsDigit(s[i + 1])))
            {
                while (i < s.Length && (char.IsLetterOrDigit(s[i]) || s[i] == '.')) i++;
                tokens.Add(new Token(Kind.Number, s[start..i], start, i));
                continue;
            }
            if (c == '=' && i + 1 < s.Length && s[i + 1] == '>') { tokens.Add(new Token(Kind.Arrow, "=>", i, i + 2)); i += 2; continue; }
            tokens.Add(new Token(Kind.Punct, c.ToString(), i, i + 1));
            i++;
        }
        return tokens;
    }

    /// <summary>A slash starts a regular expression where a value is expected, not after one.</summary>
    private static bool RegexAllowedAfter(List<Token> tokens)
    {
        if (tokens.Count == 0) return true;
        var last = tokens[^1];
        return last.Kind switch
        {
            Kind.Identifier => last.Text is "return" or "typeof" or "instanceof" or "in" or "of" or "new" or "delete" or "void" or "throw" or "case" or "do" or "else",
            Kind.Number or Kind.String or Kind.Regex => false,
            _ => last.Text is not (")" or "]" or "}"),
        };
    }

    private static ScriptSyntaxException Error(string s, int at, string message)
    {
        var line = 1 + s.AsSpan(0, at).Count('\n');
        var column = at - (s.LastIndexOf('\n', Math.Max(0, at - 1)) + 1) + 1;
        return new ScriptSyntaxException(message, line, column);
    }
}
