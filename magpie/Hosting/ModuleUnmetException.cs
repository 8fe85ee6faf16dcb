namespace Magpie.Hosting;

/// <summary>A module's needs are not met (settings, data directory): the start stops with this one line.</summary>
public sealed class ModuleUnmetException(string message) : Exception(message);
