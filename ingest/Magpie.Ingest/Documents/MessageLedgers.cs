using System.Text;

namespace Magpie.Ingest.Documents;

/// <summary>
/// Which messages each queue sink has applied, so a message redelivered after a crash or a broker restart is not applied
/// twice. A ledger remembers the latest <see cref="Capacity"/> message ids it was given: a broker redelivers only what was
/// not acknowledged, which is at most a sink's prefetch window (a few thousand), far inside it. The ids of a batch are
/// appended to the change log in the commit that holds the batch's writes (one bookkeeping entry per ledger), and kept in
/// the checkpoint's state, so after a crash a ledger is exactly what was committed.
/// </summary>
public sealed class MessageLedgers
{
    public const int Capacity = 65_536;

    /// <summary>The longest message id a ledger keeps as written; longer ids are kept as their SHA-256 (the sink's side does that).</summary>
    public const int MaxIdLength = 200;

    private readonly Dictionary<string, Ledger> _ledgers = new(StringComparer.Ordinal);
    private readonly Lock _lock = new();

    public bool Contains(string ledger, string messageId)
    {
        lock (_lock) return _ledgers.TryGetValue(ledger, out var l) && l.Ids.Contains(messageId);
    }

    public void Add(string ledger, IEnumerable<string> messageIds)
    {
        lock (_lock)
        {
            if (!_ledgers.TryGetValue(ledger, out var l)) _ledgers[ledger] = l = new Ledger();
            foreach (var id in messageIds)
            {
                if (!l.Ids.Add(id)) continue;
                l.Order.Enqueue(id);
                while (l.Order.Count > Capacity) l.Ids.Remove(l.Order.Dequeue());
            }
        }
    }

    /// <summary>What the checkpoint keeps: each ledger's ids, oldest first.</summary>
    public Dictionary<string, string[]> Save()
    {
        lock (_lock) return _ledgers.ToDictionary(kv => kv.Key, kv => kv.Value.Order.ToArray(), StringComparer.Ordinal);
    }

    public void Load(Dictionary<string, string[]>? saved)
    {
        foreach (var (ledger, ids) in saved ?? []) Add(ledger, ids);
    }

    /// <summary>A ledger entry's document: the batch's ids, one per line (ids hold no line breaks: <see cref="Problem"/>).</summary>
    public static byte[] Encode(IEnumerable<string> messageIds) => Encoding.UTF8.GetBytes(string.Join('\n', messageIds));

    public static IEnumerable<string> Decode(ReadOnlySpan<byte> document) =>
        Encoding.UTF8.GetString(document).Split('\n', StringSplitOptions.RemoveEmptyEntries);

    /// <summary>Why a ledger name or message id cannot be kept (null: it can).</summary>
    public static string? Problem(string value, string what)
    {
        if (string.IsNullOrEmpty(value)) return $"{what} is empty";
        if (value.Length > MaxIdLength) return $"{what} is longer than {MaxIdLength} characters";
        return value.Any(char.IsControl) ? $"{what} holds a control character" : null;
    }

    private sealed class Ledger
    {
        public readonly HashSet<string> Ids = new(StringComparer.Ordinal);
        public readonly Queue<string> Order = new();
    }
}

/// <summary>The messages whose writes a store write carries, recorded in the same commit.</summary>
public sealed record AppliedMessages(string Ledger, IReadOnlyList<string> MessageIds);
