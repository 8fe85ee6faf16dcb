using Magpie.Contracts;
namespace Magpie.Hosting;

/// <summary>
/// Settings of `magpie run`, bound from the <c>Magpie</c> section: appsettings.json, then environment
/// (<c>MAGPIE__DATADIR</c>, <c>MAGPIE__HTTPPORT</c>, <c>MAGPIE__KAFKA</c>, …), then command-line options.
/// </summary>
public sealed class MagpieSettings
{
    public string Target { get; set; } = "all";
    public string DataDir { get; set; } = "./data";
    public int HttpPort { get; set; } = 8080;

    /// <summary>Where HTTP (and the PostgreSQL endpoint) listen: <c>localhost</c> (default), an IP address, or <c>*</c>. Beyond
    /// loopback Magpie needs an API key, or <see cref="Unsecured"/>.</summary>
    public string BindAddress { get; set; } = "localhost";

    /// <summary>Accept listening beyond loopback with no API key (<c>--unsecured</c>): anyone who reaches the port may do anything.</summary>
    public bool Unsecured { get; set; }

    /// <summary>The API key file; default <c>{DataDir}/keys.json</c>. Processes of a split deployment share one.</summary>
    public string? KeysFile { get; set; }

    /// <summary>The key this process sends to the others of a split deployment (query → indexers): from a file, or the
    /// environment (<c>MAGPIE__SERVICEKEY</c>); never on the command line.</summary>
    public string? ServiceKeyFile { get; set; }
    public string? ServiceKey { get; set; }

    /// <summary>HTTPS (and TLS on the PostgreSQL endpoint) from a PEM certificate and key.</summary>
    public TlsSettings Tls { get; set; } = new();

    /// <summary>Kafka bootstrap servers; empty = embedded mode (no Kafka at all).</summary>
    public string? Kafka { get; set; }

    public int KafkaPartitions { get; set; } = 6;

    /// <summary>librdkafka settings for every client to <see cref="Kafka"/> (SASL/SCRAM, TLS): <c>MAGPIE__KAFKACLIENT__sasl.password</c>, …</summary>
    public Dictionary<string, string> KafkaClient { get; set; } = [];

    /// <summary>
    /// Kafka mode, target ingest: each partition of <c>magpie.documents</c>/<c>magpie.changes</c> has its own store, held by one of the
    /// ingest processes of <see cref="ConsumerGroup"/>; any of them takes any request, and the partitions of one that dies are
    /// rebuilt from <c>magpie.changes</c> by the others (docs/KAFKA-AND-COMPOSE.md, "Scaling ingest out").
    /// </summary>
    public bool PartitionedStore { get; set; }

    /// <summary>
    /// How long a write waits for Kafka to hold its change before it is acknowledged anyway with <c>Magpie-Durability: log</c>:
    /// default 10 with <see cref="PartitionedStore"/> (a takeover rebuilds from Kafka), else 0 (acknowledged once the log holds it).
    /// </summary>
    public int? WaitForKafkaSeconds { get; set; }

    /// <summary>Consumer group of the ingest target on <c>magpie.documents</c>; ingest processes sharing it split the partitions.</summary>
    public string ConsumerGroup { get; set; } = "magpie-ingest";
    public short KafkaReplicationFactor { get; set; } = 1;

    /// <summary>Consumer group of indexer processes on <c>magpie.changes</c>; each owns the index shards of its partitions.</summary>
    public string IndexerGroup { get; set; } = "magpie-indexer";

    /// <summary>The HTTP address other processes reach this one at (query processes ask indexers); default http://{hostname}:{port}.</summary>
    public string? AdvertisedUrl { get; set; }

    /// <summary>Kafka mode: where a query process reaches an ingest process (update and delete by query write through it).</summary>
    public string? IngestUrl { get; set; }
    public long MaxRequestBodyBytes { get; set; } = 16 * 1024 * 1024;
    public int MaxJsonDepth { get; set; } = 64;

    /// <summary>Requests served at once; more wait in a queue of <see cref="RequestQueueLimit"/>, beyond that 503 + Retry-After.</summary>
    public int MaxConcurrentRequests { get; set; } = 256;
    public int RequestQueueLimit { get; set; } = 256;

    /// <summary>
    /// Slowest a request body may arrive once its first 5 seconds are over (Kestrel's minimum data rate, 240 B/s by default): an upload
    /// trickled to hold a slot is cut with 408. 4 KB/s still lets a 16 MB body arrive over a slow link in about an hour.
    /// </summary>
    public int MinRequestBodyBytesPerSecond { get; set; } = 4096;

    /// <summary>Longest a client may take to send a request's headers (Kestrel's 30 s by default).</summary>
    public int RequestHeadersTimeoutSeconds { get; set; } = 10;

