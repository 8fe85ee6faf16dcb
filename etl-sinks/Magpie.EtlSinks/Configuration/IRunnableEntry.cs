namespace Magpie.EtlSinks.Configuration;

/// <summary>An entry of the configuration a runner runs (an ETL task, a queue sink): on a named connection, unless disabled.</summary>
public interface IRunnableEntry
{
    string Connection { get; }
    bool Disabled { get; }
}
