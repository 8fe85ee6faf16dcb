using System.Threading.Channels;
using Magpie.Contracts;
using Magpie.EtlSinks.Brokers;
using Magpie.EtlSinks.Configuration;
using Microsoft.Extensions.Logging;

namespace Magpie.EtlSinks.Runners;

/// <summary>
/// What an ETL task and a queue sink both are: a loop around one broker client. <see cref="Prepare"/> once (scripts, position;
/// a failure there waits for a new definition); then, under a supervised loop, a new client is opened and worked until it
/// fails, the status says why and when the next attempt comes (<c>failed</c> when a person must act, <c>reconnecting</c>
/// otherwise), the client is let go and the back-off (the entry's <c>reconnect</c>, doubling, capped) runs.
/// </summary>
public abstract class BrokerRunner<TClient>(string kind, string name, string connectionName, EtlReconnect reconnect, ILogger log)
    : IAsyncDisposable where TClient : class, IAsyncDisposable
{
    /// <summary>How long a client may take to close before the runner goes on without waiting for it.</summary>
    internal static readonly TimeSpan ClientCloseTimeout = TimeSpan.FromSeconds(10);

    private readonly CancellationTokenSource _stop = new();
    private Task _loop = Task.CompletedTask;

    public string Name => name;

    protected ILogger Log { get; } = log;

    protected abstract RunnerStatus Status { get; }

    /// <summary>Readies what the runner needs before any client; returns why it cannot run, or null.</summary>
    protected abstract string? Prepare();

    /// <summary>A new, unopened client.</summary>
    protected abstract TClient CreateClient();

    protected abstract Task OpenAsync(TClient client, CancellationToken ct);

    /// <summary>Works the opened client until it fails or the runner stops.</summary>
    protected abstract Task WorkAsync(TClient client, CancellationToken ct);

    public virtual void Start() => _loop = Task.Run(() => RunAsync(_stop.Token));

    private async Task RunAsync(CancellationToken ct)
    {
        if (Prepare() is { } cannot)
        {
            Status.Failed(cannot);
            return;
        }
        var backoff = new Backoff(TimeSpan.FromMilliseconds(reconnect.InitialDelayMs), TimeSpan.FromMilliseconds(reconnect.MaxDelayMs));
        TClient? client = null;
        try
        {
            await SupervisedLoop.RunAsync(async ct =>
            {
                var opened = CreateClient();
                await CloseAsync(Interlocked.Exchange(ref client, opened));
                await OpenAsync(opened, ct);
                Status.Running();
                backoff.Reset();
                await WorkAsync(opened, ct);
            }, backoff, async (e, delay) =>
            {
                // Said before the client is let go: closing a client whose broker has just vanished can take a while itself
                // (and counts towards the delay, so the next attempt comes when the status says it will).
                var state = e is BrokerException { NeedsUser: true } ? RunnerState.Failed : RunnerState.Reconnecting;
                Status.Interrupted(state, e.Message, DateTimeOffset.UtcNow + delay);
                Log.LogWarning("{Kind} {Name}: {Error}; retrying in {Delay} s", kind, name, e.Message, delay.TotalSeconds);
                await CloseAsync(Interlocked.Exchange(ref client, null));
            }, ct);
        }
        finally { await CloseAsync(Interlocked.Exchange(ref client, null)); }
    }

    /// <summary>
    /// Closes the client, but never lets a close that hangs (a broker gone mid-handshake) hold the runner: after
    /// <see cref="ClientCloseTimeout"/> the close finishes in the background and the runner goes on with a new client.
    /// </summary>
    private async Task CloseAsync(TClient? client)
    {
        if (client is null) return;
        var closing = Task.Run(async () => await client.DisposeAsync());
        try
        {
            await closing.WaitAsync(ClientCloseTimeout);
        }
        catch (TimeoutException)
        {
            Log.LogWarning("{Kind} {Name}: its {Connection} client did not close within {Timeout} s; left to close in the background",
                kind, name, connectionName, ClientCloseTimeout.TotalSeconds);
            _ = closing.ContinueWith(t => t.Exception, TaskContinuationOptions.OnlyOnFaulted);
        }
        catch (Exception e)
        {
            Log.LogWarning("{Kind} {Name}: closing its {Connection} client failed: {Error}", kind, name, connectionName, e.Message);
        }
    }

    /// <summary>
    /// Two stages, so the scripts of the next batch run while the broker or the store takes this one: <paramref name="first"/>
    /// hands batches to a bounded channel of two; <paramref name="second"/> drains it in order. Whatever fails stops both, and
    /// the supervised loop starts over from what was confirmed.
    /// </summary>
    protected static async Task InTwoStagesAsync<TBatch>(Func<Func<TBatch, Task>, CancellationToken, Task> first,
        Func<TBatch, CancellationToken, Task> second, CancellationToken ct)
    {
        using var attempt = CancellationTokenSource.CreateLinkedTokenSource(ct);
        var ready = Channel.CreateBounded<TBatch>(new BoundedChannelOptions(2) { SingleReader = true, SingleWriter = true });
        var producing = Task.Run(async () =>
        {
            try
            {
                await first(batch => ready.Writer.WriteAsync(batch, attempt.Token).AsTask(), attempt.Token);
                ready.Writer.TryComplete();
            }
            catch (Exception e) { ready.Writer.TryComplete(e); }
        }, attempt.Token);
        try
        {
            await foreach (var batch in ready.Reader.ReadAllAsync(attempt.Token)) await second(batch, attempt.Token);
            await ready.Reader.Completion;   // the first stage's failure, if that ended it
        }
        finally
        {
            attempt.Cancel();
            await producing.ContinueWith(_ => { }, TaskScheduler.Default);
        }
    }

    public virtual async ValueTask DisposeAsync()
    {
        _stop.Cancel();
        try { await _loop; } catch (OperationCanceledException) { }
        _stop.Dispose();
    }
}
