using Lucene.Net.Util;
using Microsoft.Extensions.Logging;

namespace Magpie.Indexer.Lucene;

/// <summary>
/// Lucene's own account of what an index's writer does (flushes, merges, commits, deletes applied; Lucene calls it the
/// infoStream), as trace lines of the engine's log: <c>Logging__LogLevel__Magpie.Indexes.Engine=Trace</c>. Each line names the
/// index folder, Lucene's component (<c>IW</c> writer, <c>DW</c>/<c>DWPT</c> flushes, <c>CMS</c>/<c>TMP</c> merges, <c>BD</c>
/// deletes) and its message. Verbose — thousands of lines a minute under load — and what told apart a refresh waiting for the
/// writing thread from one flushing (docs/BENCHMARKS.md).
/// </summary>
internal sealed class LoggedInfoStream(ILogger log, string index) : InfoStream
{
    public override void Message(string component, string message) =>
        log.LogTrace("lucene {Index} {Component}: {Message}", index, component, message);

    public override bool IsEnabled(string component) => log.IsEnabled(LogLevel.Trace);
}
