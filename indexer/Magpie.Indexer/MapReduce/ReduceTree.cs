namespace Magpie.Indexer.MapReduce;

/// <summary>
/// The map results of one reduce key, kept so that a change re-reduces only what it touched (RavenDB 4's
/// reduce trees). Entries live in leaf pages of at most <c>pageSize</c> entries, each with its partial
/// result; branch nodes of at most <c>fanOut</c> children keep the partial result of their subtree, up to
/// one root. Changing a document's entries re-reduces its leaf page and the path to the root: about
/// pageSize + fanOut × depth values, whatever the group's size — one document in a group of a million
/// entries never reads the million. Partial results have the map output's shape, so the same aggregate
/// reduces entries and partials alike.
/// <para/>
/// A key whose entries fit one page is that page alone: the bookkeeping of pages (which page holds a document, which have
/// room, which changed) exists only once the key outgrows it. A fine-grained group-by (posts per user per day) has about one
/// key per document, and with the bookkeeping every key cost some twenty objects: at a million keys the collector's work on
/// them was a fifth of the reduce's time. For the same reason a page holding one document keeps it without a dictionary.
/// </summary>
public sealed class ReduceTree(string key, Func<string, IReadOnlyList<string>, string> aggregate, int pageSize = 1024, int fanOut = 256)
{
    private sealed class Node
    {
        public Node? Parent;
        /// <summary>Branches only.</summary>
        public List<Node>? Children;
        public int Count;
        public string? Partial;
        // Leaf pages only: each document's entries here. The first document is held as it is, a dictionary only once a second
        // one comes (most keys of a fine-grained group-by hold one document).
        private string? _soleId;
        private IReadOnlyList<string>? _sole;
        private Dictionary<string, IReadOnlyList<string>>? _many;

        public void Set(string documentId, IReadOnlyList<string> entries)
        {
            if (_many is not null) _many[documentId] = entries;
            else if (_soleId is null || _soleId == documentId) (_soleId, _sole) = (documentId, entries);
            else
            {
                _many = new(StringComparer.Ordinal) { [_soleId] = _sole!, [documentId] = entries };
                (_soleId, _sole) = (null, null);
            }
        }

        public bool Remove(string documentId, [System.Diagnostics.CodeAnalysis.NotNullWhen(true)] out IReadOnlyList<string>? entries)
        {
            if (_many is not null) return _many.Remove(documentId, out entries);
            if (_soleId != documentId)
            {
                entries = null;
                return false;
            }
            entries = _sole!;
            (_soleId, _sole) = (null, null);
            return true;
        }

        public IEnumerable<string> Documents => _many is not null ? _many.Keys : _soleId is null ? [] : [_soleId];

        /// <summary>Every entry of the page, what its partial result reduces.</summary>
        public IReadOnlyList<string> Entries() => _many is null ? _sole ?? [] : [.. _many.Values.SelectMany(e => e)];
    }

    /// <summary>The bookkeeping of a key that has outgrown one page.</summary>
    private sealed class Pages
    {
        public readonly List<Node> Leaves = [];
        public readonly Dictionary<string, Node> LeafOf = new(StringComparer.Ordinal);
        public readonly HashSet<Node> Dirty = [];
        /// <summary>Leaves with room for more entries (deletes leave room; it is reused before a leaf is added).</summary>
        public readonly HashSet<Node> WithRoom = [];
    }

    private Node? _root;
    private Pages? _pages;
    /// <summary>One page (no <see cref="_pages"/>): whether it changed since the last reduce.</summary>
    private bool _rootDirty;
    private bool _broken;

    /// <summary>Map entries in the tree.</summary>
    public long Count { get; private set; }

    /// <summary>Entries and partial results the last <see cref="Reduce"/> read (what an update costs).</summary>
    public long LastReduceReads { get; private set; }

    public int Depth { get; private set; }

    /// <summary>The result over every entry, as of the last <see cref="Reduce"/>; null when the key has no entries (it disappears).</summary>
    public string? Result { get; private set; }

    /// <summary>Replaces the entries document <paramref name="documentId"/> contributes to this key (none = removes them).</summary>
    public void Put(string documentId, IReadOnlyList<string> entries)
    {
        if (_pages is null)
        {
            Remove(documentId);
            if (entries.Count == 0) return;
            if (_root is null) (_root, Depth) = (new Node(), 1);
            if (_root.Count + entries.Count <= pageSize)
            {
                Place(_root, documentId, entries);
                _rootDirty = true;
                return;
            }
            _pages = Paged(_root);
        }
        var previous = _pages.LeafOf.GetValueOrDefault(documentId);
        Remove(documentId);
        if (entries.Count == 0) return;
        // An updated document stays in its page when it fits: one leaf and its path change, nothing else.
        var leaf = previous is not null && previous.Count + entries.Count <= pageSize ? previous
            : _pages.WithRoom.FirstOrDefault(l => l.Count + entries.Count <= pageSize) ?? AddLeaf(_pages);
        Place(leaf, documentId, entries);
        _pages.LeafOf[documentId] = leaf;
        _pages.Dirty.Add(leaf);
        if (leaf.Count >= pageSize) _pages.WithRoom.Remove(leaf);
        else _pages.WithRoom.Add(leaf);
    }

