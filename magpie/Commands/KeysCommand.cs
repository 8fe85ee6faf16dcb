using System.CommandLine;
using Magpie.Hosting;
using Magpie.Hosting.Security;
using Magpie.Security;

namespace Magpie.Commands;

/// <summary>
/// `magpie keys create|list|delete`: the API keys in the data directory's key file (or Magpie:KeysFile), as the server reads
/// it; a running server sees a change within a second. `create` prints the key once (or writes it to --out, owner-only).
/// </summary>
public static class KeysCommand
{
    public static Command Create()
    {
        var dataDir = new Option<string?>("--data-dir") { Description = "Data directory whose keys.json to use (default ./data, or Magpie:DataDir)", Recursive = true };
        var keysFile = new Option<string?>("--keys-file") { Description = "The key file itself (default {data dir}/keys.json, or Magpie:KeysFile)", Recursive = true };

        var role = new Option<string>("--role") { Description = "read, write or admin", Required = true };
        role.AcceptOnlyFromAmong(Roles.Names);
        var name = new Option<string?>("--name") { Description = "A name for the key (default: its role and a number); the PostgreSQL user name" };
        var output = new Option<string?>("--out") { Description = "Write the key to this file (mode 0600) instead of printing it" };
        var ifMissing = new Option<bool>("--if-missing") { Description = "A key of this name exists: leave it and succeed (for set-up scripts)" };
        var create = new Command("create", "Create an API key and show it once") { role, name, output, ifMissing };
        create.SetAction(parse =>
        {
            var store = Store(parse.GetValue(dataDir), parse.GetValue(keysFile));
            var r = Roles.Parse(parse.GetValue(role)!);
            var keyName = parse.GetValue(name) ?? $"{r.Name()}-{store.All.Count(k => k.Name.StartsWith(r.Name(), StringComparison.Ordinal)) + 1}";
            if (parse.GetValue(ifMissing) && store.Find(keyName) is not null)
            {
                Console.Error.WriteLine($"magpie: key '{keyName}' exists; left as it is");
                return 0;
            }
            try
            {
                var (key, secret) = store.Create(keyName, r);
                if (parse.GetValue(output) is { } file)
                {
                    Magpie.Contracts.Storage.DurableFile.Write(file, System.Text.Encoding.UTF8.GetBytes(secret + "\n"), ownerOnly: true);
                    Console.Error.WriteLine($"magpie: key '{key.Name}' ({key.Role.Name()}) written to {file}");
                }
                else
                {
                    Console.Error.WriteLine($"magpie: key '{key.Name}' ({key.Role.Name()}) created; it is shown this once, keep it:");
                    Console.WriteLine(secret);
                }
                return 0;
            }
            catch (Exception e) when (e is ArgumentException or InvalidOperationException)
            {
                Console.Error.WriteLine($"magpie: {e.Message}");
                return 1;
            }
        });

        var list = new Command("list", "List the API keys (names, roles, creation times; never the keys)");
        list.SetAction(parse =>
        {
            foreach (var key in Store(parse.GetValue(dataDir), parse.GetValue(keysFile)).All)
                Console.WriteLine($"{key.Name}\t{key.Role.Name()}\t{key.Created:u}");
            return 0;
        });

        var deleteName = new Argument<string>("name") { Description = "The key's name" };
        var delete = new Command("delete", "Delete an API key: clients using it are refused from the next second") { deleteName };
        delete.SetAction(parse =>
        {
            var deleted = Store(parse.GetValue(dataDir), parse.GetValue(keysFile)).Delete(parse.GetValue(deleteName)!);
            if (!deleted) Console.Error.WriteLine($"magpie: no key named '{parse.GetValue(deleteName)}'");
            return deleted ? 0 : 1;
        });

        return new Command("keys", "Manage API keys (roles: read, write, admin)") { dataDir, keysFile, create, list, delete };
    }

    // The same settings `magpie run` reads (appsettings.json, MAGPIE__* variables), so both find the same file.
    private static ApiKeyStore Store(string? dataDir, string? keysFile)
    {
        var settings = MagpieHost.ReadSettings(MagpieHost.CreateBuilder());
        if (dataDir is not null) settings.DataDir = dataDir;
        return new ApiKeyStore(keysFile ?? settings.KeysFile ?? ApiKeyStore.DefaultPath(Path.GetFullPath(settings.DataDir)));
    }
}
