using Lucene.Net.Search;
using Lucene.Net.Util;
using Magpie.Contracts.Search;
using Magpie.Indexer.Engine;

namespace Magpie.Indexer.Lucene;

/// <summary>A hit's sort values as a <see cref="SearchCursor"/>, and a cursor back as Lucene's searchAfter.</summary>
internal static class SortValues
{
    public static SearchCursor ToCursor(FieldDoc hit) => SearchCursor.Of([.. hit.Fields.Select(v => v switch
    {
        null => null,
        BytesRef b => (object)b.Bytes.AsSpan(b.Offset, b.Length).ToArray(),
        J2N.Numerics.Single f => (float)f,
        _ => throw new InvalidOperationException($"sort value of type {v.GetType().Name}"),
    })]);

    public static FieldDoc ToFieldDoc(SearchCursor cursor, global::Lucene.Net.Search.SortField[] fields)
    {
        var values = cursor.SortValues;
        if (values.Count != fields.Length)
            throw new IndexEngineException($"the cursor has {values.Count} sort values, the query sorts by {fields.Length}: it belongs to another query");
        var after = new object?[values.Count];
        for (var i = 0; i < values.Count; i++)
        {
            var score = fields[i].Type == SortFieldType.SCORE;
            after[i] = (values[i], score) switch
            {
                (null, false) => null,
                (byte[] b, false) => new BytesRef(b),
                (float f, true) => J2N.Numerics.Single.GetInstance(f),
                _ => throw new IndexEngineException("the cursor belongs to another query (its sort values don't match the query's sort)"),
            };
        }
        return new FieldDoc(int.MaxValue, float.NaN, after!);
    }
}
