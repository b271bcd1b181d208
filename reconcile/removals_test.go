package reconcile_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// A runner that died with the job GitHub handed it leaves a registration
// GitHub still counts busy: the attempt is concluded, and the removal is
// asked for again until GitHub lets the registration go.
func TestHeldRegistrationRemovedOnceGitHubLetsIt(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), nil)
	a, p := launchOne(t, e)
	e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online, r.Busy = true, true })
	e.clock.Advance(time.Second)
	e.pass()
	e.demand(0)
	p.exit(1)
	for range 90 {
		e.clock.Advance(time.Second)
		e.pass()
		if !e.attempt(a.ID).Live() {
			break
		}
	}
	require.False(t, e.attempt(a.ID).Live(), "the attempt is concluded")
	e.pass()
	require.True(t, e.target.has(a.RunnerName), "GitHub refused the removal: busy")
	assert.Contains(t, e.logs.String(), "GitHub holds the ended runner's registration as busy")

	e.clock.Advance(20 * time.Second)
	e.pass()
	assert.True(t, e.target.has(a.RunnerName), "still busy: still there")

	e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online, r.Busy = false, false }) // GitHub failed the job
	e.clock.Advance(20 * time.Second)
	e.pass()
	assert.False(t, e.target.has(a.RunnerName), "removed at the next retry")
	assert.Equal(t, 1, strings.Count(e.logs.String(), "removed a registration GitHub had held as busy"))
}
