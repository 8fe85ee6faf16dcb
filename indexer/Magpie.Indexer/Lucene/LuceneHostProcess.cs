using System.Buffers.Binary;
using System.Collections.Concurrent;
using System.Diagnostics;
using System.Reflection;
using System.Security.Cryptography;

namespace Magpie.Indexer.Lucene;

/// <summary>A request the Lucene host refused, with Lucene's own message.</summary>
public sealed class LuceneException(string message) : Exception(message);

/// <summary>
/// The Apache Lucene child process (LuceneHost.java): started with <c>java</c>, spoken to over its stdin and
/// stdout in length-prefixed frames, many requests in flight at once (each carries an id; a dedicated
/// thread reads the answers). It exits by itself when our end of its stdin closes, including when this
/// process is killed. Needs a Java 17 runtime (<c>MAGPIE_JAVA</c> or <c>java</c> on PATH) and the Lucene 8
/// jars (<c>MAGPIE_LUCENE_JARS</c>, default /usr/share/java from Debian's liblucene8-java).
/// </summary>
public sealed class LuceneHostProcess : IAsyncDisposable
{
    private readonly Process _process;
    private readonly Stream _stdin;
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    private readonly ConcurrentDictionary<int, TaskCompletionSource<byte[]>> _pending = new();
    private readonly ConcurrentQueue<string> _stderr = new();
    private readonly Thread _reader;
    private int _nextId;
    private volatile string? _failure;

