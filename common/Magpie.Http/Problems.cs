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

    public static IResult Create(int status, string title, string detail, IDictionary<string, object?>? extensions = null) =>
        Results.Problem(detail: detail, statusCode: status, title: title, extensions: extensions);

    /// <summary>The position members a parse error carries (1-based).</summary>
    public static Dictionary<string, object?>? At(int? line, int? column) =>
        line is null ? null : new() { ["line"] = line, ["column"] = column };
}
