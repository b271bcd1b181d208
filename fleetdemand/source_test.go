package fleetdemand_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/fleetdemand"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// short is a source's figures for a test: a lease of 4 s, shorter than
// the default 6 s but with the same shape: renewed every 2 s, and a holder
// cut from the journal stops 1 s (TTL/4) before the database would let
// another host take it. A lease of 600 ms left 150 ms for that and for
// each renewal's round trip, which a loaded machine can take.
func short() fleetdemand.Config {
	return fleetdemand.Config{TTL: 4 * time.Second, Resync: time.Minute, Stale: time.Minute, HandBack: time.Minute}
}

// neverTwo asserts that no two sessions ever watched at once: the
// sessions count each other, so no instant is missed between samples.
func (f *fleet) neverTwo() {
	f.t.Helper()
	assert.Zero(f.t, f.over.Load(), "two hosts watched the fleet's session at once")
}

// TestSourceOneHolder: of three hosts, one holds the session; it tells
// GitHub the sum of the rooms (at most max), and every host's loop gets
// its share of the demand the session reports.
func TestSourceOneHolder(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 5)
	hosts := []*host{
		f.addHost(short(), rm.Room{Capacity: 2}),
		f.addHost(short(), rm.Room{Capacity: 2}),
		f.addHost(short(), rm.Room{Capacity: 3}),
	}
	h := f.awaitHolder(hosts...)
	require.Eventually(t, func() bool { return h.sess.Max() == 5 }, wait, 5*time.Millisecond, "the holder tells GitHub the rooms' sum, at most max")

	require.True(t, h.sess.Feed(rm.Demand{Wanted: 4, At: time.Now()}))
	got := map[rm.HostID]int{}
	require.Eventually(t, func() bool {
		total := 0
		for _, o := range hosts {
			d, ok := o.last()
			if !ok {
				return false
			}
			got[o.id] = d.Wanted
			total += d.Wanted
			if !d.SparesShared || !d.PendingListed {
				return false
			}
		}
		return total == 4
	}, wait, 5*time.Millisecond, "every host gets its share")
	for _, o := range hosts {
		assert.LessOrEqual(t, got[o.id], 2, "no host is given more than a share of the load")
		assert.GreaterOrEqual(t, got[o.id], 1, "each host is given some of 4 jobs over 7 slots")
	}
	assert.Never(t, func() bool { return f.holder(hosts...) != h }, time.Second, 5*time.Millisecond, "the hold goes on: no other host holds")
	f.neverTwo()
}

// TestSourceKilledHolder: a holder whose watch ends without Close (a
// kill) leaves the lease to expire; another host takes it at its first
// try after the expiry it was told of, under a greater token, and the old
// session has stopped. It asserts what the waiting host did, not how long
// it took, so that a loaded machine does not fail it.
func TestSourceKilledHolder(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 4)
	a, b := f.addHost(short(), rm.Room{Capacity: 2}), f.addHost(short(), rm.Room{Capacity: 2})
	old := f.awaitHolder(a, b)
	other := map[*host]*host{a: b, b: a}[old]
	before := f.lease(other.st)
	old.kill()
	killed := time.Now()
	assert.False(t, old.sess.Watching(), "the killed host's session stopped")
	assert.Same(t, other, f.awaitHolder(a, b))
	after := f.lease(other.st)
	assert.Equal(t, other.id, after.Holder)
	assert.Greater(t, after.Token, before.Token)

	// The waiting host sleeps until the lease it was refused would expire
	// and then takes it: between the kill and the take, at most one more
	// refusal (its last one may predate the holder's last renewal), and
	// the take asked no sooner than the last refusal's expiry.
	prev, tries := other.sets.triesAskedAfter(killed)
	require.NotEmpty(t, tries)
	took := tries[len(tries)-1]
	require.True(t, took.took, "the last try took the lease: %+v", took)
	assert.Equal(t, after.Token, took.lease.Token)
	assert.LessOrEqual(t, len(tries), 2, "no polling while the lease runs out: %+v", tries)
	for _, tr := range tries[:len(tries)-1] {
		assert.True(t, tr.held, "every try before the take was refused, the lease held: %+v", tr)
		prev = &tr
	}
	require.NotNil(t, prev, "a refusal told the waiting host when the lease would expire")
	assert.False(t, took.asked.Before(prev.answered.Add(prev.lease.Left)),
		"it asked again once the refused lease would have expired (asked %s, refused %s with %s left)",
		took.asked.Format(time.StampMicro), prev.answered.Format(time.StampMicro), prev.lease.Left)
	t.Logf("taken over %s after the kill, %d tries", took.answered.Sub(killed).Round(time.Millisecond), len(tries))
	f.neverTwo()
}

