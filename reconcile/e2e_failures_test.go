//go:build linux

package reconcile_test

import (
	"context"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/status"
)

// waitFor waits for cond on the fake's changes, failing the test after d.
func (w *world) waitFor(d time.Duration, what string, cond func() bool) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := w.fake.WaitFor(ctx, cond); err != nil {
		w.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// outcome waits until an attempt of the policy other than those in seen
// is concluded, and returns it.
func (w *world) nextEnded(d time.Duration, seen map[rm.AttemptID]bool) rm.Attempt {
	w.t.Helper()
	var got rm.Attempt
	w.waitFor(d, "an attempt to end", func() bool {
		for _, a := range w.attempts() {
			if !a.Live() && !seen[a.ID] {
				got = a
				return true
			}
		}
		return false
	})
	seen[got.ID] = true
	return got
}

func TestE2EGitHubServerErrors(t *testing.T) {
	w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 2, minIdle: 1})
	w.enqueue(6, 200*time.Millisecond, 8<<20)
	cfg := w.supervisorConfig(nil, nil)
	cfg.Loop.MaxFailedLaunchesPerMinute = 3

	t.Run("Registration", func(t *testing.T) {
		// JIT requests and the demand watch fail: GitHub's failures are
		// not runner failures, so launches (for min idle) do not pause at
		// the failure budget; the loop backs off, one request at a time.
		for _, r := range []string{fakegithub.RouteScaleSetJITConfig, fakegithub.RouteMessages} {
			w.fake.Fault(r, fakegithub.Fault{Status: http.StatusInternalServerError})
		}
		sup, stop := w.run(cfg)
		defer stop()
		w.waitFor(30*time.Second, "five failed JIT requests", func() bool { return w.fake.Calls(fakegithub.RouteScaleSetJITConfig) >= 5 })
		polls := w.fake.Calls(fakegithub.RouteMessages)
		w.waitFor(30*time.Second, "the demand watch to retry", func() bool { return w.fake.Calls(fakegithub.RouteMessages) >= polls+2 })
		var jits []time.Time
		for _, c := range w.fake.CallLog() {
			if c.Route == fakegithub.RouteScaleSetJITConfig {
				jits = append(jits, c.At)
			}
		}
		for i := 1; i < len(jits); i++ {
			assert.GreaterOrEqual(t, jits[i].Sub(jits[i-1]), cfg.Loop.BackoffBase/2, "no spawn storm: request %d comes after a backoff", i)
		}
		ps := sup.Status().Policies[0]
		assert.Contains(t, ps.LastError, "GitHub failed", "the failure is visible")
		assert.NotContains(t, w.logs.String(), "launches paused")
		w.fake.ClearFaults()
	})
	t.Run("Lookups", func(t *testing.T) {
		// The Actions service's runner lookups fail (scale-set runners are
		// not in the REST list: each is looked up): the loop backs off
		// (jittered, doubling to BackoffMax) instead of hammering GitHub,
		// and stops no runner for it.
		w.fake.Fault(fakegithub.RouteAgent, fakegithub.Fault{Status: http.StatusInternalServerError})
		before := w.fake.Calls(fakegithub.RouteAgent)
		start := time.Now()
		_, stop := w.run(cfg)
		w.waitFor(30*time.Second, "six failed lookups", func() bool { return w.fake.Calls(fakegithub.RouteAgent) >= before+6 })
		elapsed := time.Since(start)
		stop()
		t.Logf("6 failed lookups in %s", elapsed.Round(time.Millisecond))
		assert.Greater(t, elapsed, cfg.Loop.BackoffBase)
		for _, a := range w.attempts() {
			assert.NotEqual(t, rm.Zombie, a.Outcome.Reason, "a failed lookup says nothing of a runner")
		}
		w.fake.ClearFaults()
	})
	t.Run("Recovered", func(t *testing.T) {
		// GitHub answers again: jobs queued now are served.
		w.enqueue(2, 200*time.Millisecond, 8<<20)
		w.run(cfg)
		w.waitJobs(90 * time.Second)
		for _, j := range w.fake.Jobs() {
			assert.Equal(t, 1, j.Starts)
			assert.Equal(t, "succeeded", j.Result)
		}
		failedJIT := 0
		for _, c := range w.fake.CallLog() {
			if c.Route == fakegithub.RouteScaleSetJITConfig && c.Status == http.StatusInternalServerError {
				failedJIT++
			}
		}
		failed := 0
		for _, a := range w.attempts() {
			if a.Outcome.Kind == rm.Failed {
				failed++
				assert.Equal(t, rm.GitHubUnavailable, a.Outcome.Reason, a.Outcome.String())
			}
		}
		assert.Equal(t, failedJIT, failed, "one failed attempt per failed JIT request, nothing else")
	})
}

