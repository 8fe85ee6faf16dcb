using System.Diagnostics;
using System.Runtime.InteropServices;

namespace Magpie.Tests.Fixtures;

/// <summary>POSIX signals for child processes: SIGTERM for a clean stop, SIGKILL for a crash.</summary>
public static partial class Signals
{
    public const int SigTerm = 15;
    public const int SigKill = 9;

    [LibraryImport("libc", EntryPoint = "kill", SetLastError = true)]
    private static partial int Kill(int pid, int signal);

    public static void Send(int pid, int signal)
    {
        if (Kill(pid, signal) != 0 && Marshal.GetLastPInvokeError() != 3 /* ESRCH: already gone */)
            throw new InvalidOperationException($"kill({pid}, {signal}) failed: errno {Marshal.GetLastPInvokeError()}");
    }

    /// <summary>Stops a child with <paramref name="signal"/> and waits for it; SIGKILL if it is still there after <paramref name="grace"/>.</summary>
    public static async Task StopAsync(Process process, int signal, TimeSpan grace)
    {
        if (process.HasExited) return;
        Send(process.Id, signal);
        using var cts = new CancellationTokenSource(grace);
        try { await process.WaitForExitAsync(cts.Token); }
        catch (OperationCanceledException) { Send(process.Id, SigKill); await process.WaitForExitAsync(); }
    }
}
