using System.Net;
using System.Net.Sockets;

namespace Magpie.Tests.Fixtures;

public static class FreePort
{
    // Ports come from below Linux's ephemeral range (32768-60999) and are never handed out twice in a run. Asking the
    // kernel for port 0 gave a port that was free at that moment: the next ask could get it again (a CI run handed
    // magpie's HTTP and PostgreSQL ports the same number), and any outgoing connection could take it before the
    // service bound it.
    private const int First = 20_000, Last = 32_000;
    private static readonly HashSet<int> HandedOut = [];
    private static int _next = First + (int)((long)Environment.ProcessId * 7919 % (Last - First));

    public static int Next()
    {
        lock (HandedOut)
        {
            for (var tried = 0; tried < Last - First; tried++)
            {
                var port = _next;
                _next = _next + 1 >= Last ? First : _next + 1;
                if (!HandedOut.Add(port)) continue;
                if (Bindable(port)) return port;
            }
        }
        throw new InvalidOperationException($"no free port between {First} and {Last}");
    }

    private static bool Bindable(int port)
    {
        try
        {
            using var listener = new TcpListener(IPAddress.Loopback, port);
            listener.Start();
            return true;
        }
        catch (SocketException) { return false; }
    }

    public static async Task WaitOpenAsync(int port, TimeSpan timeout, Func<bool>? stillAlive = null)
    {
        var deadline = DateTime.UtcNow + timeout;
        while (DateTime.UtcNow < deadline)
        {
            if (stillAlive is not null && !stillAlive()) throw new InvalidOperationException($"the process meant to listen on {port} exited");
            try
            {
                using var client = new TcpClient();
                await client.ConnectAsync(IPAddress.Loopback, port);
                return;
            }
            catch (SocketException) { await Task.Delay(200); }
        }
        throw new TimeoutException($"nothing listened on port {port} within {timeout}");
    }
}
