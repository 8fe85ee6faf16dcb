namespace Magpie.Contracts;

/// <summary>
/// What is wrong with a request, in the domain's terms. Code that refuses a request says which kind; only an endpoint says it in
/// its protocol: an HTTP status (<c>Problems.StatusOf</c>), a PostgreSQL SQLSTATE (<c>PgException.Of</c>).
/// </summary>
public enum ErrorKind
{
    /// <summary>The request itself is wrong: syntax, an unknown field, a value out of range.</summary>
    Invalid,
    /// <summary>What it names does not exist (an index, a collection, an operation).</summary>
    NotFound,
    /// <summary>It clashes with the current state (a rebuilt index version, a stale index, a rival definition).</summary>
    Conflict,
    /// <summary>What it refers to existed but is gone (a released snapshot).</summary>
    Gone,
    /// <summary>Well-formed, but running it went past a budget (time, memory).</summary>
    OverBudget,
    /// <summary>Too much is running already; later may succeed.</summary>
    Busy,
    /// <summary>A part of Magpie this depends on answered something it should not have.</summary>
    BadUpstream,
    /// <summary>A part of Magpie this depends on is not there (yet).</summary>
    Unavailable,
}
