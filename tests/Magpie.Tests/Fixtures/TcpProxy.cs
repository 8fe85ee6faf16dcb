using System.Net;
using System.Net.Sockets;

namespace Magpie.Tests.Fixtures;

/// <summary>
/// A TCP forwarder on a port of its own in front of a service, for half-dead connections: <see cref="FreezeOpenConnections"/>
/// stops every connection open at that moment from passing bytes either way, with both sockets left open (no reset, no
/// close: the client sees silence), while connections made afterwards work. A client that keeps its old connection gets
/// nowhere; one that connects again gets through.
/// </summary>
public sealed class TcpProxy : IAsyncDisposable
{
    private readonly TcpListener _listener;
    private readonly int _target;
    private readonly CancellationTokenSource _stop = new();
    private readonly List<TcpClient> _sockets = [];
    private int _epoch;

    public int Port { get; }

    public TcpProxy(int port, int target)
    {
        (Port, _target) = (port, target);
        _listener = new TcpListener(IPAddress.Loopback, port);
        _listener.Start();
        _ = AcceptAsync();
    }

    public void FreezeOpenConnections() => Interlocked.Increment(ref _epoch);

    private async Task AcceptAsync()
    {
        while (!_stop.IsCancellationRequested)
        {
            TcpClient client;
            try { client = await _listener.AcceptTcpClientAsync(_stop.Token); }
            catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException or SocketException) { return; }
            var upstream = new TcpClient();
            try { await upstream.ConnectAsync(IPAddress.Loopback, _target, _stop.Token); }
            catch (Exception e) when (e is OperationCanceledException or SocketException)
            {
                client.Dispose();
                upstream.Dispose();
                continue;
            }
            lock (_sockets) _sockets.AddRange([client, upstream]);
            var epoch = Volatile.Read(ref _epoch);
            _ = PumpAsync(client.GetStream(), upstream.GetStream(), epoch);
            _ = PumpAsync(upstream.GetStream(), client.GetStream(), epoch);
        }
    }

    private async Task PumpAsync(NetworkStream from, NetworkStream to, int epoch)
    {
        var buffer = new byte[64 * 1024];
        try
        {
            while (true)
            {
                var read = await from.ReadAsync(buffer, _stop.Token);
                if (read == 0) break;
                // Frozen: what this connection carries from now on is held here, never delivered, and the sockets stay open.
                if (Volatile.Read(ref _epoch) != epoch) { await Task.Delay(Timeout.Infinite, _stop.Token); }
                await to.WriteAsync(buffer.AsMemory(0, read), _stop.Token);
            }
            to.Socket.Shutdown(SocketShutdown.Send);
        }
        catch (Exception e) when (e is OperationCanceledException or IOException or SocketException or ObjectDisposedException) { }
    }

    public ValueTask DisposeAsync()
    {
        _stop.Cancel();
        _listener.Stop();
        lock (_sockets) foreach (var s in _sockets) s.Dispose();
        _stop.Dispose();
        return ValueTask.CompletedTask;
    }
}