func TestE2ERateLimit(t *testing.T) {
	w := newWorld(t, worldOpts{mode: rm.ModeClassic, max: 2,
		fake: []fakegithub.Option{fakegithub.WithRateLimit(12), fakegithub.WithRateLimitWindow(2 * time.Second)}})
	w.enqueue(8, 100*time.Millisecond, 8<<20)
	var mu sync.Mutex
	exhausted := 0
	stopWatching := make(chan struct{})
	go func() { // how often the budget was seen spent
		last := false
		for {
			select {
			case <-stopWatching:
				return
			case <-time.After(5 * time.Millisecond):
			}
			_, remaining, _ := w.fake.RateLimit()
			if remaining == 0 && !last {
				mu.Lock()
				exhausted++
				mu.Unlock()
			}
			last = remaining == 0
		}
	}()
	w.run(w.supervisorConfig(nil, nil))
	w.waitJobs(90 * time.Second)
	w.settled(30 * time.Second)
	close(stopWatching)

	mu.Lock()
	defer mu.Unlock()
	require.Positive(t, exhausted, "the budget ran out")
	limited := 0
	for _, c := range w.fake.CallLog() {
		if c.Kind == fakegithub.KindREST && (c.Status == http.StatusForbidden || c.Status == http.StatusTooManyRequests) {
			limited++
		}
	}
	t.Logf("budget spent %d times; %d requests refused by the rate limit; %d REST requests", exhausted, limited, w.fake.CallsREST())
	assert.LessOrEqual(t, limited, exhausted, "at most the request that found the budget spent, per window: none while it is")
	for _, j := range w.fake.Jobs() {
		assert.Equal(t, 1, j.Starts)
	}
	for _, a := range w.attempts() {
		if a.Outcome.Kind == rm.Failed {
			// A JIT request the client held back (the budget spent): the
			// attempt's row was written first, so it ends failed, and it is
			// GitHub's failure, not the runner's.
			assert.Equal(t, rm.GitHubUnavailable, a.Outcome.Reason)
			assert.Contains(t, a.Outcome.Detail, "rate limit")
		}
	}
}

// mangler corrupts the JIT configuration of the first launch, as a config
// the runner refuses.
type mangler struct {
	rm.Launcher
	once sync.Once
}

func (m *mangler) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	m.once.Do(func() { spec.JITConfig = "bm90IGEgaml0IGNvbmZpZw==" })
	return m.Launcher.Launch(ctx, spec)
}

