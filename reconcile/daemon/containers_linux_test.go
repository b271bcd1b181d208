//go:build linux

package daemon_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/platform/container/containertest"
	"github.com/runner-manager/runner-manager/reconcile/daemon"
	"github.com/runner-manager/runner-manager/store"
)

func stopEngines(code int) int { return containertest.Stop(code) }

// A container policy end to end on a real engine: 30 jobs at max 4 in
// scale-set mode, each in a container of its own, never more than 4 at
// once, none left afterwards.
func TestRunContainerPolicy(t *testing.T) {
	const jobs, most = 30, 4
	e, host := containertest.Engine(t)
	image := containertest.RunnerImage(t)
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), ContainerHost: host,
		SampleEvery: 200 * time.Millisecond, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", "boxed")
	require.NoError(t, err)
	p := rm.Policy{ID: rm.NewPolicyID(), Name: "boxed", Host: d.Host().ID, Target: target, Max: most,
		MemoryEstimate: 64 << 20, Backend: rm.BackendContainer,
		// Host networking: the fake GitHub listens on loopback.
		Container: rm.ContainerSettings{Image: image, Network: "host"}}
	require.NoError(t, d.Store().InsertPolicy(t.Context(), p))

	// Watch the engine: how many of the host's containers at once.
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	peak, seen := 0, map[string]bool{}
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			list, err := e.Containers(ctx, d.Host().ID)
			if err == nil {
				mu.Lock()
				running := 0
				for _, c := range list {
					seen[c.Name] = true
					if c.Running {
						running++
					}
				}
				peak = max(peak, running)
				mu.Unlock()
			}
			select {
			case <-ctx.Done():
			case <-time.After(50 * time.Millisecond):
			}
		}
	})

	began := time.Now()
	stop := start(t, d)
	for i := range jobs {
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"boxed"}, Name: fmt.Sprintf("boxed-%d", i),
			Duration: 200 * time.Millisecond, MemoryBytes: 8 << 20})
	}
	wctx, wcancel := context.WithTimeout(t.Context(), 80*time.Second)
	defer wcancel()
	require.NoError(t, w.gh.WaitJobsCompleted(wctx))
	took := time.Since(began)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == jobs }, 30*time.Second, 100*time.Millisecond)
	require.Eventually(t, func() bool {
		list, err := e.Containers(t.Context(), d.Host().ID)
		return err == nil && len(list) == 0
	}, 30*time.Second, 100*time.Millisecond, "every attempt's container is removed")
	cancel()
	wg.Wait()
	require.NoError(t, stop())

	runners := map[string]bool{}
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, 1, j.Starts)
		runners[j.RunnerName] = true
	}
	assert.Len(t, runners, jobs, "one ephemeral runner per job")
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	for _, a := range as {
		if a.Outcome.Kind == rm.CompletedJob {
			assert.True(t, seen["runner-manager-"+a.ID.String()], "attempt %s ran in its own container", a.ID)
		}
	}
	assert.LessOrEqual(t, peak, most, "never more containers than the policy's max")
	left, err := e.Containers(t.Context(), d.Host().ID)
	require.NoError(t, err)
	t.Logf("%d jobs at max %d in containers: %v (%d containers seen, at most %d running at once, %d left)",
		jobs, most, took.Round(time.Millisecond), len(seen), peak, len(left))
}
