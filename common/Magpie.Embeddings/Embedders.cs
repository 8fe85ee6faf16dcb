namespace Magpie.Embeddings;

/// <summary>
/// Who made a vector of a text: the built-in model, or an embedding connection by its name. An index records it beside each
/// vector it embedded and a query names it for the text it embeds, because vectors of two embedders live in different spaces
/// even at the same dimensions: compared, they would rank without meaning and nothing would say so.
/// </summary>
public static class Embedders
{
    public static string Of(string? connection) => connection is null ? $"the built-in model {BuiltInModel.Name}" : $"the embedding connection '{connection}'";
}
