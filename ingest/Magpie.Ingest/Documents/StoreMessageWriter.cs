using System.Text;
using Magpie.Contracts.Documents;

namespace Magpie.Ingest.Documents;

/// <summary>
/// Queue sinks' writes into the store in this process (<see cref="IMessageWriter"/>): messages already in the ledger are skipped,
/// the rest go in one all-or-nothing store write that also records their ids. A command the store refuses costs its message
/// only: the message is set aside with the reason and the rest is written again (nothing was written by the refused attempt).
/// </summary>
public sealed class StoreMessageWriter(DocumentStore store, int maxJsonDepth = DocumentJson.DefaultMaxDepth) : IMessageWriter
{
    // One write per ledger at a time: two sinks processes consuming one queue could otherwise both find a redelivered
    // message absent from the ledger and both apply it.
    private readonly System.Collections.Concurrent.ConcurrentDictionary<string, SemaphoreSlim> _ledgers = new(StringComparer.Ordinal);

    public async Task<IReadOnlyList<MessageOutcome>> WriteAsync(string ledger, IReadOnlyList<MessageWrites> messages, CancellationToken ct = default)
    {
        if (MessageLedgers.Problem(ledger, "the ledger name") is { } ledgerProblem) throw new ArgumentException(ledgerProblem, nameof(ledger));
        var gate = _ledgers.GetOrAdd(ledger, _ => new SemaphoreSlim(1, 1));
        await gate.WaitAsync(ct);
        try { return await WriteOnceAsync(ledger, messages, ct); }
        finally { gate.Release(); }
    }

    private async Task<IReadOnlyList<MessageOutcome>> WriteOnceAsync(string ledger, IReadOnlyList<MessageWrites> messages, CancellationToken ct)
    {
        var outcomes = new MessageOutcome?[messages.Count];
        var pending = new List<(int Message, List<WriteCommand> Commands)>();
        var seen = new HashSet<string>(StringComparer.Ordinal);   // a message sent twice in one batch (a producer's retry) counts once
        for (var i = 0; i < messages.Count; i++)
        {
            var m = messages[i];
            if (MessageLedgers.Problem(m.MessageId, "the message id") is { } idProblem) outcomes[i] = Refused(m, idProblem);
            else if ((m.Recheck && store.Applied(ledger, m.MessageId)) || (!seen.Add(m.MessageId) && m.Recheck))
                outcomes[i] = new MessageOutcome(m.MessageId, MessageWriteResult.AlreadyApplied);
            else if (Commands(m, out var reason) is { } commands) pending.Add((i, commands));
            else outcomes[i] = Refused(m, reason!);
        }
        while (pending.Count > 0)
        {
            var commands = pending.SelectMany(p => p.Commands).ToList();
            try
            {
                await store.WriteAsync(commands, atomic: true, ct, applied: new AppliedMessages(ledger, pending.Select(p => messages[p.Message].MessageId).ToList()));
                foreach (var (i, _) in pending) outcomes[i] = new MessageOutcome(messages[i].MessageId, MessageWriteResult.Applied);
                break;
            }
            catch (WriteRejectedException e)
            {
                var at = 0;
                var owner = pending.FindIndex(p => (at += p.Commands.Count) > e.Index);
                var (message, own) = pending[owner];
                var local = e.Index - (at - own.Count);
                outcomes[message] = Refused(messages[message], $"write [{local}] ({own[local].Method.ToString().ToLowerInvariant()} {own[local].Id}): {e.Outcome.Error!.Message}");
                pending.RemoveAt(owner);
            }
        }
        return outcomes.Select(o => o!).ToList();
    }

    /// <summary>The message's writes as store commands, or why one of them can't be (the same checks as <c>POST /bulk_docs</c>).</summary>
    private List<WriteCommand>? Commands(MessageWrites m, out string? reason)
    {
        reason = null;
        var commands = new List<WriteCommand>(m.Writes.Count);
        for (var w = 0; w < m.Writes.Count; w++)
        {
            var write = m.Writes[w];
            var problem = DocumentId.Validate(write.Id);
            WriteCommand? command = null;
            if (problem is null)
                switch (write.Method)
                {
                    case MessageWriteMethod.Put:
                        var body = Encoding.UTF8.GetBytes(write.Json ?? "");
                        problem = DocumentJson.ValidateObject(body, maxJsonDepth);
                        command = WriteCommand.Put(write.Id, body, parsedDepth: maxJsonDepth);
                        break;
                    case MessageWriteMethod.Patch:
                        var patch = DocumentPatcher.Parse(Encoding.UTF8.GetBytes(write.Json ?? ""), out problem, maxJsonDepth);
                        if (patch is not null) command = WriteCommand.ApplyPatch(write.Id, patch);
                        break;
                    default:
                        command = WriteCommand.Delete(write.Id);
                        break;
                }
            if (problem is not null || command is null)
            {
                reason = $"write [{w}] ({write.Method.ToString().ToLowerInvariant()} {write.Id}): {problem}";
                return null;
            }
            commands.Add(command);
        }
        return commands;
    }

    private static MessageOutcome Refused(MessageWrites m, string reason) => new(m.MessageId, MessageWriteResult.Refused, reason);
}