    public void Remove(string documentId)
    {
        if (_pages is null)
        {
            if (_root is null || !_root.Remove(documentId, out var gone)) return;
            _root.Count -= gone.Count;
            Count -= gone.Count;
            _rootDirty = true;
            return;
        }
        if (!_pages.LeafOf.Remove(documentId, out var leaf)) return;
        leaf.Remove(documentId, out var entries);
        leaf.Count -= entries!.Count;
        Count -= entries.Count;
        _pages.Dirty.Add(leaf);
        _pages.WithRoom.Add(leaf);
    }

    /// <summary>Re-reduces the dirty leaves and the paths above them; returns the new result (null: no entries left).</summary>
    public string? Reduce()
    {
        if (_pages is null)
        {
            // An aggregate that threw last time may have left the page unreduced: again, once.
            if (_broken) _rootDirty = true;
            _broken = true;
            LastReduceReads = 0;
            if (_rootDirty && _root is not null)
            {
                _root.Partial = _root.Count == 0 ? null : aggregate(key, _root.Entries());
                LastReduceReads = _root.Count;
            }
            _rootDirty = _broken = false;
            return Result = Count == 0 ? null : _root?.Partial;
        }
        var pages = _pages;
        // An aggregate that threw last time may have left partials half-updated: everything again, once.
        if (_broken) pages.Dirty.UnionWith(pages.Leaves);
        _broken = true;
        long reads = 0;
        var dirtyParents = new HashSet<Node>();
        foreach (var leaf in pages.Dirty)
        {
            leaf.Partial = leaf.Count == 0 ? null : aggregate(key, leaf.Entries());
            reads += leaf.Count;
            if (leaf.Parent is { } p) dirtyParents.Add(p);
        }
        pages.Dirty.Clear();
        // Level by level up to the root: each branch re-reduces its children's partials.
        while (dirtyParents.Count > 0)
        {
            var next = new HashSet<Node>();
            foreach (var node in dirtyParents)
            {
                var partials = node.Children!.Select(c => c.Partial).OfType<string>().ToList();
                node.Partial = partials.Count == 0 ? null : aggregate(key, partials);
                reads += partials.Count;
                if (node.Parent is { } p) next.Add(p);
            }
            dirtyParents = next;
        }
        LastReduceReads = reads;
        _broken = false;
        return Result = Count == 0 ? null : _root?.Partial;
    }

    private void Place(Node leaf, string documentId, IReadOnlyList<string> entries)
    {
        leaf.Set(documentId, entries);
        leaf.Count += entries.Count;
        Count += entries.Count;
    }

    /// <summary>The bookkeeping for a key about to outgrow its one page (the root, a leaf).</summary>
    private Pages Paged(Node root)
    {
        var pages = new Pages();
        pages.Leaves.Add(root);
        foreach (var document in root.Documents) pages.LeafOf[document] = root;
        if (_rootDirty) pages.Dirty.Add(root);
        if (root.Count < pageSize) pages.WithRoom.Add(root);
        _rootDirty = false;
        return pages;
    }

    /// <summary>A new leaf at the right edge; the tree grows a level when the root is full.</summary>
    private Node AddLeaf(Pages pages)
    {
        var leaf = new Node();
        pages.Leaves.Add(leaf);
        Attach(leaf, level: 0);
        return leaf;
    }

    /// <summary>Attaches <paramref name="node"/> (at <paramref name="level"/>, leaves = 0) under the rightmost branch with room.</summary>
    private void Attach(Node node, int level)
    {
        // The rightmost node one level above the new one, if the tree is that tall.
        var parent = Rightmost(Depth - 2 - level);
        if (parent is null)
        {
            // The root is at this node's level: a new root above both.
            var root = new Node();
            Adopt(root, _root!);
            Adopt(root, node);
            _root = root;
            Depth++;
        }
        else if (parent.Children!.Count < fanOut) Adopt(parent, node);
        else
        {
            var sibling = new Node();
            Adopt(sibling, node);
            Attach(sibling, level + 1);
        }
    }

    private static void Adopt(Node parent, Node child)
    {
        (parent.Children ??= []).Add(child);
        child.Parent = parent;
    }

    /// <summary>The rightmost node at <paramref name="levelsBelowRoot"/> below the root (0 = the root); null if below zero.</summary>
    private Node? Rightmost(int levelsBelowRoot)
    {
        if (levelsBelowRoot < 0) return null;
        var node = _root!;
        for (var i = 0; i < levelsBelowRoot; i++) node = node.Children![^1];
        return node;
    }
}
