package daemon_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container/containertest"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestContainerE2EWarm: through the daemon, with warm jobs on, a
// repository's second job in a container finds what its first wrote in
// the work folder, and both attempts name the same slot.
func TestContainerE2EWarm(t *testing.T) {
	w := newBoxWorld(t)
	image := containertest.RunnerShellImage(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), ContainerHost: w.host,
		SampleEvery: 100 * time.Millisecond, ClassicPoll: 500 * time.Millisecond, Logger: w.logger(t),
		Warm: daemon.Warm{Enabled: true}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.policy(t, d, "warmbox", false, func(p *rm.Policy) { p.Max = 1; p.Container.Image = image })
	stop := start(t, d)
	run := func(script string) fakegithub.JobRecord {
		t.Helper()
		id := w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"warmbox"}, Duration: 100 * time.Millisecond, Script: script})
		ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
		defer cancel()
		require.NoError(t, w.gh.WaitJobsCompleted(ctx))
		rec, ok := w.gh.Job(id)
		require.True(t, ok)
		return rec
	}
	run(`echo "from the first job" >kept`)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 1 }, 30*time.Second, 100*time.Millisecond)
	rec := run(`echo "kept: $(/bin/busybox cat kept 2>&1)"`)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 2 }, 30*time.Second, 100*time.Millisecond)
	require.NoError(t, stop())
	assert.Contains(t, rec.Log, "kept: from the first job", "the second job starts where the first left off")
	var slots []string
	for _, a := range attemptsOf(t, d.Store(), p) {
		if a.Outcome.Kind == rm.CompletedJob {
			slots = append(slots, a.Slot)
		}
	}
	require.Len(t, slots, 2)
	assert.NotEmpty(t, slots[0])
	assert.Equal(t, slots[0], slots[1], "both ran in one slot")
}
