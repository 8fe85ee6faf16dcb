using Magpie.Query.Postgres;

namespace Magpie.Tests.Postgres;

/// <summary>
/// Who keeps a pending place when silent connections run out of them: the newcomer always gets one; the oldest silent
/// connection of its address goes first, then the oldest of any; a connection whose bytes wait unread is never taken for silent.
/// </summary>
[Trait("Category", "Fast")]
public sealed class PgAdmissionTests
{
    private static PgAdmission Admission(int pending) => new(new PgOptions { MaxPendingConnections = pending, MaxConnections = 2 });

    [Fact]
    public void A_newcomer_past_the_limit_closes_the_oldest_silent_connection_of_its_address_first()
    {
        var admission = Admission(3);
        var a1 = admission.Enter("10.0.0.1", () => false);
        var b1 = admission.Enter("10.0.0.2", () => false);
        var a2 = admission.Enter("10.0.0.1", () => false);
        var b2 = admission.Enter("10.0.0.2", () => false);   // full: the oldest of 10.0.0.2 goes, not a1
        Assert.True(b1.Evicted.IsCancellationRequested);
        Assert.False(a1.Evicted.IsCancellationRequested);
        var c = admission.Enter("10.0.0.3", () => false);    // an address with nothing pending: the oldest of all
        Assert.True(a1.Evicted.IsCancellationRequested);
        Assert.False(a2.Evicted.IsCancellationRequested || b2.Evicted.IsCancellationRequested || c.Evicted.IsCancellationRequested);
        Assert.Equal(3, admission.Pendings);
    }

    [Fact]
    public void A_connection_that_spoke_is_never_taken_for_a_silent_one()
    {
        var admission = Admission(2);
        var bytesWaiting = false;
        var talker = admission.Enter("10.0.0.1", () => bytesWaiting);
        var silent = admission.Enter("10.0.0.1", () => false);
        bytesWaiting = true;                                   // its first message arrived, not read yet: it leaves the places
        var newcomer = admission.Enter("10.0.0.1", () => false);
        Assert.False(talker.Evicted.IsCancellationRequested || silent.Evicted.IsCancellationRequested);
        var another = admission.Enter("10.0.0.1", () => false);   // full again: the oldest silent one goes, never the talker
        Assert.True(silent.Evicted.IsCancellationRequested);
        Assert.False(talker.Evicted.IsCancellationRequested || newcomer.Evicted.IsCancellationRequested || another.Evicted.IsCancellationRequested);
        // Heard (read) connections leave the pending places; slots are taken at the startup message, up to MaxConnections.
        newcomer.Heard();
        Assert.True(talker.Spoke());
        Assert.True(newcomer.Spoke());
        var third = admission.Enter("10.0.0.1", () => false);
        Assert.False(third.Spoke());                           // the server is full: 53300
        admission.Release();
        var fourth = admission.Enter("10.0.0.1", () => false);
        Assert.True(fourth.Spoke());
    }
}
