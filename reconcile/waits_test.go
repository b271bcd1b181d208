package reconcile_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestStatusSaysWhatWaits(t *testing.T) {
	t.Run("Memory", func(t *testing.T) {
		adm := &reconcile.Admission{Memory: fakeMemory{4 << 30}, Reserve: 512 << 20}
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 10).MemoryEstimate(1536<<20), func(c *reconcile.Config) { c.Admission = adm })
		// Scale-set mode: GitHub assigns what it was told (2) and holds
		// the rest.
		e.loop.ReportDemand(rm.Demand{Wanted: 2, Queued: 7, At: e.clock.Now()})
		e.pass()
		require.Len(t, e.live(), 2)
		ps := e.loop.Status().Policies[0]
		assert.Equal(t, 2, ps.Admitted)
		assert.Equal(t, 7, ps.Queued)
		assert.Equal(t, 7, ps.Waiting)
		assert.True(t, strings.HasPrefix(ps.WaitReason, "memory: "), ps.WaitReason)
	})
	t.Run("Max", func(t *testing.T) {
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2), nil)
		e.demand(5)
		e.pass()
		require.Len(t, e.live(), 2)
		ps := e.loop.Status().Policies[0]
		assert.Equal(t, status.Wait{Waiting: 3, WaitReason: "at max 2"}, ps.Wait)
	})
	t.Run("Paused", func(t *testing.T) {
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2).Paused(), nil)
		e.demand(1)
		e.pass()
		assert.Equal(t, status.Wait{Waiting: 1, WaitReason: "paused"}, e.loop.Status().Policies[0].Wait)
	})
	t.Run("Monitor", func(t *testing.T) {
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2).Monitor(), nil)
		e.demand(3)
		e.pass()
		e.pass()
		assert.Empty(t, e.live(), "a monitor-only policy starts no runner")
		assert.Equal(t, 0, e.loop.Capacity(), "and tells GitHub it takes no job")
		ps := e.loop.Status().Policies[0]
		assert.True(t, ps.Monitor)
		assert.Equal(t, 3, ps.Demand)
		assert.Equal(t, status.Wait{Waiting: 3, WaitReason: "monitor only: this host starts no runner for it"}, ps.Wait)
	})
	t.Run("Served", func(t *testing.T) {
		e := newEnv(t, storetest.NewPolicy().Autoscale("home", 4), nil)
		e.demand(2)
		e.pass()
		assert.Equal(t, status.Wait{}, e.loop.Status().Policies[0].Wait, "launched: nothing waits")
	})
}
