namespace Magpie.Producers.StackExchange;

/// <summary>
/// The seed's ETL of a Stack Exchange dump: users and posts become documents (<c>users/{Id}</c>,
/// <c>posts/{Id}</c>); badges are appended to their user and comments (and votes, when Votes.xml is
/// present) to their post with JSON Patch. Documents go first, appends second (<see cref="Phases"/>),
/// so every patch finds its target. Rows pointing at a user or post that is not in the dump are
/// counted in <see cref="Orphans"/> and skipped, since a patch of a missing document would be rejected.
/// </summary>
public sealed class StackExchangeDump(string directory)
{
    private readonly HashSet<string> _ids = new(StringComparer.Ordinal);
    private long _orphans;

    public string UsersFile => Path.Combine(directory, "Users.xml");
    public string PostsFile => Path.Combine(directory, "Posts.xml");
    public string BadgesFile => Path.Combine(directory, "Badges.xml");
    public string CommentsFile => Path.Combine(directory, "Comments.xml");
    public string VotesFile => Path.Combine(directory, "Votes.xml");
    public bool HasVotes => File.Exists(VotesFile);
    private bool HasBadges => File.Exists(BadgesFile);
    private bool HasComments => File.Exists(CommentsFile);
    private bool HasUsers => File.Exists(UsersFile);
    private bool HasPosts => File.Exists(PostsFile);
    public long Orphans => Interlocked.Read(ref _orphans);

    public static string UserId(string id) => $"users/{id}";
    public static string PostId(string id) => $"posts/{id}";

    /// <summary>Null when the folder holds something to import (Users.xml or Posts.xml), else why not.</summary>
    public string? Problem() => !Directory.Exists(directory) ? $"{directory} is not a folder"
        : HasUsers || HasPosts ? null
        : $"not a Stack Exchange dump folder: neither Users.xml nor Posts.xml is in {directory}";

    /// <summary>
    /// The import in order, from whichever files the folder has: each phase must be fully acknowledged before the next
    /// starts. Badges need their users, comments and votes their posts; a file that is absent is a phase that does not run
    /// (and its array is not added to the documents).
    /// </summary>
    public IReadOnlyList<(string Name, Func<long> Count, Func<IEnumerable<DocumentWrite>> Writes)> Phases()
    {
        var phases = new List<(string, Func<long>, Func<IEnumerable<DocumentWrite>>)>();
        void Add(bool present, string name, string file, Func<IEnumerable<DocumentWrite>> writes)
        {
            if (present) phases.Add((name, () => DumpRows.Count(file), writes));
        }
        Add(HasUsers, "users", UsersFile, Users);
        Add(HasPosts, "posts", PostsFile, Posts);
        Add(HasUsers && HasBadges, "badges", BadgesFile, Badges);
        Add(HasPosts && HasComments, "comments", CommentsFile, Comments);
        Add(HasPosts && HasVotes, "votes", VotesFile, Votes);
        return phases;
    }

    public IEnumerable<DocumentWrite> Users()
    {
        foreach (var row in DumpRows.Read(UsersFile))
        {
            var id = UserId(row["Id"]);
            _ids.Add(id);
            yield return DocumentWrite.Put(id, DumpRows.ToJson(row, w => { if (HasBadges) { w.WriteStartArray("Badges"); w.WriteEndArray(); } }));
        }
    }

    public IEnumerable<DocumentWrite> Posts()
    {
        var (votes, comments) = (HasVotes, HasComments);
        foreach (var row in DumpRows.Read(PostsFile))
        {
            var id = PostId(row["Id"]);
            _ids.Add(id);
            yield return DocumentWrite.Put(id, DumpRows.ToJson(row, w =>
            {
                if (comments) { w.WriteStartArray("Comments"); w.WriteEndArray(); }
                if (votes) { w.WriteStartArray("Votes"); w.WriteEndArray(); }
            }));
        }
    }

    public IEnumerable<DocumentWrite> Badges() => Appends(BadgesFile, "UserId", UserId, "/Badges");

    public IEnumerable<DocumentWrite> Comments() => Appends(CommentsFile, "PostId", PostId, "/Comments");

    public IEnumerable<DocumentWrite> Votes() => Appends(VotesFile, "PostId", PostId, "/Votes");

    private IEnumerable<DocumentWrite> Appends(string file, string parentAttribute, Func<string, string> parentId, string arrayPath)
    {
        foreach (var row in DumpRows.Read(file))
        {
            if (!row.TryGetValue(parentAttribute, out var parent) || !_ids.Contains(parentId(parent)))
            {
                Interlocked.Increment(ref _orphans);
                continue;
            }
            yield return DocumentWrite.Patch(parentId(parent), DumpRows.AppendPatch(arrayPath, row, parentAttribute));
        }
    }
}
