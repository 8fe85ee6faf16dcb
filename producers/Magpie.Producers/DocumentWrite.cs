namespace Magpie.Producers;

public enum WriteKind { Put, Patch, Delete }

/// <summary>One write to publish: a document (put), a JSON Patch (patch) or nothing (delete).</summary>
public sealed record DocumentWrite(WriteKind Kind, string Id, byte[]? Body)
{
    public static DocumentWrite Put(string id, byte[] document) => new(WriteKind.Put, id, document);
    public static DocumentWrite Patch(string id, byte[] jsonPatch) => new(WriteKind.Patch, id, jsonPatch);
    public static DocumentWrite Delete(string id) => new(WriteKind.Delete, id, null);
}
