namespace Magpie.Scripting;

/// <summary>
/// The size and nesting budget of a script's text, checked before the parser sees it: the parser recurses once per bracket
/// level, so 10,000 nested <c>(</c> would be 10,000 frames of its stack. Brackets are counted outside strings, template text
/// and comments; a regular expression literal is read as code, so a bracket inside one counts too (a script would need over
/// <see cref="MaxNesting"/> of them to be refused). Nesting the count misses (a chain of prefix operators) meets the parser's own
/// stack guard, which <see cref="ScriptSandbox.Prepare"/> reports as the same kind of error.
/// </summary>
public static class ScriptShape
{
    public const int MaxLength = 256 * 1024;
    public const int MaxNesting = 128;

    /// <summary>Throws <see cref="ScriptSyntaxException"/> at the first character over the budget.</summary>
    public static void Check(string source, string label, int lineOffset = 0)
    {
        if (source.Length > MaxLength)
            throw new ScriptSyntaxException($"{label}: the script is {source.Length:N0} characters, over the limit of {MaxLength:N0}", 1, 1);
        // Open brackets, and for each whether it opened a template's ${ } (its close returns to template text).
        var open = new Stack<bool>();
        int line = 1, column = 0;
        var i = 0;
        while (i < source.Length)
        {
            var c = source[i];
            column++;
            if (c == '\n') { line++; column = 0; i++; continue; }
            switch (c)
            {
                case '/' when i + 1 < source.Length && source[i + 1] == '/':
                    while (i < source.Length && source[i] != '\n') i++;
                    continue;
                case '/' when i + 1 < source.Length && source[i + 1] == '*':
                    i = Skip(source, i + 2, "*/", ref line, ref column);
                    continue;
                case '\'' or '"':
                    i = SkipString(source, i + 1, c, ref line, ref column);
                    continue;
                case '`':
                    i = SkipTemplate(source, i + 1, ref line, ref column, open);
                    break;
                case '(' or '[' or '{':
                    open.Push(false);
                    i++;
                    break;
                case ')' or ']' or '}':
                    var toTemplate = open.Count > 0 && open.Pop();
                    i++;
                    if (toTemplate && c == '}') i = SkipTemplate(source, i, ref line, ref column, open);
                    break;
                default:
                    i++;
                    break;
            }
            // A bracket or a template's ${ opened past the budget.
            if (open.Count > MaxNesting) throw TooDeep(label, line, column, lineOffset);
        }
    }

    private static ScriptSyntaxException TooDeep(string label, int line, int column, int lineOffset) =>
        new($"{label}: brackets nest deeper than {MaxNesting} levels", Math.Max(1, line - lineOffset), Math.Max(1, column));

    private static int Skip(string s, int i, string end, ref int line, ref int column)
    {
        while (i < s.Length && string.CompareOrdinal(s, i, end, 0, end.Length) != 0) Advance(s[i++], ref line, ref column);
        return Math.Min(s.Length, i + end.Length);
    }

    private static int SkipString(string s, int i, char quote, ref int line, ref int column)
    {
        while (i < s.Length && s[i] != quote && s[i] != '\n')
        {
            if (s[i] == '\\') { i++; column++; }
            i++;
            column++;
        }
        return i + 1;
    }

    /// <summary>Template text up to its closing backtick, or up to a <c>${</c>, which opens a bracket that returns here when it closes.</summary>
    private static int SkipTemplate(string s, int i, ref int line, ref int column, Stack<bool> open)
    {
        while (i < s.Length)
        {
            var c = s[i];
            if (c == '\\') { i += 2; column += 2; continue; }
            if (c == '`') return i + 1;
            if (c == '$' && i + 1 < s.Length && s[i + 1] == '{')
            {
                open.Push(true);
                return i + 2;
            }
            Advance(c, ref line, ref column);
            i++;
        }
        return i;
    }

    private static void Advance(char c, ref int line, ref int column)
    {
        if (c == '\n') { line++; column = 0; }
        else column++;
    }
}