// TestSourceCutHolder: a holder cut from the journal but alive stops its
// session before another host can take the lease (the database's expiry),
// and a share written under its old lease later is fenced. The order is
// the margin's (TTL/4, 1 s here), far above a loaded machine's delays.
func TestSourceCutHolder(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 4)
	a, b := f.addHost(short(), rm.Room{Capacity: 2}), f.addHost(short(), rm.Room{Capacity: 2})
	old := f.awaitHolder(a, b)
	other := map[*host]*host{a: b, b: a}[old]
	oldLease := f.lease(other.st)
	old.cut.Store(true)
	require.Eventually(t, func() bool { return f.lease(other.st).Holder == other.id }, wait, 5*time.Millisecond, "the other host takes the lease")
	newLease := f.lease(other.st)
	require.Greater(t, newLease.Token, oldLease.Token)
	var tookAt time.Time
	require.Eventually(t, func() bool {
		var ok bool
		tookAt, ok = other.sets.firstTake(newLease.Token)
		return ok
	}, wait, 5*time.Millisecond, "the take's answer came")
	require.Eventually(t, func() bool { return !old.sess.Watching() }, wait, 5*time.Millisecond)
	old.sess.mu.Lock()
	stopped := old.sess.stoppedAt
	old.sess.mu.Unlock()
	assert.True(t, stopped.Before(tookAt), "the cut holder stopped (%s) before the lease was taken (%s)", stopped.Format(time.StampMicro), tookAt.Format(time.StampMicro))
	t.Logf("the cut holder stopped %s before the lease was taken", tookAt.Sub(stopped).Round(time.Millisecond))
	f.neverTwo()

	// Back on the journal, its old lease writes nothing.
	old.cut.Store(false)
	err := old.st.ShareFleetDemand(t.Context(), oldLease, []store.FleetShare{{Host: old.id, Wanted: 2}}, nil)
	require.ErrorIs(t, err, store.ErrFenced)
	assert.Same(t, other, f.awaitHolder(a, b), "the new holder keeps it")
}

// TestSourceEventsRouted: a job event the holder's session reports goes
// to the host whose runner it names, once.
func TestSourceEventsRouted(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 4)
	a, b := f.addHost(short(), rm.Room{Capacity: 2}), f.addHost(short(), rm.Room{Capacity: 2})
	h := f.awaitHolder(a, b)
	to := map[*host]*host{a: b, b: a}[h]
	first := rm.JobEvent{Kind: rm.JobStarted, JobID: "j1", RunnerName: rm.RunnerName(to.id, rm.NewAttemptID())}
	require.True(t, h.sess.Feed(rm.Demand{Wanted: 1, Events: []rm.JobEvent{first}, At: time.Now()}))
	require.Eventually(t, func() bool { return len(to.events()) == 1 }, wait, 5*time.Millisecond, "the event reaches its runner's host")
	assert.Equal(t, first, to.events()[0])

	second := rm.JobEvent{Kind: rm.JobCompleted, JobID: "j1", RunnerName: first.RunnerName, Result: "succeeded"}
	require.True(t, h.sess.Feed(rm.Demand{Wanted: 0, Events: []rm.JobEvent{second}, At: time.Now()}))
	require.Eventually(t, func() bool { return len(to.events()) >= 2 }, wait, 5*time.Millisecond)
	assert.Equal(t, []rm.JobEvent{first, second}, to.events(), "each event once, in order")
	assert.Empty(t, h.events(), "the holder's own loop got none of them")
}

// TestSourceClose: a holder's Close, after its watch ended, gives the
// lease up at once (the next host does not wait for it to expire) and
// publishes that its host takes nothing more.
func TestSourceClose(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 4)
	long := short()
	long.TTL = 30 * time.Second
	a, b := f.addHost(long, rm.Room{Capacity: 2, Busy: 1}), f.addHost(long, rm.Room{Capacity: 2})
	old := f.awaitHolder(a, b)
	other := map[*host]*host{a: b, b: a}[old]
	old.kill()
	closed := time.Now()
	require.NoError(t, old.src.Close(t.Context()))
	assert.Same(t, other, f.awaitHolder(a, b))
	assert.Less(t, time.Since(closed), 10*time.Second, "taken at once, not after the lease's 30 s")
	rooms, err := other.st.FleetRooms(t.Context(), f.policy.ID)
	require.NoError(t, err)
	for _, r := range rooms {
		if r.Host == old.id {
			assert.Zero(t, r.Capacity, "the closed host takes nothing more")
		}
	}
	f.neverTwo()
}

// TestSourceListenerLost: when the database restarts, every listener is
// lost; the hosts listen again and read their shares, so a share written
// after arrives without the resync's minute.
func TestSourceListenerLost(t *testing.T) {
	srv := pgtest.New(t)
	f := newFleet(t, srv.URL(srv.CreateDatabase(t)), 4)
	cfg := short()
	cfg.TTL = 3 * time.Second
	a, b := f.addHost(cfg, rm.Room{Capacity: 2}), f.addHost(cfg, rm.Room{Capacity: 2})
	f.awaitHolder(a, b)
	require.NoError(t, srv.Stop())
	require.NoError(t, srv.Start())
	var h *host
	require.Eventually(t, func() bool {
		if h = f.holder(a, b); h == nil {
			return false
		}
		h.sess.Feed(rm.Demand{Wanted: 4, At: time.Now()})
		da, oka := a.last()
		db, okb := b.last()
		return oka && okb && da.Wanted == 2 && db.Wanted == 2
	}, wait, 100*time.Millisecond, "both hosts read their shares after the restart")
	f.neverTwo()
}

