using Magpie.Contracts;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.WebUtilities;

namespace Magpie.Http;

/// <summary>
/// RFC 7807 problem responses (<c>application/problem+json</c>): the one way every endpoint of every module answers an error,
/// with a title from the status and a detail that says what is wrong.
/// </summary>
public static class Problems
{
    public static IResult BadRequest(string detail) => Of(StatusCodes.Status400BadRequest, detail);

    public static IResult NotFound(string detail) => Of(StatusCodes.Status404NotFound, detail);

    public static IResult TooLarge(string detail) => Create(StatusCodes.Status413PayloadTooLarge, "Request body too large", detail);

    /// <summary>A problem whose title is the status's own (400 "Bad Request", 409 "Conflict", …); <paramref name="extensions"/> add
    /// members (a query's <c>line</c> and <c>column</c>, a bulk command's <c>index</c>).</summary>
    public static IResult Of(int status, string detail, IDictionary<string, object?>? extensions = null) =>
        Create(status, ReasonPhrases.GetReasonPhrase(status) is { Length: > 0 } reason ? reason : "Error", detail, extensions);

    /// <summary>A refusal of <paramref name="kind"/>, with the HTTP status that kind has.</summary>
    public static IResult Of(ErrorKind kind, string detail, IDictionary<string, object?>? extensions = null) => Of(StatusOf(kind), detail, extensions);

    /// <summary>The HTTP status of each kind of refusal: the one place the two meet.</summary>
    public static int StatusOf(ErrorKind kind) => kind switch
    {
        ErrorKind.Invalid => StatusCodes.Status400BadRequest,
        ErrorKind.NotFound => StatusCodes.Status404NotFound,
        ErrorKind.Conflict => StatusCodes.Status409Conflict,
        ErrorKind.Gone => StatusCodes.Status410Gone,
        ErrorKind.OverBudget => StatusCodes.Status422UnprocessableEntity,
        ErrorKind.Busy => StatusCodes.Status429TooManyRequests,
        ErrorKind.BadUpstream => StatusCodes.Status502BadGateway,
        ErrorKind.Unavailable => StatusCodes.Status503ServiceUnavailable,
        _ => StatusCodes.Status500InternalServerError,
    };

    /// <summary>The kind of refusal another Magpie process answered with its status (a remote indexer's problem).</summary>
    public static ErrorKind KindOf(int status) => status switch
    {
        StatusCodes.Status404NotFound => ErrorKind.NotFound,
        StatusCodes.Status409Conflict => ErrorKind.Conflict,
        StatusCodes.Status410Gone => ErrorKind.Gone,
        StatusCodes.Status422UnprocessableEntity => ErrorKind.OverBudget,
        StatusCodes.Status429TooManyRequests => ErrorKind.Busy,
        StatusCodes.Status503ServiceUnavailable => ErrorKind.Unavailable,
        >= 400 and < 500 => ErrorKind.Invalid,
        _ => ErrorKind.BadUpstream,
    };

    public static IResult Create(int status, string title, string detail, IDictionary<string, object?>? extensions = null) =>
        Results.Problem(detail: detail, statusCode: status, title: title, extensions: extensions);

    /// <summary>The position members a parse error carries (1-based).</summary>
    public static Dictionary<string, object?>? At(int? line, int? column) =>
        line is null ? null : new() { ["line"] = line, ["column"] = column };
}
