namespace Magpie.Query.Postgres;

/// <summary>
/// Who gets a session. A connection takes one of <see cref="PgOptions.MaxConnections"/> slots only once its startup message arrived
/// (a client refused for a full server is told so then, as PostgreSQL does). Until its first message (an SSLRequest or the startup
/// message) it is silent, and silent connections are bounded: past <see cref="PgOptions.MaxPendingConnections"/>, a new one closes
/// the oldest silent one of the same address, or else the oldest of all. Every driver speaks the moment it connects, so sockets that
/// open and never speak can neither hold the slots nor crowd out a login, however often they are reopened; a connection that spoke
/// and then stalls gives its place back at the startup deadline (<see cref="PgOptions.StartupTimeout"/>).
/// </summary>
public sealed class PgAdmission(PgOptions options)
{
    private readonly SemaphoreSlim _slots = new(options.MaxConnections, options.MaxConnections);
    private readonly LinkedList<Pending> _pending = [];
    private readonly Lock _lock = new();

    /// <summary>A connection that has not spoken yet: cancelled when a newer one needs its place.</summary>
    public sealed class Pending : IDisposable
    {
        private readonly PgAdmission _owner;
        private readonly CancellationTokenSource _evicted = new();
        internal LinkedListNode<Pending>? Node;

        private readonly Func<bool> _bytesWaiting;

        internal Pending(PgAdmission owner, string source, Func<bool> bytesWaiting) => (_owner, Source, _bytesWaiting) = (owner, source, bytesWaiting);

        /// <summary>Bytes from the client wait to be read: it spoke, the server has not read it yet (under a flood, reading lags).</summary>
        internal bool BytesWaiting
        {
            get
            {
                try { return _bytesWaiting(); }
                catch (Exception e) when (e is ObjectDisposedException or System.Net.Sockets.SocketException) { return false; }
            }
        }

        public string Source { get; }
        public CancellationToken Evicted => _evicted.Token;

        /// <summary>A newer connection takes its place. The session may be ending meanwhile (its token already disposed): then nothing is left to stop.</summary>
        internal void Evict()
        {
            try { _evicted.Cancel(); }
            catch (ObjectDisposedException) { }
        }

        /// <summary>Its first message arrived: no longer silent, so no newer connection closes it.</summary>
        public void Heard() => _owner.Leave(this);

        /// <summary>The startup message arrived: takes a session slot, false when the server is full.</summary>
        public bool Spoke()
        {
            _owner.Leave(this);
            return _owner._slots.Wait(0);
        }

        public void Dispose()
        {
            _owner.Leave(this);
            _evicted.Dispose();
        }
    }

    public int Pendings { get { lock (_lock) return _pending.Count; } }

    /// <param name="bytesWaiting">Whether the client's bytes wait unread on the socket (<c>Socket.Available &gt; 0</c>).</param>
    public Pending Enter(string source, Func<bool> bytesWaiting)
    {
        var pending = new Pending(this, source, bytesWaiting);
        Pending? evicted = null;
        lock (_lock)
        {
            if (_pending.Count >= options.MaxPendingConnections)
            {
                // The oldest silent one of this address, else the oldest silent one; one that has spoken since is heard instead.
                LinkedListNode<Pending>? victim = null;
                for (var n = _pending.First; n is not null;)
                {
                    var next = n.Next;
                    if (n.Value.BytesWaiting) { _pending.Remove(n); n.Value.Node = null; }
                    else if (n.Value.Source == source) { victim = n; break; }
                    else victim ??= n;
                    n = next;
                }
                if (victim is not null && _pending.Count >= options.MaxPendingConnections)
                {
                    _pending.Remove(victim);
                    victim.Value.Node = null;
                    evicted = victim.Value;
                }
            }
            pending.Node = _pending.AddLast(pending);
        }
        evicted?.Evict();   // outside the lock: the victim's cancellation runs its session's callbacks
        return pending;
    }

    /// <summary>A session's slot goes back when it ends.</summary>
    public void Release() => _slots.Release();

    private void Leave(Pending pending)
    {
        lock (_lock)
        {
            if (pending.Node is { } node) _pending.Remove(node);
            pending.Node = null;
        }
    }
}