    private LuceneHostProcess(Process process)
    {
        _process = process;
        _stdin = process.StandardInput.BaseStream;
        process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is null) return;
            _stderr.Enqueue(e.Data);
            while (_stderr.Count > 50) _stderr.TryDequeue(out string? _);
        };
        process.BeginErrorReadLine();
        _reader = new Thread(ReadResponses) { IsBackground = true, Name = "lucene-host-reader" };
        _reader.Start();
    }

    public int Pid => _process.Id;

    /// <param name="facetCacheMegabytes">The budget for facet columns (FacetColumns.java), inside the heap.</param>
    public static LuceneHostProcess Start(int heapMegabytes = 1024, int facetCacheMegabytes = 256)
    {
        var jars = LuceneJars();
        var psi = new ProcessStartInfo(Environment.GetEnvironmentVariable("MAGPIE_JAVA") is { Length: > 0 } java ? java : "java")
        {
            RedirectStandardInput = true,
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        // MAGPIE_JAVA_OPTS replaces the JVM options (heap, collector); the class path and main class stay.
        var jvm = Environment.GetEnvironmentVariable("MAGPIE_JAVA_OPTS") is { Length: > 0 } opts
            ? opts.Split(' ', StringSplitOptions.RemoveEmptyEntries)
            : [$"-Xmx{heapMegabytes}m", "-XX:+UseParallelGC"];
        foreach (var a in jvm.Concat([$"-Dmagpie.facetCacheMb={facetCacheMegabytes}", "-cp", string.Join(':', [HostJar(), .. jars]), "magpie.lucene.LuceneHost"]))
            psi.ArgumentList.Add(a);
        Process process;
        try { process = Process.Start(psi)!; }
        catch (System.ComponentModel.Win32Exception e)
        {
            throw new InvalidOperationException($"the indexer needs a Java 17 runtime ({psi.FileName}: {e.Message}); apt-get install openjdk-17-jre-headless or set MAGPIE_JAVA", e);
        }
        return new LuceneHostProcess(process);
    }

    /// <summary>Sends one request and returns the reader positioned after the status byte; throws <see cref="LuceneException"/> for a refused one.</summary>
    internal async Task<FrameReader> CallAsync(byte op, Action<FrameWriter> body, CancellationToken ct = default)
    {
        if (_failure is { } failed) throw new LuceneException(failed);
        var id = Interlocked.Increment(ref _nextId);
        var request = new FrameWriter().Int(0).Int(id).Byte(op);
        body(request);
        var frame = request.Written.ToArray();
        BinaryPrimitives.WriteInt32BigEndian(frame, frame.Length - 4);
        var answer = new TaskCompletionSource<byte[]>(TaskCreationOptions.RunContinuationsAsynchronously);
        _pending[id] = answer;
        try
        {
            await _writeLock.WaitAsync(ct);
            try
            {
                await _stdin.WriteAsync(frame, ct);
                await _stdin.FlushAsync(ct);
            }
            finally { _writeLock.Release(); }
        }
        catch (IOException e)
        {
            _pending.TryRemove(id, out _);
            throw new LuceneException(_failure ?? $"the Lucene host exited ({e.Message}); {Stderr()}");
        }
        byte[] response;
        using (ct.Register(() => { if (_pending.TryRemove(id, out var p)) p.TrySetCanceled(ct); }))
            response = await answer.Task;
        var reader = new FrameReader(response, 4);
        if (reader.Byte() == LuceneProtocol.Error) throw new LuceneException(System.Text.Encoding.UTF8.GetString(response, 5, response.Length - 5));
        return reader;
    }

    private void ReadResponses()
    {
        var stdout = _process.StandardOutput.BaseStream;
        var header = new byte[4];
        try
        {
            while (true)
            {
                if (!ReadExactly(stdout, header)) break;
                var length = BinaryPrimitives.ReadInt32BigEndian(header);
                var body = new byte[length];
                if (!ReadExactly(stdout, body)) break;
                var id = BinaryPrimitives.ReadInt32BigEndian(body);
                if (_pending.TryRemove(id, out var answer)) answer.TrySetResult(body);
            }
        }
        catch (Exception e) when (e is IOException or ObjectDisposedException) { }
        _process.WaitForExit(2000);
        _failure = $"the Lucene host exited{(_process.HasExited ? $" with {_process.ExitCode}" : "")}; {Stderr()}";
        foreach (var id in _pending.Keys)
            if (_pending.TryRemove(id, out var p)) p.TrySetException(new LuceneException(_failure));
    }

    private static bool ReadExactly(Stream s, byte[] buffer)
    {
        var read = 0;
        while (read < buffer.Length)
        {
            var n = s.Read(buffer, read, buffer.Length - read);
            if (n == 0) return false;
            read += n;
        }
        return true;
    }

    private string Stderr() => _stderr.IsEmpty ? "no output on stderr" : "stderr: " + string.Join(" | ", _stderr.TakeLast(5));

    /// <summary>The Lucene jars the host needs, from <c>MAGPIE_LUCENE_JARS</c> or Debian's /usr/share/java.</summary>
    private static List<string> LuceneJars()
    {
        var dir = Environment.GetEnvironmentVariable("MAGPIE_LUCENE_JARS") is { Length: > 0 } d ? d : "/usr/share/java";
        var jars = new List<string>();
        foreach (var module in new[] { "lucene-core", "lucene-analyzers-common" })
        {
            var jar = Directory.Exists(dir) ? Directory.GetFiles(dir, $"{module}-8*.jar").Order().LastOrDefault() : null;
            jars.Add(jar ?? throw new InvalidOperationException(
                $"the indexer needs Apache Lucene 8 ({module}-8*.jar not in {dir}): apt-get install liblucene8-java, or set MAGPIE_LUCENE_JARS"));
        }
        return jars;
    }

    /// <summary>The host's own jar ships inside this assembly; written once per content hash under the user's cache.</summary>
    private static string HostJar()
    {
        using var resource = Assembly.GetExecutingAssembly().GetManifestResourceStream("magpie-lucene-host.jar")
            ?? throw new InvalidOperationException("magpie-lucene-host.jar is not embedded: the indexer was built without a JDK");
        var bytes = new byte[resource.Length];
        resource.ReadExactly(bytes);
        var cache = Environment.GetEnvironmentVariable("XDG_CACHE_HOME") is { Length: > 0 } x ? x
            : Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.UserProfile), ".cache");
        var path = Path.Combine(cache, "magpie", "lucene-host", Convert.ToHexString(SHA256.HashData(bytes))[..16] + ".jar");
        if (File.Exists(path)) return path;
        // Several processes may start at once: each writes its own temp file, the rename is atomic.
        Directory.CreateDirectory(Path.GetDirectoryName(path)!);
        var tmp = $"{path}.{Guid.NewGuid():N}.tmp";
        File.WriteAllBytes(tmp, bytes);
        File.Move(tmp, path, overwrite: true);
        return path;
    }

    public async ValueTask DisposeAsync()
    {
        try { _stdin.Close(); } catch (IOException) { }
        if (!_process.WaitForExit(30_000)) _process.Kill();
        await Task.Run(() => _reader.Join(5000));
        _process.Dispose();
        _writeLock.Dispose();
    }
}
