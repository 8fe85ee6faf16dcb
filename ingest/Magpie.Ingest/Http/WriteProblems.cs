using Magpie.Http;
using Magpie.Ingest.Documents;
using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>A rejected write as a problem (<see cref="Problems"/>): 409 for etag conflicts, 404 for a patch of a missing document,
/// 400 for an unusable document, 422 for a patch that can't apply.</summary>
public static class WriteProblems
{
    public static IResult Rejected(WriteError error, IDictionary<string, object?>? extensions = null) => error.Kind switch
    {
        WriteErrorKind.Conflict => Problems.Create(StatusCodes.Status409Conflict, "Concurrency conflict", error.Message, extensions),
        WriteErrorKind.NotFound => Problems.Of(StatusCodes.Status404NotFound, error.Message, extensions),
        WriteErrorKind.Invalid => Problems.Of(StatusCodes.Status400BadRequest, error.Message, extensions),
        _ => Problems.Create(StatusCodes.Status422UnprocessableEntity, "Patch could not be applied", error.Message, extensions),
    };
}
