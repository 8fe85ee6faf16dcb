namespace Magpie.Http;

/// <summary>
/// An exception a module throws that is not a server fault, with the HTTP status it answers (a full disk: 507). The host's
/// error handler writes it as a problem with its message, and does not log it as a failure.
/// </summary>
public interface IStatusException
{
    int StatusCode { get; }
}
