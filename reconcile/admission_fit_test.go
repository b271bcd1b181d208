package reconcile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
)

// A policy whose expected peak exceeds what the host admits even empty is
// admitted alone, with its refusal as a note, and refused beside others.
func TestAdmissionHostTooSmall(t *testing.T) {
	adm := &reconcile.Admission{Reserve: 2 * gib}
	const detail = "its jobs need ~22GiB, this host admits 21.5GiB at most (23.5GiB total − 2GiB reserve)"
	t.Run("AloneAdmitted", func(t *testing.T) {
		r, ok := adm.Decide(reconcile.Ask{TotalMemory: 47 * gib / 2, Expected: 22 * gib, Max: 4})
		assert.True(t, ok, "nothing else runs: one may")
		assert.True(t, r.HostTooSmall)
		assert.Equal(t, status.RefusedMemory, r.Reason)
		assert.Contains(t, r.Detail, detail)
	})
	t.Run("BesideOthersRefused", func(t *testing.T) {
		r, ok := adm.Decide(reconcile.Ask{TotalMemory: 47 * gib / 2, Committed: 1, Expected: 22 * gib, Max: 4})
		assert.False(t, ok)
		assert.True(t, r.HostTooSmall)
		assert.Contains(t, r.Detail, detail)
	})
	t.Run("CapacityOne", func(t *testing.T) {
		assert.Equal(t, 1, adm.Capacity(reconcile.Ask{TotalMemory: 47 * gib / 2, Expected: 22 * gib, Max: 4}), "never 0 on learned data alone")
		assert.Equal(t, 1, adm.Capacity(reconcile.Ask{TotalMemory: 47 * gib / 2, Committed: 22 * gib, Expected: 22 * gib, Live: 1, Max: 4}))
		assert.Equal(t, 0, adm.Capacity(reconcile.Ask{TotalMemory: 47 * gib / 2, Committed: gib, Expected: 22 * gib, Max: 4}),
			"another policy's runner holds the host")
	})
	t.Run("Fits", func(t *testing.T) {
		r, ok := adm.Decide(reconcile.Ask{TotalMemory: 47 * gib / 2, Expected: 21 * gib, Max: 4})
		assert.True(t, ok)
		assert.False(t, r.HostTooSmall)
	})
}
