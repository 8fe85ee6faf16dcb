using Magpie.Contracts;

namespace Magpie.Hosting;

/// <summary>
/// Every numeric setting's range, checked once before anything starts: a value out of range stops <c>magpie run</c> with one
/// line naming the setting, its value and its range, instead of being quietly clamped to something else.
/// </summary>
public static class SettingsCheck
{
    private const long Unbounded = long.MaxValue;

    /// <summary>The first setting out of range, said as the user writes it (<c>Pg:MaxConnections</c>), or null.</summary>
    public static string? Problem(MagpieSettings s)
    {
        (string Name, long Value, long Min, long Max)[] ranges =
        [
            ("HttpPort", s.HttpPort, 0, 65535),
            ("KafkaPartitions", s.KafkaPartitions, 1, 10_000),
            ("KafkaReplicationFactor", s.KafkaReplicationFactor, 1, 100),
            ("MaxRequestBodyBytes", s.MaxRequestBodyBytes, 1, int.MaxValue / 4),
            ("MaxJsonDepth", s.MaxJsonDepth, 1, WireJson.MaxDocumentDepth),
            ("MaxConcurrentRequests", s.MaxConcurrentRequests, 1, 1_000_000),
            ("RequestQueueLimit", s.RequestQueueLimit, 0, 1_000_000),
            ("MinRequestBodyBytesPerSecond", s.MinRequestBodyBytesPerSecond, 1, Unbounded),
            ("RequestHeadersTimeoutSeconds", s.RequestHeadersTimeoutSeconds, 1, 3600),
            ("CheckpointIntervalSeconds", s.CheckpointIntervalSeconds, 1, Unbounded),
            ("RelayStallSeconds", s.RelayStallSeconds, 1, Unbounded),
            ("WaitForKafkaSeconds", s.WaitForKafkaSeconds ?? 0, 0, 3600),
            ("RetryDelayMilliseconds", s.RetryDelayMilliseconds, 1, 3_600_000),
            ("MaxRetryDelaySeconds", s.MaxRetryDelaySeconds, 1, 86_400),
            ("MinFreeDiskMegabytes", s.MinFreeDiskMegabytes, 0, Unbounded),
            ("LogMemoryMegabytes", s.LogMemoryMegabytes, 16, 1 << 20),
            ("FacetCacheMegabytes", s.FacetCacheMegabytes, 1, Unbounded),
            ("KnownIdsMegabytes", s.KnownIdsMegabytes, 1, Unbounded),
            ("VectorGraphMinimum", s.VectorGraphMinimum, 0, Unbounded),
            ("EmbeddingCacheMegabytes", s.EmbeddingCacheMegabytes, 0, 1 << 20),
            ("Compaction:Revisions", s.Compaction.Revisions, 1, Unbounded),
            ("Compaction:RevisionsSeconds", s.Compaction.RevisionsSeconds ?? 1, 1, Unbounded),
            ("Compaction:IntervalSeconds", s.Compaction.IntervalSeconds, 1, Unbounded),
            ("Compaction:MinMegabytes", s.Compaction.MinMegabytes, 0, Unbounded),
            ("Pg:Port", s.Pg.Port, -1, 65535),
            ("Pg:MaxConnections", s.Pg.MaxConnections, 1, 100_000),
            ("Pg:StatementTimeoutSeconds", s.Pg.StatementTimeoutSeconds, 1, Unbounded),
            ("Pg:StartupTimeoutSeconds", s.Pg.StartupTimeoutSeconds, 1, 3600),
            ("Pg:MaxPendingConnections", s.Pg.MaxPendingConnections, 1, 100_000),
        ];
        foreach (var (name, value, min, max) in ranges)
            if (value < min || value > max)
                return max == Unbounded
                    ? $"setting {name} must be {min:N0} or more, not {value:N0}"
                    : $"setting {name} must be {min:N0} to {max:N0}, not {value:N0}";
        if (s.PartitionedStore && s.Embedded)
            return "setting PartitionedStore needs Kafka (--kafka): its partitions are those of magpie.documents and magpie.changes";
        if (s.RetryDelayMilliseconds > s.MaxRetryDelaySeconds * 1000L)
            return $"setting RetryDelayMilliseconds ({s.RetryDelayMilliseconds:N0}) must not exceed MaxRetryDelaySeconds ({s.MaxRetryDelaySeconds:N0} s)";
        return null;
    }
}
