package reconcile_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestLaunchersByBackend: a policy's runners go to the launcher of its
// backend, from launch to cleanup; the default backend is native.
func TestLaunchersByBackend(t *testing.T) {
	native := newFakeLauncher()
	e := newEnv(t, storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 1).Backend("").Active(), func(c *reconcile.Config) {
		c.Launchers = map[rm.Backend]rm.Launcher{rm.BackendNative: native}
	})
	e.demand(1)
	e.pass()
	require.Len(t, e.live(), 1)
	a := e.live()[0]
	assert.Zero(t, e.launcher.launches(), "not the fallback launcher")
	require.Equal(t, 1, native.launches())
	assert.Equal(t, e.policy.ID, native.specs[0].Policy.ID, "the spec carries the policy")

	native.work(a.ID)
	native.proc(a.ID).exit(0)
	e.pass()
	got := e.attempt(a.ID)
	assert.Equal(t, rm.CompletedJob, got.Outcome.Kind, "its launcher's trace says it ran a job")
	_, cleaned := native.cleanup(a.ID)
	assert.True(t, cleaned, "cleaned by its own launcher")
	_, other := e.launcher.cleanup(a.ID)
	assert.False(t, other)
}
