namespace Magpie.EtlSinks.Runners;

/// <summary>What a runner (an ETL task, a queue sink) shows as its state.</summary>
public static class RunnerState
{
    public const string Starting = "starting";
    public const string Running = "running";
    public const string Reconnecting = "reconnecting";
    public const string Failed = "failed";
    public const string Disabled = "disabled";
}
