using Magpie.Contracts;

namespace Magpie.Query.Postgres;

/// <summary>A statement or session error as PostgreSQL reports it: an SQLSTATE code and a message (ErrorResponse).</summary>
public sealed class PgException(string sqlState, string message, bool fatal = false) : Exception(message)
{
    public string SqlState { get; } = sqlState;
    public bool Fatal { get; } = fatal;

    public const string SyntaxError = "42601", UndefinedTable = "42P01", UndefinedColumn = "42703", UndefinedObject = "42704",
        FeatureNotSupported = "0A000", InvalidPassword = "28P01", InvalidAuthorization = "28000", QueryCanceled = "57014",
        TooManyConnections = "53300", ProtocolViolation = "08P01", InvalidParameterValue = "22023", DataException = "22000",
        InvalidTextRepresentation = "22P02", InternalError = "XX000", ConnectionFailure = "08006", ServiceUnavailable = "57P03", StatementTooComplex = "54001",
        InvalidDatetimeFormat = "22007", UndefinedFunction = "42883", ProgramLimitExceeded = "54000", NotInPrerequisiteState = "55000", NumericValueOutOfRange = "22003";

    /// <summary>A query's refusal as PostgreSQL would say it: the SQLSTATE of its kind.</summary>
    public static PgException Of(QueryProblem e) => new(e.Kind switch
    {
        ErrorKind.Invalid => SyntaxError,
        ErrorKind.NotFound => UndefinedTable,
        ErrorKind.Conflict or ErrorKind.Gone => NotInPrerequisiteState,
        ErrorKind.OverBudget => ProgramLimitExceeded,
        ErrorKind.Busy => TooManyConnections,
        ErrorKind.Unavailable => ServiceUnavailable,
        _ => InternalError,
    }, e.Message);
}