// TestSourceHandBack: a host that does not start the jobs placed on it
// (its loop publishes no new room) has them placed elsewhere after
// HandBack, and nothing more until it publishes again.
func TestSourceHandBack(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 8)
	cfg := short()
	cfg.TTL, cfg.HandBack = 3*time.Second, 1500*time.Millisecond
	a, b := f.addServing(cfg, rm.Room{Capacity: 2}), f.addServing(cfg, rm.Room{Capacity: 2})
	h := f.awaitHolder(a, b)
	stuck := f.addHost(cfg, rm.Room{Capacity: 2})
	require.Eventually(t, func() bool { return h.sess.Max() == 6 }, wait, 5*time.Millisecond)

	jobs := []rm.PendingJob{{ID: "j1", Assigned: true}, {ID: "j2", Assigned: true}, {ID: "j3", Assigned: true}}
	fed := time.Now()
	require.True(t, h.sess.Feed(rm.Demand{Wanted: 3, Pending: jobs, PendingListed: true, At: fed}))
	require.Eventually(t, func() bool { d, ok := stuck.last(); return ok && d.Wanted == 1 }, wait, 5*time.Millisecond, "a job is placed on the stuck host")

	placed := func(o *host) int { d, _ := o.last(); return d.Wanted }
	require.Eventually(t, func() bool { return placed(stuck) == 0 && placed(a)+placed(b) == 3 }, wait, 5*time.Millisecond, "its job is placed elsewhere")
	assert.GreaterOrEqual(t, time.Since(fed), cfg.HandBack, "not before HandBack")
	assert.Equal(t, 4, h.sess.Max(), "it counts as gone: only its busy jobs count")
	d, _ := stuck.last()
	assert.Empty(t, d.Pending)

	// Heard from again (a new room), it counts again.
	stuck.src.ObserveRoom(rm.Room{Capacity: 3})
	require.Eventually(t, func() bool { return h.sess.Max() == 7 }, wait, 5*time.Millisecond, "published again, it is given room again")
	f.neverTwo()
}

// TestSourceGoneHostsJobsEnd: the jobs a host gone quiet was running
// count only while GitHub says they run. Its last room stands in the
// journal (a host cut from it publishes nothing new), and counted at
// that room it would hold the fleet's jobs from the live hosts until it
// came back.
func TestSourceGoneHostsJobsEnd(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 3)
	gone := f.addHost(short(), rm.Room{Capacity: 2, Busy: 2})
	f.awaitHolder(gone)
	live := f.addHost(short(), rm.Room{Capacity: 2})
	gone.kill() // its room (2 busy) stays; the next holder suspects it
	require.Same(t, live, f.awaitHolder(gone, live))

	require.True(t, live.sess.Feed(rm.Demand{Wanted: 3, Running: 2, RunningCounted: true, At: time.Now()}))
	require.Eventually(t, func() bool { d, _ := live.last(); return d.Wanted == 1 }, wait, 5*time.Millisecond,
		"the gone host's 2 jobs still run: the live host is given the one waiting")

	// Its runners finished their jobs; two new ones wait.
	require.True(t, live.sess.Feed(rm.Demand{Wanted: 2, Running: 0, RunningCounted: true, At: time.Now()}))
	require.Eventually(t, func() bool { d, _ := live.last(); return d.Wanted == 2 }, wait, 5*time.Millisecond,
		"the jobs the gone host ran are over: the live host is given the two waiting")
	f.neverTwo()
}

// TestSourceHolderReadsItsOwnShare: a holder that hears no notice (its
// listener is down, as after an outage, listening again with backoff)
// still serves the share it wrote for itself at once, not at the resync;
// otherwise, alone, it would hand its own jobs back and serve nothing.
func TestSourceHolderReadsItsOwnShare(t *testing.T) {
	f := newFleet(t, pgtest.Start(t), 2)
	h := f.addDeaf(short(), rm.Room{Capacity: 2})
	f.awaitHolder(h)
	require.Eventually(t, func() bool {
		rooms, err := h.st.FleetRooms(t.Context(), f.policy.ID)
		return err == nil && len(rooms) == 1 && rooms[0].Capacity == 2
	}, wait, 5*time.Millisecond, "its room is published (a demand's share reads the rooms)")
	require.True(t, h.sess.Feed(rm.Demand{Wanted: 2, At: time.Now()}))
	require.Eventually(t, func() bool { d, _ := h.last(); return d.Wanted == 2 }, wait, 5*time.Millisecond,
		"the holder's loop is given its own share without a notice (resync: a minute)")
	f.neverTwo()
}
