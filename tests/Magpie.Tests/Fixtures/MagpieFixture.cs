namespace Magpie.Tests.Fixtures;

/// <summary>One embedded magpie per test class, with a small body limit so the 413 path is cheap to test.</summary>
public sealed class MagpieFixture : IAsyncLifetime
{
    public const int BodyLimit = 1024 * 1024;

    public MagpieProcess Magpie { get; private set; } = null!;

    public async Task InitializeAsync() =>
        Magpie = await MagpieProcess.StartAsync(environment: new() { ["MAGPIE__MAXREQUESTBODYBYTES"] = BodyLimit.ToString() });

    public async Task DisposeAsync() => await Magpie.DisposeAsync();
}
