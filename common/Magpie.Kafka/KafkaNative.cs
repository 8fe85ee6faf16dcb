using System.Runtime.InteropServices;
using Confluent.Kafka;

namespace Magpie.Kafka;

/// <summary>
/// Loads librdkafka for Confluent.Kafka. The NuGet mirror has no librdkafka.redist, so the library is
/// built from the 2.15.1 sources by scripts/build-librdkafka.sh and found here, in this order:
/// $MAGPIE_LIBRDKAFKA, next to the executable, ~/.cache/magpie/librdkafka-2.15.1/, /usr/local/lib.
/// (Debian's librdkafka1 is 2.0.2: too old for Confluent.Kafka 2.15's consumer.)
/// </summary>
public static class KafkaNative
{
    public const string Version = "2.15.1";
    private static readonly Lock Gate = new();
    private static bool _loaded;

    public static void EnsureLoaded()
    {
        lock (Gate)
        {
            if (_loaded) return;
            if (OperatingSystem.IsLinux())
            {
                var path = Locate() ?? throw new InvalidOperationException(
                    $"librdkafka {Version} was not found. Run `bash scripts/build-librdkafka.sh` (builds it into " +
                    $"~/.cache/magpie/librdkafka-{Version}/) or set MAGPIE_LIBRDKAFKA to a librdkafka.so.1 of version {Version} or later.");
                // Confluent.Kafka P/Invokes "libdl" (only libdl.so.2 exists without libc6-dev) and "librdkafka".
                NativeLibrary.SetDllImportResolver(typeof(Library).Assembly, (name, _, _) => name switch
                {
                    "libdl" => NativeLibrary.Load("libdl.so.2"),
                    "librdkafka" => NativeLibrary.Load(path),
                    _ => IntPtr.Zero,
                });
                Library.Load(path);
            }
            _loaded = true;
        }
    }

    public static IEnumerable<string> Candidates()
    {
        if (Environment.GetEnvironmentVariable("MAGPIE_LIBRDKAFKA") is { Length: > 0 } env) yield return env;
        yield return Path.Combine(AppContext.BaseDirectory, "librdkafka.so.1");
        var home = Environment.GetFolderPath(Environment.SpecialFolder.UserProfile);
        yield return Path.Combine(home, ".cache", "magpie", $"librdkafka-{Version}", "librdkafka.so.1");
        yield return "/usr/local/lib/librdkafka.so.1";
    }

    private static string? Locate() => Candidates().FirstOrDefault(File.Exists);
}
