package fleet_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFleetPolicyRemoved: `policy rm` of a fleet policy while every host
// serves it: each host lets it go, the lease is given up, and the scale
// set the fleet created is deleted at GitHub (not created again by a host
// still serving it).
func TestFleetPolicyRemoved(t *testing.T) {
	f := newSharedFleet(t, 2, "alpha", "beta")
	for _, h := range f.hosts {
		h.start()
	}
	st := f.open()
	f.waitFor(time.Minute, "a host holds the fleet's lease", func() bool { h, _ := f.holderOf(t, st); return h != nil })
	f.enqueueShared(4, 200*time.Millisecond)
	f.waitFor(time.Minute, "the jobs completed", func() bool { all, _ := f.jobsDone(""); return all == 4 })
	require.Len(t, f.fake.ScaleSets(), 1)

	serves := func(h *host) bool {
		out, err := h.try("status", "--json")
		return err != nil || strings.Contains(out, `"name": "shared"`) || strings.Contains(out, `"name":"shared"`)
	}
	for _, h := range f.hosts {
		require.True(t, serves(h), "%s's status shows the fleet policy it serves", h.name)
	}
	f.hosts[1].cli("policy", "pause", "shared")
	f.waitFor(time.Minute, "the spares stopped", func() bool { return len(f.fake.Runners()) == 0 })
	// What `policy rm` checks is the journal: a spare whose registration
	// is gone at GitHub is live there until its host concludes it, moments
	// later (as `status` shows a person before they remove the policy).
	id := f.fleetPolicy(t, st).ID
	f.waitFor(time.Minute, "no attempt of the policy is live in the journal", func() bool {
		live, err := st.ActiveAttempts(context.Background(), id)
		return err == nil && len(live) == 0
	})
	out := f.hosts[1].cli("policy", "rm", "shared")
	assert.Contains(t, out, "deleted its scale set")
	// A host that still served it would find it gone and create it again:
	// once no host serves it, none can.
	for _, h := range f.hosts {
		f.waitFor(time.Minute, h.name+" no longer serves the policy", func() bool { return !serves(h) })
	}
	assert.Empty(t, f.fake.ScaleSets(), "the fleet's scale set is gone at GitHub and stays gone")
	for _, h := range f.hosts {
		require.NoError(t, h.stop(30*time.Second))
	}
	checkFleetServed(t, f, 2)
}
