namespace Magpie.Indexer.MapReduce;

/// <summary>
/// The map results of one reduce key, kept so that a change re-reduces only what it touched (RavenDB 4's
/// reduce trees). Entries live in leaf pages of at most <c>pageSize</c> entries, each with its partial
/// result; branch nodes of at most <c>fanOut</c> children keep the partial result of their subtree, up to
/// one root. Changing a document's entries re-reduces its leaf page and the path to the root: about
/// pageSize + fanOut × depth values, whatever the group's size — one document in a group of a million
/// entries never reads the million. Partial results have the map output's shape, so the same aggregate
/// reduces entries and partials alike.
/// </summary>
public sealed class ReduceTree(string key, Func<string, IReadOnlyList<string>, string> aggregate, int pageSize = 1024, int fanOut = 256)
{
    private sealed class Node
    {
        public Node? Parent;
        public readonly List<Node> Children = [];
        /// <summary>Leaf pages only: each document's entries here.</summary>
        public readonly Dictionary<string, IReadOnlyList<string>> Entries = new(StringComparer.Ordinal);
        public int Count;
        public string? Partial;
    }

    private readonly List<Node> _leaves = [];
    private readonly Dictionary<string, Node> _leafOf = new(StringComparer.Ordinal);
    private readonly HashSet<Node> _dirtyLeaves = [];
    /// <summary>Leaves with room for more entries (deletes leave room; it is reused before a leaf is added).</summary>
    private readonly HashSet<Node> _withRoom = [];
    private Node? _root;
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
        var previous = _leafOf.GetValueOrDefault(documentId);
        Remove(documentId);
        if (entries.Count == 0) return;
        // An updated document stays in its page when it fits: one leaf and its path change, nothing else.
        var leaf = previous is not null && previous.Count + entries.Count <= pageSize ? previous
            : _withRoom.FirstOrDefault(l => l.Count + entries.Count <= pageSize) ?? AddLeaf();
        leaf.Entries[documentId] = entries;
        leaf.Count += entries.Count;
        Count += entries.Count;
        _leafOf[documentId] = leaf;
        _dirtyLeaves.Add(leaf);
        if (leaf.Count >= pageSize) _withRoom.Remove(leaf);
        else _withRoom.Add(leaf);
    }

    public void Remove(string documentId)
    {
        if (!_leafOf.Remove(documentId, out var leaf)) return;
        var entries = leaf.Entries[documentId];
        leaf.Entries.Remove(documentId);
        leaf.Count -= entries.Count;
        Count -= entries.Count;
        _dirtyLeaves.Add(leaf);
        _withRoom.Add(leaf);
    }

    /// <summary>Re-reduces the dirty leaves and the paths above them; returns the new result (null: no entries left).</summary>
    public string? Reduce()
    {
        // An aggregate that threw last time may have left partials half-updated: everything again, once.
        if (_broken) _dirtyLeaves.UnionWith(_leaves);
        _broken = true;
        long reads = 0;
        var dirtyParents = new HashSet<Node>();
        foreach (var leaf in _dirtyLeaves)
        {
            leaf.Partial = leaf.Count == 0 ? null : aggregate(key, leaf.Entries.Values.SelectMany(e => e).ToList());
            reads += leaf.Count;
            if (leaf.Parent is { } p) dirtyParents.Add(p);
        }
        _dirtyLeaves.Clear();
        // Level by level up to the root: each branch re-reduces its children's partials.
        while (dirtyParents.Count > 0)
        {
            var next = new HashSet<Node>();
            foreach (var node in dirtyParents)
            {
                var partials = node.Children.Select(c => c.Partial).OfType<string>().ToList();
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

    /// <summary>A new leaf at the right edge; the tree grows a level when the root is full.</summary>
    private Node AddLeaf()
    {
        var leaf = new Node();
        _leaves.Add(leaf);
        if (_root is null)
        {
            _root = leaf;
            Depth = 1;
            return leaf;
        }
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
        else if (parent.Children.Count < fanOut) Adopt(parent, node);
        else
        {
            var sibling = new Node();
            Adopt(sibling, node);
            Attach(sibling, level + 1);
        }
    }

    private static void Adopt(Node parent, Node child)
    {
        parent.Children.Add(child);
        child.Parent = parent;
    }

    /// <summary>The rightmost node at <paramref name="levelsBelowRoot"/> below the root (0 = the root); null if below zero.</summary>
    private Node? Rightmost(int levelsBelowRoot)
    {
        if (levelsBelowRoot < 0) return null;
        var node = _root!;
        for (var i = 0; i < levelsBelowRoot; i++) node = node.Children[^1];
        return node;
    }
}
