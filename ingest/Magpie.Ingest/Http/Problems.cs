using Magpie.Ingest.Documents;
using Microsoft.AspNetCore.Http;

namespace Magpie.Ingest.Http;

/// <summary>RFC 7807 problem responses (application/problem+json) for every error the API returns.</summary>
public static class Problems
{
    public static IResult BadRequest(string detail) => Create(StatusCodes.Status400BadRequest, "Bad request", detail);

    public static IResult NotFound(string detail) => Create(StatusCodes.Status404NotFound, "Not found", detail);

    public static IResult TooLarge(string detail) => Create(StatusCodes.Status413PayloadTooLarge, "Request body too large", detail);

    public static IResult Create(int status, string title, string detail, IDictionary<string, object?>? extensions = null) =>
        Results.Problem(detail: detail, statusCode: status, title: title, extensions: extensions);

    /// <summary>A rejected write: 409 for etag conflicts, 404 for a patch of a missing document, 400 for an unusable collection name, 422 for a patch that can't apply.</summary>
    public static IResult Rejected(WriteError error, IDictionary<string, object?>? extensions = null) => error.Kind switch
    {
        WriteErrorKind.Conflict => Create(StatusCodes.Status409Conflict, "Concurrency conflict", error.Message, extensions),
        WriteErrorKind.NotFound => Create(StatusCodes.Status404NotFound, "Not found", error.Message, extensions),
        WriteErrorKind.Invalid => Create(StatusCodes.Status400BadRequest, "Bad request", error.Message, extensions),
        _ => Create(StatusCodes.Status422UnprocessableEntity, "Patch could not be applied", error.Message, extensions),
    };
}
