using Magpie.Query.Rql;
using System.Text.Json;
using Magpie.Contracts.Indexes;
using Magpie.Contracts.Search;

namespace Magpie.Query.Projections;

/// <summary>
/// <c>include highlight(…)</c> for the hits of a page: each field's text — what the index stores for it, or (an automatic index,
/// whose fields are the document's paths) the document's value at that path, every string of it — handed to the engine with the
/// query that found the hit. A hit whose text the query does not match gets no fragments for that field.
/// </summary>
public sealed class HitHighlights(IReadOnlyList<HighlightSpec> specs, SearchQuery where, IShardSearcher engine)
{
    /// <summary>Whether some field is read from the document (the index does not store it).</summary>
    public bool NeedsDocument(IndexDefinition definition) => specs.Any(s => !definition.FieldOptions(s.Field).Store);

    /// <summary>The fragments of each highlighted field of the hit (fields without any left out); null when the query highlights nothing.</summary>
    public Dictionary<string, IReadOnlyList<string>>? Of(SearchHit hit, JsonElement? document)
    {
        if (specs.Count == 0) return null;
        var fragments = new Dictionary<string, IReadOnlyList<string>>(StringComparer.Ordinal);
        foreach (var spec in specs)
        {
            var texts = hit.Stored.TryGetValue(spec.Field + EntryFields.Stored, out var stored) && stored.Count > 0
                ? stored.SelectMany(v => DocumentPaths.Texts(ParseStored(v))).ToList()
                : document is { } d ? DocumentPaths.Values(d, spec.Field).SelectMany(DocumentPaths.Texts).ToList() : [];
            if (texts.Count > 0 && engine.Highlight(where, spec, texts) is { Count: > 0 } found) fragments[spec.Field] = found;
        }
        return fragments;
    }

    private static JsonElement ParseStored(object value) => value switch
    {
        string s => JsonDocument.Parse(s).RootElement,
        byte[] b => JsonDocument.Parse(b).RootElement,
        _ => default,
    };
}
