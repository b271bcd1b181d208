package storetest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// testFleetPolicy: a journal that serves fleet policies (a store.FleetSets)
// keeps Policy.Fleet, and one scale set stays one policy's, fleet or not;
// any other refuses a fleet policy with rm.ErrInvalid, saying what it
// needs, by InsertPolicy, UpdatePolicy and ApplyPolicies alike.
func testFleetPolicy(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := NewPolicy().Name("fleet").Autoscale("home", 6).Fleet().Build()
	if _, ok := s.(store.FleetSets); !ok {
		err := s.InsertPolicy(ctx, p)
		require.ErrorIs(t, err, rm.ErrInvalid)
		assert.Contains(t, err.Error(), `policy "fleet": a fleet policy needs a fleet journal (PostgreSQL: [store] url)`)
		_, err = s.Policy(ctx, p.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "nothing was written")
		require.ErrorIs(t, s.ApplyPolicies(ctx, store.PolicyChanges{Insert: []rm.Policy{p}}), rm.ErrInvalid)
		own := mustPolicy(t, s, NewPolicy().Name("own"))
		own.Fleet = true
		require.ErrorIs(t, s.UpdatePolicy(ctx, own), rm.ErrInvalid)
		require.ErrorIs(t, s.ApplyPolicies(ctx, store.PolicyChanges{Update: []rm.Policy{own}}), rm.ErrInvalid)
		got, err := s.Policy(ctx, own.ID)
		require.NoError(t, err)
		assert.False(t, got.Fleet)
		return
	}
	require.NoError(t, s.InsertPolicy(ctx, p))
	got, err := s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, normPolicy(p), got)
	assert.True(t, got.IsOwnedBy(rm.NewHostID()), "every host serves a fleet policy")
	all, err := s.Policies(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.True(t, all[0].Fleet)

	got.Fleet = false
	require.NoError(t, s.UpdatePolicy(ctx, got))
	again, err := s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.False(t, again.Fleet, "a fleet policy made a host's")
	again.Fleet = true
	require.NoError(t, s.ApplyPolicies(ctx, store.PolicyChanges{Update: []rm.Policy{again}}))
	again, err = s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.True(t, again.Fleet, "and the fleet's again")

	err = s.InsertPolicy(ctx, NewPolicy().Name("twin").Autoscale("HOME", 1).Build())
	var taken *store.TargetTakenError
	require.ErrorAs(t, err, &taken, "a host policy cannot serve a fleet policy's scale set")
	assert.Equal(t, p.ID, taken.OtherID)
	own := mustPolicy(t, s, NewPolicy().Name("own").Autoscale("mine", 1))
	err = s.InsertPolicy(ctx, NewPolicy().Name("fleet-twin").Autoscale("mine", 1).Fleet().Build())
	require.ErrorAs(t, err, &taken, "nor a fleet policy a host policy's")
	assert.Equal(t, own.ID, taken.OtherID)
}

// FleetSetsStore is a journal that serves fleet policies.
type FleetSetsStore interface {
	store.Store
	store.FleetSets
}