    public int CheckpointIntervalSeconds { get; set; } = 60;

    /// <summary>Kafka mode: seconds a relay batch may get no delivery report while Kafka answers before the relay rebuilds its producer.</summary>
    public int RelayStallSeconds { get; set; } = 30;

    /// <summary>The server's retrying loops (input consumer, change relay, index workers): the first wait after a failure, doubling to <see cref="MaxRetryDelaySeconds"/>.</summary>
    public int RetryDelayMilliseconds { get; set; } = 1000;
    public int MaxRetryDelaySeconds { get; set; } = 30;

    public RetryDelays Retry => new(TimeSpan.FromMilliseconds(RetryDelayMilliseconds), TimeSpan.FromSeconds(MaxRetryDelaySeconds));

    /// <summary>The change log's compaction (<c>Magpie:Compaction:*</c>): how many versions of each document it keeps, and how often it runs.</summary>
    public CompactionSettings Compaction { get; set; } = new();

    /// <summary>Web origins (<c>https://app.example.com</c>) whose pages may write; other cross-origin writes answer 403.</summary>
    public string[] AllowedOrigins { get; set; } = [];

    /// <summary>Free disk space the document store keeps in reserve (MB): writes that would leave less answer 507.</summary>
    public int MinFreeDiskMegabytes { get; set; } = 64;

    /// <summary>
    /// The newest part of the change log kept in memory (MB, rounded down to a power of two): what an index, the relay or a sink
    /// behind by less than this reads from memory; further behind they read it back from disk (<see cref="Ingest.IngestOptions.LogMemoryBytes"/>).
    /// </summary>
    public int LogMemoryMegabytes { get; set; } = 1024;

    /// <summary>The index engine's budget for facet columns (all indexes together) (per-segment value ordinals and range document sets), in MB.</summary>
    public int FacetCacheMegabytes { get; set; } = 256;

    /// <summary>The index engine's budget for its filters of the ids each index holds (all indexes and shards together), in MB.</summary>
    public int KnownIdsMegabytes { get; set; } = 512;

    /// <summary>Vectors a segment holds before a nearest-neighbour graph (HNSW) is built for its cosine searches; 0: scan always.</summary>
    public int VectorGraphMinimum { get; set; } = 5_000;

    /// <summary>Disk the vectors indexing made may take per model (<c>{DataDir}/embeddings</c>): rebuilds embed no text twice; 0 keeps none.</summary>
    public int EmbeddingCacheMegabytes { get; set; } = 2048;

    /// <summary>The PostgreSQL wire endpoint of the query target (<c>Magpie:Pg:*</c>, <c>MAGPIE__PG__PORT</c>, <c>--pg-port</c>).</summary>
    public PgSettings Pg { get; set; } = new();

    public bool Embedded => string.IsNullOrWhiteSpace(Kafka);
}

public sealed class PgSettings
{
    /// <summary>5433 by default; 0 = any free port; -1 = off.</summary>
    public int Port { get; set; } = 5433;

    /// <summary>Users are API keys (name = user, key = password); this allows the password in clear text instead of SCRAM-SHA-256.</summary>
    public bool AllowCleartext { get; set; }
    public int MaxConnections { get; set; } = 64;
    public int StatementTimeoutSeconds { get; set; } = 30;
    public int StartupTimeoutSeconds { get; set; } = 10;

    /// <summary>Connections that have not sent their startup message yet; a new one past this closes the oldest (silent sockets can't lock logins out).</summary>
    public int MaxPendingConnections { get; set; } = 128;
}

public sealed class TlsSettings
{
    /// <summary>PEM certificate (chain) file; set = HTTPS only.</summary>
    public string? Certificate { get; set; }

    /// <summary>PEM private key file; absent = the key is in the certificate file.</summary>
    public string? Key { get; set; }
}

/// <summary>
/// Change-log compaction. Superseded versions and deletes are reclaimed once every reader of the log (indexes, ETL tasks,
/// subscriptions, the Kafka relay) has passed them; <see cref="Revisions"/> versions of each document stay for
/// <c>GET /docs/{id}/revisions</c> (1: the latest only), none older than <see cref="RevisionsSeconds"/> when set.
/// </summary>
public sealed class CompactionSettings
{
    public bool Enabled { get; set; } = true;
    public int Revisions { get; set; } = 1;
    public int? RevisionsSeconds { get; set; }

    /// <summary>How often to look; a pass runs when at least <see cref="MinMegabytes"/> of superseded versions and deletes (and no less than what it would keep) lie behind every reader.</summary>
    public int IntervalSeconds { get; set; } = 60;
    public int MinMegabytes { get; set; } = 256;
}
