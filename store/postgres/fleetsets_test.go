package postgres_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

var _ store.FleetSets = (*postgres.Store)(nil)

// fleetPolicy inserts a new fleet policy.
func fleetPolicy(t *testing.T, s store.Store) rm.Policy {
	t.Helper()
	p := storetest.NewPolicy().Autoscale("fleet-"+rm.NewPolicyID().String()[:8], 4).Fleet().Build()
	require.NoError(t, s.InsertPolicy(t.Context(), p))
	return p
}

// nextNotice is the next notice, or a failure after a while.
func nextNotice(t *testing.T, ch <-chan store.FleetNotice) store.FleetNotice {
	t.Helper()
	select {
	case n, ok := <-ch:
		require.True(t, ok, "the listener ended")
		return n
	case <-time.After(30 * time.Second):
		t.Fatal("no notice in 30 s")
		return store.FleetNotice{}
	}
}

// closed waits for a listener's channel to close, dropping what it still
// delivers.
func closed(t *testing.T, ch <-chan store.FleetNotice, why string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case _, ok := <-ch:
			if !ok {
				return
			}
		case <-timeout:
			t.Fatalf("the listener did not end: %s", why)
		}
	}
}

// TestFleetListenAcrossStores: what one host's store changes, another
// host's store (a second pool over the database) hears.
func TestFleetListenAcrossStores(t *testing.T) {
	u := pgtest.Start(t)
	here, err := open(t, u)
	require.NoError(t, err)
	there, err := open(t, u)
	require.NoError(t, err)
	p := fleetPolicy(t, here)
	notices, err := here.ListenFleet(t.Context())
	require.NoError(t, err)

	h := rm.NewHostID()
	l, err := there.AcquireFleetLease(t.Context(), p.ID, h, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, store.FleetNotice{Kind: store.FleetLeaseChanged, Policy: p.ID, Host: h}, nextNotice(t, notices))
	require.NoError(t, there.PublishFleetRoom(t.Context(), store.FleetRoom{Policy: p.ID, Host: h, Capacity: 1}))
	assert.Equal(t, store.FleetNotice{Kind: store.FleetRoomChanged, Policy: p.ID, Host: h}, nextNotice(t, notices))
	require.NoError(t, there.ShareFleetDemand(t.Context(), l, []store.FleetShare{{Host: h, Wanted: 1}}, nil))
	assert.Equal(t, store.FleetNotice{Kind: store.FleetShareChanged, Policy: p.ID, Host: h}, nextNotice(t, notices))
}

// TestFleetListenServerRestart: a restart of the server ends the
// listener (its channel closes); once the server is back, the store
// listens and serves again.
func TestFleetListenServerRestart(t *testing.T) {
	srv := pgtest.New(t)
	u := srv.URL(srv.CreateDatabase(t))
	s, err := open(t, u)
	require.NoError(t, err)
	p := fleetPolicy(t, s)
	notices, err := s.ListenFleet(t.Context())
	require.NoError(t, err)

	require.NoError(t, srv.Stop())
	closed(t, notices, "the server stopped")
	require.NoError(t, srv.Start())

	notices, err = s.ListenFleet(t.Context())
	require.NoError(t, err, "listening again once the server is back")
	h := rm.NewHostID()
	_, err = s.AcquireFleetLease(t.Context(), p.ID, h, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, store.FleetNotice{Kind: store.FleetLeaseChanged, Policy: p.ID, Host: h}, nextNotice(t, notices))
}

// TestFleetListenEnds: a listener's connection is closed when it ends,
// by its context or the store's Close (which does not wait for the
// caller's context), and a closed store listens no more.
func TestFleetListenEnds(t *testing.T) {
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	listening := func() int {
		return count(t, u, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query LIKE 'LISTEN%'`)
	}

	ctx, stop := context.WithCancel(t.Context())
	notices, err := s.ListenFleet(ctx)
	require.NoError(t, err)
	require.Equal(t, 1, listening())
	stop()
	closed(t, notices, "its context ended")
	require.Eventually(t, func() bool { return listening() == 0 }, 10*time.Second, 10*time.Millisecond,
		"its connection is closed, not back in the pool")

	notices, err = s.ListenFleet(t.Context())
	require.NoError(t, err)
	done := make(chan struct{})
	go func() { defer close(done); _ = s.Close() }()
	closed(t, notices, "the store closed")
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("Close waits for a listener")
	}
	_, err = s.ListenFleet(t.Context())
	require.ErrorContains(t, err, "the store is closed")
	require.Eventually(t, func() bool { return listening() == 0 }, 10*time.Second, 10*time.Millisecond)
}

// TestFleetListenProbe: a listener that hears nothing pings the server
// and keeps listening.
func TestFleetListenProbe(t *testing.T) {
	postgres.SetListenProbe(t, 20*time.Millisecond)
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	p := fleetPolicy(t, s)
	notices, err := s.ListenFleet(t.Context())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		return count(t, u, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND query = '-- ping'`) == 1
	}, 10*time.Second, 5*time.Millisecond, "the listener pinged")
	h := rm.NewHostID()
	_, err = s.AcquireFleetLease(t.Context(), p.ID, h, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, store.FleetNotice{Kind: store.FleetLeaseChanged, Policy: p.ID, Host: h}, nextNotice(t, notices))
}

// statements counts the statements a store sends.
type statements struct{ n atomic.Int64 }

func (c *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}

func (c *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// TestFleetStatements: each call of the fleet's is one statement, one
// round trip; a renewal above all, the one statement an idle holder
// sends.
func TestFleetStatements(t *testing.T) {
	var c statements
	s := pgtest.MustOpen(t, postgres.WithTracer(&c))
	ctx := t.Context()
	p := fleetPolicy(t, s)
	a, b := rm.NewHostID(), rm.NewHostID()
	var l store.FleetLease
	for _, step := range []struct {
		name string
		fn   func() error
	}{
		{"take", func() (err error) { l, err = s.AcquireFleetLease(ctx, p.ID, a, time.Minute); return }},
		{"renew", func() (err error) { l, err = s.AcquireFleetLease(ctx, p.ID, a, time.Minute); return }},
		{"refuse", func() error {
			_, err := s.AcquireFleetLease(ctx, p.ID, b, time.Minute)
			if errors.Is(err, store.ErrConflict) {
				return nil
			}
			return err
		}},
		{"read", func() (err error) { _, err = s.FleetLease(ctx, p.ID); return }},
		{"publish", func() error { return s.PublishFleetRoom(ctx, store.FleetRoom{Policy: p.ID, Host: b, Capacity: 2}) }},
		{"rooms", func() (err error) { _, err = s.FleetRooms(ctx, p.ID); return }},
		{"share", func() error {
			return s.ShareFleetDemand(ctx, l, []store.FleetShare{{Host: b, Wanted: 1}},
				[]store.FleetEvent{{Host: b, Event: rm.JobEvent{Kind: rm.JobStarted, JobID: "j"}}})
		}},
		{"take share", func() (err error) { _, _, err = s.TakeFleetShare(ctx, p.ID, b); return }},
		{"shares", func() (err error) { _, err = s.FleetShares(ctx, p.ID); return }},
		{"release", func() error { return s.ReleaseFleetLease(ctx, l) }},
	} {
		before := c.n.Load()
		require.NoError(t, step.fn(), step.name)
		assert.Equal(t, int64(1), c.n.Load()-before, step.name)
	}
	assert.Equal(t, int64(1), l.Token, "renewed, not taken again")
}
