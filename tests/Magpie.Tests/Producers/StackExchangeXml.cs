using System.Xml.Linq;

namespace Magpie.Tests.Producers;

/// <summary>The sample dump read independently of the importer (LINQ to XML), to compare against.</summary>
public sealed class StackExchangeXml
{
    public List<XElement> Users { get; }
    public List<XElement> Posts { get; }
    public List<XElement> Badges { get; }
    public List<XElement> Comments { get; }

    public StackExchangeXml(string dir)
    {
        List<XElement> Rows(string file) => XDocument.Load(Path.Combine(dir, file)).Root!.Elements("row").ToList();
        Users = Rows("Users.xml");
        Posts = Rows("Posts.xml");
        Badges = Rows("Badges.xml");
        Comments = Rows("Comments.xml");
    }

    public Dictionary<string, int> BadgesPerUser() => Count(Badges, "UserId", "users/", Users);
    public Dictionary<string, int> CommentsPerPost() => Count(Comments, "PostId", "posts/", Posts);

    private static Dictionary<string, int> Count(List<XElement> rows, string parent, string prefix, List<XElement> parents)
    {
        var known = parents.Select(p => (string)p.Attribute("Id")!).ToHashSet();
        return rows.Where(r => known.Contains((string)r.Attribute(parent)!))
            .GroupBy(r => prefix + (string)r.Attribute(parent)!)
            .ToDictionary(g => g.Key, g => g.Count());
    }
}
