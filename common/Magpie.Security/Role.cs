namespace Magpie.Security;

/// <summary>What a key may do; each role includes the ones below it (an admin key can write, a write key can read).</summary>
public enum Role
{
    /// <summary>GETs, queries, streams, subscriptions, the PostgreSQL endpoint.</summary>
    Read = 1,

    /// <summary>Documents: PUT, PATCH, DELETE, bulk.</summary>
    Write = 2,

    /// <summary>Indexes, ETL connections and tasks, operations (reset), keys.</summary>
    Admin = 3,
}

public static class Roles
{
    public static readonly string[] Names = ["read", "write", "admin"];

    public static Role Parse(string name) => name.ToLowerInvariant() switch
    {
        "read" => Role.Read,
        "write" => Role.Write,
        "admin" => Role.Admin,
        _ => throw new ArgumentException($"unknown role '{name}' (expected read, write or admin)"),
    };

    public static string Name(this Role role) => role.ToString().ToLowerInvariant();
}
