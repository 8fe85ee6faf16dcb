namespace Magpie.Indexer.Lucene;

/// <summary>Op codes and tags shared with LuceneHost.java (the two files change together).</summary>
internal static class LuceneProtocol
{
    public const byte Open = 1, Write = 2, Commit = 3, Refresh = 4, Search = 5, Stats = 6, Close = 7, DeleteAll = 8, Snapshot = 9, Release = 10, ScanState = 11, Facets = 12, Fields = 13;
    public const byte Ok = 0, Error = 1;
    public const byte FieldText = 1, FieldKeyword = 2, FieldLong = 4, FieldDouble = 5, FieldStored = 6;
    public const byte QueryAll = 0, QueryTerm = 1, QueryLongRange = 2, QueryDoubleRange = 3, QueryPrefix = 4, QueryFullText = 5,
        QueryExists = 6, QueryBool = 7, QueryTerms = 8, QueryTermRange = 9;
    public const byte SortScore = 0, SortString = 1, SortLong = 2, SortDouble = 3;
}
