using Magpie.Fuzz;
using SharpFuzz;

// Usage (bench/fuzz.sh runs it under afl-fuzz): Magpie.Fuzz <rql|sql|pgwire|bulk|patch> — reads inputs from AFL++'s
// forkserver; Magpie.Fuzz <target> <file> runs one input (to reproduce a crash).
if (args.Length == 0 || !FuzzTargets.All.TryGetValue(args[0], out var target))
{
    Console.Error.WriteLine($"usage: Magpie.Fuzz <{string.Join('|', FuzzTargets.All.Keys)}> [input-file]");
    return 2;
}
if (args.Length > 1)
{
    target(File.ReadAllBytes(args[1]));
    return 0;
}
Fuzzer.OutOfProcess.Run(stream =>
{
    using var copy = new MemoryStream();
    stream.CopyTo(copy);
    target(copy.ToArray());
});
return 0;
