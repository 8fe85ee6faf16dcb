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
}