func TestE2ERunnerFailures(t *testing.T) {
	t.Run("ExitCode1", func(t *testing.T) {
		w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 1})
		w.enqueue(1, 100*time.Millisecond, 8<<20)
		w.run(w.supervisorConfig(&mangler{Launcher: native.NewLauncher(w.dataDir)}, nil))
		a := w.nextEnded(30*time.Second, map[rm.AttemptID]bool{})
		assert.Equal(t, rm.ProcessExitedUnexpectedly, a.Outcome.Reason, a.Outcome.String())
		assert.Contains(t, a.Outcome.Detail, "exit code 1")
		require.NotNil(t, a.ExitCode)
		assert.Equal(t, 1, *a.ExitCode)
		w.waitJobs(30 * time.Second) // the loop goes on
		w.settled(30 * time.Second)
	})
	t.Run("Zombie", func(t *testing.T) {
		w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 1, minIdle: 1, fake: []fakegithub.Option{fakegithub.Zombie()}})
		cfg := w.supervisorConfig(nil, nil)
		cfg.Loop.ZombieGrace = 500 * time.Millisecond
		cfg.Loop.RunnerListEvery = 100 * time.Millisecond
		w.run(cfg)
		var first rm.Attempt
		w.waitFor(30*time.Second, "an idle runner", func() bool {
			for _, a := range w.attempts() {
				if a.State == rm.StateIdle {
					first = a
					return true
				}
			}
			return false
		})
		// GitHub drops the registration; the runner stays, deaf.
		target, err := w.targets(t.Context(), w.policy)
		require.NoError(t, err)
		require.NoError(t, target.Registrar.RemoveRunner(t.Context(), first.GitHubRunnerID))
		require.NoError(t, target.Demand.Close(t.Context()))
		seen := map[rm.AttemptID]bool{}
		a := w.nextEnded(30*time.Second, seen)
		assert.Equal(t, first.ID, a.ID)
		// It had no job: GitHub removed it idle, and it would not go.
		assert.Equal(t, rm.ExitedIdleWithoutWork, a.Outcome.Kind, a.Outcome.String())
		assert.Contains(t, a.Outcome.Detail, "removed idle by GitHub")
		assert.Contains(t, a.Outcome.Detail, "zombie")
		assert.False(t, platform.Alive(first.PID, first.ProcessStart), "the zombie was stopped")
		w.waitFor(30*time.Second, "a new idle runner", func() bool {
			for _, b := range w.attempts() {
				if b.State == rm.StateIdle && b.ID != first.ID {
					return true
				}
			}
			return false
		})
	})
	t.Run("NeverGetsAJob", func(t *testing.T) {
		w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 1, minIdle: 1})
		cfg := w.supervisorConfig(nil, nil)
		cfg.Loop.IdleTimeout = 500 * time.Millisecond
		cfg.Loop.RunnerListEvery = 100 * time.Millisecond
		w.run(cfg)
		seen := map[rm.AttemptID]bool{}
		a := w.nextEnded(30*time.Second, seen)
		assert.Equal(t, rm.ExitedIdleWithoutWork, a.Outcome.Kind, a.Outcome.String())
		assert.Equal(t, "idle timeout", a.Outcome.Detail)
		b := w.nextEnded(30*time.Second, seen) // the loop goes on
		assert.Equal(t, rm.ExitedIdleWithoutWork, b.Outcome.Kind, b.Outcome.String())
	})
	t.Run("MissingRunnerDir", func(t *testing.T) {
		missing := filepath.Join(t.TempDir(), "no-runner-here")
		w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 1, runnerDir: missing})
		w.enqueue(1, 100*time.Millisecond, 8<<20)
		sup, _ := w.run(w.supervisorConfig(nil, nil))
		a := w.nextEnded(30*time.Second, map[rm.AttemptID]bool{})
		assert.Equal(t, rm.LaunchFailed, a.Outcome.Reason, a.Outcome.String())
		assert.Contains(t, a.Outcome.Detail, "no-runner-here")
		for _, r := range w.fake.Runners() {
			assert.NotEqual(t, a.RunnerName, r.Name, "its registration was removed")
		}
		// The loop goes on: the policy fixed, the job runs.
		pol := w.policy
		pol.RunnerDir = w.install
		require.NoError(t, w.st.UpdatePolicy(t.Context(), pol))
		sup.Refresh()
		w.waitJobs(60 * time.Second)
		w.settled(30 * time.Second)
	})
}

func TestE2EMemoryAdmission(t *testing.T) {
	for _, mode := range []rm.Mode{rm.ModeClassic, rm.ModeScaleSet} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t, worldOpts{mode: mode, max: 4})
			// 20 banked peaks of 1.5 GiB: a job is expected to peak at
			// 1.65 GiB (p90 + 10 %); a 4 GiB host keeps 512 MiB.
			peaksFile := filepath.Join(w.dataDir, "state", "memory-peaks.toml")
			require.NoError(t, datadir.SavePeaks(peaksFile, datadir.Peaks{Policies: map[string][]uint64{
				w.policy.ID.String(): slices.Repeat([]uint64{1536 << 20}, 20)}}))
			w.meters = meter.New(peaksFile)
			adm := &reconcile.Admission{Memory: fakeMemory{4 << 30}, Reserve: 512 << 20}
			w.enqueue(8, 300*time.Millisecond, 16<<20)
			sup, _ := w.run(w.supervisorConfig(nil, adm))
			stop := w.sampleLive()
			w.waitJobs(90 * time.Second)
			peak := stop()
			w.settled(30 * time.Second)

			assert.LessOrEqual(t, peak, 2, "never more than two at once")
			assert.LessOrEqual(t, maxOverlap(w.fake.Jobs()), 2)
			st := sup.Status()
			require.Len(t, st.Policies, 1)
			t.Logf("%s: at most %d at once; refusals %v; last refusal %q", mode, peak, st.Refusals, st.Policies[0].LastRefusal)
			if mode == rm.ModeScaleSet {
				// maxCapacity keeps GitHub from assigning more than admitted:
				// demand never exceeds it, so nothing is refused.
				sets := w.fake.ScaleSets()
				require.Len(t, sets, 1)
				assert.Equal(t, 2, sets[0].MaxCapacity, "the admitted capacity is what GitHub is told")
				return
			}
			assert.Positive(t, st.Refusals[status.RefusedMemory])
			assert.Contains(t, st.Policies[0].LastRefusal, "memory: 3.3GiB committed + 1.6GiB expected > 3.5GiB")
		})
	}
}
