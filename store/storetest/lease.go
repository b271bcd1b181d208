package storetest

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// lease is a lease of host for holder, renewed at at, for 30 s.
func lease(host rm.HostID, holder string, pid int, at time.Time) store.HostLease {
	return store.HostLease{Host: host, Holder: holder, PID: pid, ProcessStart: 1<<63 + 5, Hostname: "box", BootID: "boot-1",
		RenewedAt: at, ExpiresAt: at.Add(30 * time.Second)}
}

func testHostLease(t *testing.T, s store.Store) {
	ctx := t.Context()
	host := rm.NewHostID()
	t0 := Now()

	_, err := s.HostLease(ctx, host)
	require.ErrorIs(t, err, store.ErrNotFound, "no lease yet")

	a := lease(host, "a", 100, t0)
	got, err := s.AcquireHostLease(ctx, a, "")
	require.NoError(t, err, "a free lease is taken")
	assert.True(t, got.AcquiredAt.Equal(t0))
	read, err := s.HostLease(ctx, host)
	require.NoError(t, err)
	assert.Equal(t, "a", read.Holder)
	assert.Equal(t, 100, read.PID)
	assert.Equal(t, uint64(1<<63+5), read.ProcessStart, "the start stamp's top bit survives")
	assert.Equal(t, "box", read.Hostname)
	assert.Equal(t, "boot-1", read.BootID)
	assert.True(t, read.ExpiresAt.Equal(t0.Add(30*time.Second)))

	// Another holder is refused while the lease holds, with the holder named.
	_, err = s.AcquireHostLease(ctx, lease(host, "b", 200, t0.Add(10*time.Second)), "")
	require.ErrorIs(t, err, store.ErrConflict)
	var held *store.LeaseHeldError
	require.ErrorAs(t, err, &held)
	assert.Equal(t, 100, held.Lease.PID)
	assert.Contains(t, err.Error(), "pid 100 on box")

	// The holder renews; its AcquiredAt is kept.
	got, err = s.AcquireHostLease(ctx, lease(host, "a", 100, t0.Add(10*time.Second)), "")
	require.NoError(t, err)
	assert.True(t, got.AcquiredAt.Equal(t0), "a renewal keeps AcquiredAt")
	read, err = s.HostLease(ctx, host)
	require.NoError(t, err)
	assert.True(t, read.ExpiresAt.Equal(t0.Add(40*time.Second)))
	assert.True(t, read.AcquiredAt.Equal(t0))

	// Naming the holder as dead takes it over; naming another does not.
	_, err = s.AcquireHostLease(ctx, lease(host, "b", 200, t0.Add(11*time.Second)), "someone-else")
	require.ErrorIs(t, err, store.ErrConflict)
	_, err = s.AcquireHostLease(ctx, lease(host, "b", 200, t0.Add(11*time.Second)), "a")
	require.NoError(t, err, "a dead holder's lease is taken over")

	// An expired lease is taken.
	_, err = s.AcquireHostLease(ctx, lease(host, "c", 300, t0.Add(41*time.Second)), "")
	require.NoError(t, err, "an expired lease is taken")
	// Its former holder cannot renew it.
	_, err = s.AcquireHostLease(ctx, lease(host, "b", 200, t0.Add(42*time.Second)), "")
	require.ErrorIs(t, err, store.ErrConflict, "a lease lost is not renewed")

	// Release by another is a no-op; by the holder it frees the lease.
	require.NoError(t, s.ReleaseHostLease(ctx, host, "b"))
	read, err = s.HostLease(ctx, host)
	require.NoError(t, err)
	assert.Equal(t, "c", read.Holder)
	require.NoError(t, s.ReleaseHostLease(ctx, host, "c"))
	_, err = s.HostLease(ctx, host)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.AcquireHostLease(ctx, lease(host, "d", 400, t0.Add(43*time.Second)), "")
	require.NoError(t, err, "a released lease is free")

	// Leases are per host.
	_, err = s.AcquireHostLease(ctx, lease(rm.NewHostID(), "e", 500, t0), "")
	require.NoError(t, err)
}

func testHostLeaseInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	t0 := Now()
	for name, l := range map[string]store.HostLease{
		"no host":       lease(rm.HostID{}, "a", 1, t0),
		"no holder":     lease(rm.NewHostID(), "", 1, t0),
		"never renewed": {Host: rm.NewHostID(), Holder: "a", ExpiresAt: t0},
		"expires first": {Host: rm.NewHostID(), Holder: "a", RenewedAt: t0, ExpiresAt: t0},
	} {
		_, err := s.AcquireHostLease(ctx, l, "")
		assert.ErrorIs(t, err, rm.ErrInvalid, name)
	}
}

// testHostLeaseRace: of many daemons taking one free lease at once, one wins.
func testHostLeaseRace(t *testing.T, s store.Store) {
	host := rm.NewHostID()
	t0 := Now()
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, errs[i] = s.AcquireHostLease(context.Background(), lease(host, string(rune('a'+i)), 100+i, t0), "")
		})
	}
	wg.Wait()
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errors.Is(err, store.ErrConflict):
			t.Errorf("unexpected error: %v", err)
		}
	}
	assert.Equal(t, 1, won, "exactly one daemon holds the lease")
}
