using Confluent.Kafka;

namespace Magpie.Kafka;

/// <summary>
/// Loads librdkafka (from the <c>librdkafka.redist</c> package Confluent.Kafka depends on) once, up front, so a
/// process that can't load it fails at start with the reason instead of on its first Kafka call.
/// </summary>
public static class KafkaNative
{
    private static readonly Lock Gate = new();
    private static bool _loaded;

    public static void EnsureLoaded()
    {
        lock (Gate)
        {
            if (_loaded) return;
            try { Library.Load(); }
            catch (Exception e) when (e is DllNotFoundException or InvalidOperationException or BadImageFormatException)
            {
                throw new InvalidOperationException($"librdkafka could not be loaded from librdkafka.redist ({e.Message})", e);
            }
            _loaded = true;
        }
    }
}
