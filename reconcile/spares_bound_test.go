package reconcile_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
)

// TestSparesNeverLiveTwoMinutes runs the loop's own driver in virtual
// time: GitHub has been seen dropping idle JIT runners from 2 minutes of
// listening on, so a spare is stopped before its runner has run 2
// minutes, whatever SpareRecycleAfter says, whether its replacement can
// start, and whether GitHub answers the removal of its registration. Only
// the passes its own deadlines ask wake the loop (the requeues are far).
func TestSparesNeverLiveTwoMinutes(t *testing.T) {
	for _, tc := range []struct {
		name string
		// recycleAfter is the policy's SpareRecycleAfter (0: the default).
		recycleAfter time.Duration
		// noReplacement: no new runner can start; githubFails: removing
		// a registration fails.
		noReplacement, githubFails bool
	}{
		{name: "ReplacementListens"},
		{name: "NoReplacement", noReplacement: true},
		{name: "LongRecycleNoReplacement", recycleAfter: 10 * time.Minute, noReplacement: true},
		{name: "GitHubFails", recycleAfter: 10 * time.Minute, noReplacement: true, githubFails: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := spareEnv(t, 2, 1, func(c *reconcile.Config) { c.SpareRecycleAfter = tc.recycleAfter })
			synctest.Test(t, func(t *testing.T) {
				cfg := e.cfg
				cfg.Now = time.Now
				cfg.ActiveRequeue, cfg.IdleRequeue = 30*time.Minute, 30*time.Minute
				loop, stop := runLoop(t, cfg)
				loop.ReportDemand(rm.Demand{At: time.Now()})
				synctest.Wait()
				live := e.live()
				require.Len(t, live, 1, "a spare")
				old := live[0]
				p := e.launcher.proc(old.ID)
				require.NotNil(t, p)
				if tc.noReplacement {
					e.launcher.mu.Lock()
					e.launcher.launchErr = errors.New("no room for a runner")
					e.launcher.mu.Unlock()
				}
				if tc.githubFails {
					e.target.setErr(nil, errors.New("remove runner: GitHub answered 502"), nil)
				}
				var stoppedAfter time.Duration
				for range 3 * 60 {
					for _, a := range e.live() {
						e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
					}
					time.Sleep(time.Second)
					synctest.Wait()
					if p.wasStopped() {
						stoppedAfter = time.Since(old.StartedAt)
						break
					}
				}
				t.Logf("stopped %s after its start", stoppedAfter)
				require.True(t, p.wasStopped(), "the spare is stopped\n%s", e.logs.String())
				assert.Less(t, stoppedAfter, 2*time.Minute, "before GitHub may drop it")
				assert.Positive(t, stoppedAfter)
				synctest.Wait()
				got := e.attempt(old.ID)
				assert.Equal(t, rm.ExitedIdleWithoutWork, got.Outcome.Kind, got.Outcome.String())
				assert.Contains(t, got.Outcome.Detail, "spare recycled")
				if !tc.githubFails {
					assert.False(t, e.target.has(old.RunnerName), "its registration is removed")
				}
				if !tc.noReplacement {
					live := e.live()
					require.Len(t, live, 1, "its replacement")
					assert.True(t, live[0].StartedAt.Before(old.StartedAt.Add(stoppedAfter)), "launched before the old one stopped")
				}
				stop()
			})
		})
	}
}

// TestSparesIdleListNothing: a scale-set loop whose spares are recycled
// through ten idle minutes never asks for GitHub's REST runner list past
// the first answer that it cannot (scale-set runners are not in it): it
// looks each spare up at the scale-set service instead, which costs no
// REST quota.
func TestSparesIdleListNothing(t *testing.T) {
	e := spareEnv(t, 2, 1, nil)
	e.target.cannotList = true
	e.demand(0)
	e.pass()
	launched := e.launcher.launches()
	for range 10 * 60 / 5 {
		for _, a := range e.live() {
			e.target.set(a.RunnerName, func(r *rm.Runner) { r.Online = true })
		}
		e.clock.Advance(5 * time.Second)
		e.pass()
	}
	assert.Greater(t, e.launcher.launches()-launched, 4, "spares were recycled through the ten minutes")
	assert.Equal(t, 1, e.target.count("list"), "one list, answered: cannot")
	assert.Positive(t, e.target.count("lookup"), "each spare looked up instead")
	t.Logf("launches %d, lookups %d, removals %d", e.launcher.launches()-launched, e.target.count("lookup"), e.target.count("remove"))
}