// RunFleetSets is the conformance suite of store.FleetSets: every
// implementation passes it. open returns a new, empty store for one
// subtest and arranges for it to be closed when the subtest ends.
// Subtests run in parallel; some wait for short leases to expire.
func RunFleetSets(t *testing.T, open func(t *testing.T) FleetSetsStore) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s FleetSetsStore)
	}{
		{"Lease", testFleetLease},
		{"LeaseExpiry", testFleetLeaseExpiry},
		{"LeaseRelease", testFleetLeaseRelease},
		{"LeaseRace", testFleetLeaseRace},
		{"LeaseNotFleet", testFleetLeaseNotFleet},
		{"Rooms", testFleetRooms},
		{"Shares", testFleetShares},
		{"Events", testFleetEvents},
		{"Fenced", testFleetFenced},
		{"FencedRace", testFleetFencedRace},
		{"DemandInvalid", testFleetDemandInvalid},
		{"Notices", testFleetNotices},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

// fleetPolicy inserts a new fleet policy.
func fleetPolicy(t *testing.T, s store.Store) rm.Policy {
	t.Helper()
	return mustPolicy(t, s, NewPolicy().Autoscale("fleet-"+rm.NewPolicyID().String()[:8], 8).Fleet())
}

// held asserts err refuses a lease held by holder with token, and returns
// the lease it shows.
func held(t *testing.T, err error, holder rm.HostID, token int64) store.FleetLease {
	t.Helper()
	var he *store.FleetLeaseHeldError
	require.ErrorAs(t, err, &he)
	require.ErrorIs(t, err, store.ErrConflict)
	assert.Equal(t, holder, he.Lease.Holder)
	assert.Equal(t, token, he.Lease.Token)
	assert.Contains(t, err.Error(), "is held by host "+holder.String())
	return he.Lease
}

// expire waits, on this machine's clock, for the time the database says
// l's lease has left, until it says none is.
func expire(t *testing.T, s store.FleetSets, policy rm.PolicyID) {
	t.Helper()
	for {
		l, err := s.FleetLease(t.Context(), policy)
		require.NoError(t, err)
		if l.Left <= 0 {
			return
		}
		select {
		case <-time.After(l.Left):
		case <-t.Context().Done():
			t.Fatal(t.Context().Err())
		}
	}
}

// testFleetLease: a host takes a free lease with token 1 for ttl on the
// database's clock, renews it keeping its token and acquisition, and
// another host is refused, shown the lease and how long it has left.
func testFleetLease(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	a, b := rm.NewHostID(), rm.NewHostID()
	const ttl = time.Minute
	_, err := s.FleetLease(ctx, p.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "never taken")

	l, err := s.AcquireFleetLease(ctx, p.ID, a, ttl)
	require.NoError(t, err)
	assert.Equal(t, p.ID, l.Policy)
	assert.Equal(t, a, l.Holder)
	assert.Equal(t, int64(1), l.Token)
	assert.Equal(t, l.AcquiredAt, l.RenewedAt)
	assert.Equal(t, ttl, l.ExpiresAt.Sub(l.RenewedAt))
	assert.Equal(t, time.UTC, l.ExpiresAt.Location())
	assert.True(t, l.Left > 0 && l.Left <= ttl, "left %s of %s", l.Left, ttl)

	r, err := s.AcquireFleetLease(ctx, p.ID, a, ttl)
	require.NoError(t, err)
	assert.Equal(t, int64(1), r.Token, "a renewal keeps the token")
	assert.Equal(t, l.AcquiredAt, r.AcquiredAt)
	assert.True(t, r.RenewedAt.After(l.RenewedAt))
	assert.True(t, r.ExpiresAt.After(l.ExpiresAt))

	_, err = s.AcquireFleetLease(ctx, p.ID, b, ttl)
	shown := held(t, err, a, 1)
	assert.True(t, shown.Left > 0 && shown.Left <= ttl, "left %s", shown.Left)
	assert.Equal(t, r.ExpiresAt, shown.ExpiresAt)

	got, err := s.FleetLease(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, a, got.Holder)
	assert.Equal(t, r.ExpiresAt, got.ExpiresAt)
	assert.True(t, got.Left > 0 && got.Left <= ttl)

	other := fleetPolicy(t, s)
	ol, err := s.AcquireFleetLease(ctx, other.ID, b, ttl)
	require.NoError(t, err, "each policy has its own lease")
	assert.Equal(t, int64(1), ol.Token)
}

// testFleetLeaseExpiry: an expired lease is taken by the next host with a
// greater token; its old holder is then refused, and a holder that takes
// its own expired lease again gets a new token too.
func testFleetLeaseExpiry(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	a, b := rm.NewHostID(), rm.NewHostID()
	const short = 300 * time.Millisecond
	_, err := s.AcquireFleetLease(ctx, p.ID, a, short)
	require.NoError(t, err)
	_, err = s.AcquireFleetLease(ctx, p.ID, b, time.Minute)
	held(t, err, a, 1)

	expire(t, s, p.ID)
	got, err := s.FleetLease(ctx, p.ID)
	require.NoError(t, err, "an expired lease is still shown")
	assert.Equal(t, a, got.Holder)
	assert.LessOrEqual(t, got.Left, time.Duration(0))

	bl, err := s.AcquireFleetLease(ctx, p.ID, b, short)
	require.NoError(t, err, "taken over once expired")
	assert.Equal(t, b, bl.Holder)
	assert.Equal(t, int64(2), bl.Token)
	assert.Equal(t, bl.AcquiredAt, bl.RenewedAt)
	_, err = s.AcquireFleetLease(ctx, p.ID, a, short)
	held(t, err, b, 2)

	expire(t, s, p.ID)
	again, err := s.AcquireFleetLease(ctx, p.ID, b, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, int64(3), again.Token, "a lease expired is taken anew, by its holder too")
	assert.True(t, again.AcquiredAt.After(bl.AcquiredAt))
}

// testFleetLeaseRelease: a release by the holder with its token frees the
// lease at once (no lease is shown), and the next token is still greater;
// a release with another token or holder does nothing.
func testFleetLeaseRelease(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	a, b := rm.NewHostID(), rm.NewHostID()
	l, err := s.AcquireFleetLease(ctx, p.ID, a, time.Minute)
	require.NoError(t, err)

	stale := l
	stale.Token = 7
	require.NoError(t, s.ReleaseFleetLease(ctx, stale))
	notHolder := l
	notHolder.Holder = b
	require.NoError(t, s.ReleaseFleetLease(ctx, notHolder))
	got, err := s.FleetLease(ctx, p.ID)
	require.NoError(t, err, "neither released it")
	assert.Equal(t, a, got.Holder)

	require.NoError(t, s.ReleaseFleetLease(ctx, l))
	_, err = s.FleetLease(ctx, p.ID)
	require.ErrorIs(t, err, store.ErrNotFound, "released")
	require.NoError(t, s.ReleaseFleetLease(ctx, l), "twice is harmless")
	require.ErrorIs(t, s.ShareFleetDemand(ctx, l, nil, nil), store.ErrFenced, "a released lease fences its writes")

	bl, err := s.AcquireFleetLease(ctx, p.ID, b, time.Minute)
	require.NoError(t, err, "no wait for the expiry")
	assert.Equal(t, int64(2), bl.Token)
	al, err := s.AcquireFleetLease(ctx, p.ID, a, time.Minute)
	held(t, err, b, 2)
	assert.Zero(t, al)
}

// testFleetLeaseRace: of many hosts taking one free lease at once, one
// wins; every other is shown the winner's lease.
func testFleetLeaseRace(t *testing.T, s FleetSetsStore) {
	p := fleetPolicy(t, s)
	const n = 8
	hosts := make([]rm.HostID, n)
	leases := make([]store.FleetLease, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		hosts[i] = rm.NewHostID()
		wg.Go(func() {
			<-start
			leases[i], errs[i] = s.AcquireFleetLease(t.Context(), p.ID, hosts[i], time.Minute)
		})
	}
	close(start)
	wg.Wait()
	var winner rm.HostID
	for i, err := range errs {
		if err == nil {
			require.True(t, winner.IsZero(), "two winners: %s and %s", winner, hosts[i])
			winner = hosts[i]
			assert.Equal(t, int64(1), leases[i].Token)
		}
	}
	require.False(t, winner.IsZero(), "a winner: %v", errs)
	for i, err := range errs {
		if hosts[i] != winner {
			held(t, err, winner, 1)
		}
	}
}

// testFleetLeaseNotFleet: only a fleet policy in force has a lease and
// rooms; bad arguments are refused with rm.ErrInvalid.
func testFleetLeaseNotFleet(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	host := rm.NewHostID()
	own := mustPolicy(t, s, NewPolicy())
	removed := fleetPolicy(t, s)
	require.NoError(t, s.DeletePolicy(ctx, removed.ID))
	for name, id := range map[string]rm.PolicyID{"host's": own.ID, "removed": removed.ID, "unknown": rm.NewPolicyID()} {
		_, err := s.AcquireFleetLease(ctx, id, host, time.Minute)
		require.ErrorIs(t, err, store.ErrNotFound, name)
		assert.Contains(t, err.Error(), "no fleet policy in force has this id", name)
		err = s.PublishFleetRoom(ctx, store.FleetRoom{Policy: id, Host: host, Capacity: 1})
		require.ErrorIs(t, err, store.ErrNotFound, name)
	}
	p := fleetPolicy(t, s)
	for name, ttl := range map[string]time.Duration{"zero ttl": 0, "negative ttl": -time.Second} {
		_, err := s.AcquireFleetLease(ctx, p.ID, host, ttl)
		require.ErrorIs(t, err, rm.ErrInvalid, name)
	}
	_, err := s.AcquireFleetLease(ctx, p.ID, rm.HostID{}, time.Minute)
	require.ErrorIs(t, err, rm.ErrInvalid, "no host")
	_, err = s.AcquireFleetLease(ctx, rm.PolicyID{}, host, time.Minute)
	require.ErrorIs(t, err, rm.ErrInvalid, "no policy")
}

// testFleetRooms: each host's room replaces its last, stamped with the
// database's clock and listed by host with its age; a bad room is
// refused.
func testFleetRooms(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	rooms, err := s.FleetRooms(ctx, p.ID)
	require.NoError(t, err)
	assert.Empty(t, rooms)

	a, b := rm.NewHostID(), rm.NewHostID()
	if b.String() < a.String() {
		a, b = b, a
	}
	before := time.Now()
	require.NoError(t, s.PublishFleetRoom(ctx, store.FleetRoom{Policy: p.ID, Host: b, Capacity: 3, Busy: 1, Idle: 1, FreeMemory: 6 << 30}))
	require.NoError(t, s.PublishFleetRoom(ctx, store.FleetRoom{Policy: p.ID, Host: a, Capacity: 2, FreeMemory: 1<<63 + 5}))
	require.NoError(t, s.PublishFleetRoom(ctx, store.FleetRoom{Policy: p.ID, Host: b, Capacity: 4, Busy: 2, FreeMemory: 5 << 30, WarmFree: 2}))
	other := fleetPolicy(t, s)
	require.NoError(t, s.PublishFleetRoom(ctx, store.FleetRoom{Policy: other.ID, Host: a, Capacity: 9}))

	rooms, err = s.FleetRooms(ctx, p.ID)
	require.NoError(t, err)
	require.Len(t, rooms, 2, "one room a host")
	for i, want := range []store.FleetRoom{
		{Policy: p.ID, Host: a, Capacity: 2, FreeMemory: 1<<63 + 5},
		{Policy: p.ID, Host: b, Capacity: 4, Busy: 2, FreeMemory: 5 << 30, WarmFree: 2},
	} {
		got := rooms[i]
		assert.False(t, got.UpdatedAt.IsZero())
		assert.Equal(t, time.UTC, got.UpdatedAt.Location())
		assert.WithinDuration(t, before, got.UpdatedAt, time.Minute, "the database's clock is this machine's here")
		assert.GreaterOrEqual(t, got.Age, time.Duration(0))
		assert.Less(t, got.Age, time.Minute)
		got.UpdatedAt, got.Age = time.Time{}, 0
		assert.Equal(t, want, got)
	}

	for name, r := range map[string]store.FleetRoom{
		"no host":           {Policy: p.ID, Capacity: 1},
		"no policy":         {Host: a, Capacity: 1},
		"negative capacity": {Policy: p.ID, Host: a, Capacity: -1},
		"negative busy":     {Policy: p.ID, Host: a, Busy: -1},
	} {
		require.ErrorIs(t, s.PublishFleetRoom(ctx, r), rm.ErrInvalid, name)
	}
}

// testFleetShares: a share replaces every share of the policy (a host not
// named has none: the zero share), under the lease's token, placements
// and all.
func testFleetShares(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	holder, a, b, c := rm.NewHostID(), rm.NewHostID(), rm.NewHostID(), rm.NewHostID()
	l, err := s.AcquireFleetLease(ctx, p.ID, holder, time.Minute)
	require.NoError(t, err)
	queued := Now().Add(-time.Minute)
	job := rm.PendingJob{ID: "job-1", Number: 42, RunID: 7, Repository: "acme/app", Workflow: "ci", Name: "build",
		Labels: []string{"home", "linux"}, Assigned: true, QueuedAt: queued}
	first := []store.FleetShare{
		{Host: a, Wanted: 2, Spares: 1, Placed: []store.FleetPlacement{{Job: job, Why: "fits 1.2GiB free of 3.0GiB expected"}}},
		{Policy: p.ID, Host: b, Wanted: 1},
	}
	require.NoError(t, s.ShareFleetDemand(ctx, l, first, nil))
	got, _, err := s.TakeFleetShare(ctx, p.ID, a)
	require.NoError(t, err)
	assert.Equal(t, p.ID, got.Policy)
	assert.Equal(t, a, got.Host)
	assert.Equal(t, 2, got.Wanted)
	assert.Equal(t, 1, got.Spares)
	assert.Equal(t, l.Token, got.Token)
	assert.False(t, got.UpdatedAt.IsZero())
	require.Len(t, got.Placed, 1)
	assert.Equal(t, job, got.Placed[0].Job, "the placed job comes back as written")
	assert.Equal(t, "fits 1.2GiB free of 3.0GiB expected", got.Placed[0].Why)

	second := []store.FleetShare{{Host: b, Wanted: 3, Spares: 2}, {Host: c}}
	require.NoError(t, s.ShareFleetDemand(ctx, l, second, nil))
	all, err := s.FleetShares(ctx, p.ID)
	require.NoError(t, err)
	hosts := map[rm.HostID]store.FleetShare{}
	for _, sh := range all {
		hosts[sh.Host] = sh
	}
	require.Len(t, hosts, 2, "a's share is gone: %v", all)
	assert.Equal(t, 3, hosts[b].Wanted)
	assert.Equal(t, 2, hosts[b].Spares)
	assert.Nil(t, hosts[b].Placed)
	assert.Contains(t, hosts, c)
	assert.True(t, all[0].Host.String() < all[1].Host.String(), "listed by host")

	none, events, err := s.TakeFleetShare(ctx, p.ID, a)
	require.NoError(t, err)
	assert.Equal(t, store.FleetShare{Policy: p.ID, Host: a}, none, "no share: the zero share")
	assert.Nil(t, events)

	require.NoError(t, s.ShareFleetDemand(ctx, l, nil, nil))
	all, err = s.FleetShares(ctx, p.ID)
	require.NoError(t, err)
	assert.Empty(t, all, "no shares: none left")
}

// testFleetEvents: the events of a share go to the hosts they name, are
// taken once, oldest first, and come back as written (times, labels).
func testFleetEvents(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	holder, a, b := rm.NewHostID(), rm.NewHostID(), rm.NewHostID()
	l, err := s.AcquireFleetLease(ctx, p.ID, holder, time.Minute)
	require.NoError(t, err)
	at := time.Date(2026, 12, 3, 14, 0, 0, 123456789, time.UTC)
	event := func(kind rm.JobEventKind, job string, n int) rm.JobEvent {
		return rm.JobEvent{Kind: kind, JobID: job, JobNumber: int64(n), RunID: 9, RunnerID: int64(100 + n),
			RunnerName: fmt.Sprintf("rm-%d", n), Workflow: "ci", DisplayName: "build " + job,
			Labels: []string{"home", "x64"}, At: at.Add(time.Duration(n) * time.Second), QueuedAt: at.Add(-time.Minute),
			AssignedAt: at.Add(-time.Second)}
	}
	done := event(rm.JobCompleted, "j1", 1)
	done.Result = "succeeded"
	done.RunnerAssignedAt, done.FinishedAt = at, at.Add(time.Hour)
	forA := []rm.JobEvent{event(rm.JobStarted, "j1", 1), done, event(rm.JobStarted, "j2", 2)}
	forB := []rm.JobEvent{event(rm.JobStarted, "j3", 3)}
	require.NoError(t, s.ShareFleetDemand(ctx, l, []store.FleetShare{{Host: a, Wanted: 1}}, []store.FleetEvent{
		{Host: a, Event: forA[0]}, {Host: b, Event: forB[0]}, {Host: a, Event: forA[1]},
	}))
	require.NoError(t, s.ShareFleetDemand(ctx, l, []store.FleetShare{{Host: a, Wanted: 1}}, []store.FleetEvent{
		{Host: a, Event: forA[2]},
	}))

	sh, got, err := s.TakeFleetShare(ctx, p.ID, a)
	require.NoError(t, err)
	assert.Equal(t, 1, sh.Wanted)
	assert.Equal(t, forA, got, "a's events, oldest first, as written")
	_, got, err = s.TakeFleetShare(ctx, p.ID, a)
	require.NoError(t, err)
	assert.Empty(t, got, "taken once")
	sh, got, err = s.TakeFleetShare(ctx, p.ID, b)
	require.NoError(t, err)
	assert.Equal(t, forB, got, "a host without a share gets its events")
	assert.Zero(t, sh.Wanted)
}

// testFleetFenced: a write under a lease its writer no longer holds (taken
// over, expired, another token) is refused with ErrFenced, and nothing of
// it is written.
func testFleetFenced(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	a, b, worker := rm.NewHostID(), rm.NewHostID(), rm.NewHostID()
	const short = 300 * time.Millisecond
	al, err := s.AcquireFleetLease(ctx, p.ID, a, short)
	require.NoError(t, err)
	require.NoError(t, s.ShareFleetDemand(ctx, al, []store.FleetShare{{Host: worker, Wanted: 1}}, nil))
	ev := store.FleetEvent{Host: worker, Event: rm.JobEvent{Kind: rm.JobStarted, JobID: "late"}}
	wrong := al
	wrong.Token++
	require.ErrorIs(t, s.ShareFleetDemand(ctx, wrong, nil, []store.FleetEvent{ev}), store.ErrFenced, "another token")
	wrong = al
	wrong.Holder = b
	require.ErrorIs(t, s.ShareFleetDemand(ctx, wrong, nil, []store.FleetEvent{ev}), store.ErrFenced, "another holder")

	expire(t, s, p.ID)
	err = s.ShareFleetDemand(ctx, al, []store.FleetShare{{Host: worker, Wanted: 5}}, []store.FleetEvent{ev})
	require.ErrorIs(t, err, store.ErrFenced, "expired, not yet taken")
	assert.Contains(t, err.Error(), "nothing was written")

	bl, err := s.AcquireFleetLease(ctx, p.ID, b, time.Minute)
	require.NoError(t, err)
	require.NoError(t, s.ShareFleetDemand(ctx, bl, []store.FleetShare{{Host: worker, Wanted: 2}}, nil))
	require.ErrorIs(t, s.ShareFleetDemand(ctx, al, []store.FleetShare{{Host: worker, Wanted: 5}}, []store.FleetEvent{ev}),
		store.ErrFenced, "taken over")

	sh, events, err := s.TakeFleetShare(ctx, p.ID, worker)
	require.NoError(t, err)
	assert.Equal(t, 2, sh.Wanted, "the new holder's share stands")
	assert.Equal(t, bl.Token, sh.Token)
	assert.Empty(t, events, "no fenced event was queued")
}

// testFleetFencedRace: a holder sharing over and over while its lease
// expires and another host takes it is fenced from the takeover on: the
// new holder's share, written after its take, is never overwritten.
func testFleetFencedRace(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	a, b, worker := rm.NewHostID(), rm.NewHostID(), rm.NewHostID()
	al, err := s.AcquireFleetLease(ctx, p.ID, a, 300*time.Millisecond)
	require.NoError(t, err)
	var (
		wg     sync.WaitGroup
		shared int
		last   error
	)
	wg.Go(func() {
		for i := 1; ; i++ {
			last = s.ShareFleetDemand(ctx, al, []store.FleetShare{{Host: worker, Wanted: 1}},
				[]store.FleetEvent{{Host: worker, Event: rm.JobEvent{Kind: rm.JobStarted, JobID: fmt.Sprint(i)}}})
			if last != nil {
				return
			}
			shared++
		}
	})
	var bl store.FleetLease
	for {
		bl, err = s.AcquireFleetLease(ctx, p.ID, b, time.Minute)
		if err == nil {
			break
		}
		shown := held(t, err, a, 1)
		select {
		case <-time.After(max(shown.Left, time.Millisecond)):
		case <-ctx.Done():
			t.Fatal(ctx.Err())
		}
	}
	require.NoError(t, s.ShareFleetDemand(ctx, bl, []store.FleetShare{{Host: worker, Wanted: 2}}, nil))
	wg.Wait()
	require.ErrorIs(t, last, store.ErrFenced)
	assert.Positive(t, shared, "the old holder shared before its lease expired")

	sh, events, err := s.TakeFleetShare(ctx, p.ID, worker)
	require.NoError(t, err)
	assert.Equal(t, bl.Token, sh.Token, "the new holder's share stands")
	assert.Equal(t, 2, sh.Wanted)
	require.Len(t, events, shared, "one event a share written, none fenced")
	for i, e := range events {
		assert.Equal(t, fmt.Sprint(i+1), e.JobID, "in order")
	}
}

// testFleetDemandInvalid: a share the holder cannot mean is refused with
// rm.ErrInvalid before anything is written.
func testFleetDemandInvalid(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	holder, a := rm.NewHostID(), rm.NewHostID()
	l, err := s.AcquireFleetLease(ctx, p.ID, holder, time.Minute)
	require.NoError(t, err)
	for name, c := range map[string]struct {
		l      store.FleetLease
		shares []store.FleetShare
		events []store.FleetEvent
	}{
		"no lease":       {l: store.FleetLease{}},
		"no token":       {l: store.FleetLease{Policy: p.ID, Holder: holder}},
		"two shares":     {l: l, shares: []store.FleetShare{{Host: a, Wanted: 1}, {Host: a, Wanted: 2}}},
		"no host":        {l: l, shares: []store.FleetShare{{Wanted: 1}}},
		"another policy": {l: l, shares: []store.FleetShare{{Policy: rm.NewPolicyID(), Host: a}}},
		"negative":       {l: l, shares: []store.FleetShare{{Host: a, Wanted: -1}}},
		"event, no host": {l: l, events: []store.FleetEvent{{Event: rm.JobEvent{Kind: rm.JobStarted}}}},
	} {
		require.ErrorIs(t, s.ShareFleetDemand(ctx, c.l, c.shares, c.events), rm.ErrInvalid, name)
	}
	all, err := s.FleetShares(ctx, p.ID)
	require.NoError(t, err)
	assert.Empty(t, all)
}

// testFleetNotices: a listener hears each new holder, release, room
// change and share, in order, and neither a renewal nor a room published
// again unchanged; it ends (its channel closed) with its context.
func testFleetNotices(t *testing.T, s FleetSetsStore) {
	ctx := t.Context()
	p := fleetPolicy(t, s)
	a, b := rm.NewHostID(), rm.NewHostID()
	lctx, stop := context.WithCancel(ctx)
	notices, err := s.ListenFleet(lctx)
	require.NoError(t, err)
	next := func(t *testing.T, want store.FleetNotice) {
		t.Helper()
		select {
		case got, ok := <-notices:
			require.True(t, ok, "the listener ended")
			assert.Equal(t, want, got)
		case <-time.After(30 * time.Second):
			t.Fatalf("no notice; want %+v", want)
		}
	}

	l, err := s.AcquireFleetLease(ctx, p.ID, a, time.Minute)
	require.NoError(t, err)
	next(t, store.FleetNotice{Kind: store.FleetLeaseChanged, Policy: p.ID, Host: a})
	_, err = s.AcquireFleetLease(ctx, p.ID, a, time.Minute) // a renewal: no notice
	require.NoError(t, err)
	_, err = s.AcquireFleetLease(ctx, p.ID, b, time.Minute) // refused: no notice
	require.Error(t, err)
	room := store.FleetRoom{Policy: p.ID, Host: b, Capacity: 2, FreeMemory: 1 << 30}
	require.NoError(t, s.PublishFleetRoom(ctx, room))
	next(t, store.FleetNotice{Kind: store.FleetRoomChanged, Policy: p.ID, Host: b})
	room.FreeMemory = 2 << 30 // memory alone: recorded, not announced
	require.NoError(t, s.PublishFleetRoom(ctx, room))
	room.Busy = 1
	require.NoError(t, s.PublishFleetRoom(ctx, room))
	next(t, store.FleetNotice{Kind: store.FleetRoomChanged, Policy: p.ID, Host: b})
	require.NoError(t, s.ShareFleetDemand(ctx, l, []store.FleetShare{{Host: b, Wanted: 1}}, nil))
	next(t, store.FleetNotice{Kind: store.FleetShareChanged, Policy: p.ID, Host: a})
	require.NoError(t, s.ReleaseFleetLease(ctx, l))
	next(t, store.FleetNotice{Kind: store.FleetLeaseChanged, Policy: p.ID, Host: a})

	stop()
	for range notices { // drained and closed
	}
}
