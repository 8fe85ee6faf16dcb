using System.Net;
using System.Net.Sockets;

namespace Magpie.Tests.Fixtures;

public static class FreePort
{
    public static int Next()
    {
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        return ((IPEndPoint)listener.LocalEndpoint).Port;
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
