namespace Magpie.Producers.Sinks;

/// <summary>Where producers send batches: Magpie's HTTP bulk API or the input topic.</summary>
public interface IDocumentSink : IAsyncDisposable
{
    /// <summary>Sends one batch and returns once the destination acknowledged all of it.</summary>
    Task SendAsync(IReadOnlyList<DocumentWrite> batch, CancellationToken ct);
}
