//go:build linux

package reconcile_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// listsNothing is a scale-set registrar as it was before it said
// rm.ErrCannotList: its REST list lacks every scale-set runner.
type listsNothing struct{ rm.Registrar }

func (listsNothing) Runners(context.Context, string) ([]rm.Runner, error) { return nil, nil }

// TestE2ELongScaleSetJob is the short form of a 240 s scale-set job: a job
// 10× longer than ZombieGrace completes and its runner is never stopped,
// nor is the min-idle runner that waits beside it, whether the target
// says it cannot list (the runners are looked up) or lists none of them
// (a runner a list lacks is looked up before it counts as missing).
func TestE2ELongScaleSetJob(t *testing.T) {
	for _, tc := range []struct {
		name string
		wrap func(reconcile.Target) reconcile.Target
	}{
		{"CannotList", func(t reconcile.Target) reconcile.Target { return t }},
		{"EmptyList", func(t reconcile.Target) reconcile.Target {
			return reconcile.Target{Registrar: listsNothing{t.Registrar}, Demand: t.Demand}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const grace = 300 * time.Millisecond
			w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 2, minIdle: 1})
			cfg := w.supervisorConfig(nil, nil)
			cfg.Loop.ZombieGrace = grace
			cfg.Loop.RunnerListEvery = 100 * time.Millisecond
			targets := cfg.Targets
			cfg.Targets = func(ctx context.Context, p rm.Policy) (reconcile.Target, error) {
				t, err := targets(ctx, p)
				if err != nil {
					return reconcile.Target{}, err
				}
				return tc.wrap(t), nil
			}
			w.run(cfg)
			var spare rm.Attempt
			w.waitFor(30*time.Second, "a min-idle runner", func() bool {
				for _, a := range w.attempts() {
					// (A list that lacks it cannot say it is online.)
					if a.State == rm.StateIdle || (tc.name == "EmptyList" && a.State == rm.StateStarting) {
						spare = a
						return true
					}
				}
				return false
			})
			w.enqueue(1, 10*grace, 8<<20)
			w.waitJobs(60 * time.Second)
			// The spare outlives many graces too.
			deadline := time.Now().Add(10 * grace)
			w.waitFor(30*time.Second, "ten zombie graces", func() bool { return time.Now().After(deadline) })

			jobs := w.fake.Jobs()
			require.Len(t, jobs, 1)
			assert.Equal(t, "succeeded", jobs[0].Result)
			assert.Equal(t, 1, jobs[0].Starts)
			assert.GreaterOrEqual(t, jobs[0].CompletedAt.Sub(jobs[0].StartedAt), 10*grace)
			ran := false
			for _, a := range w.attempts() {
				assert.NotEqual(t, rm.Zombie, a.Outcome.Reason, "attempt %s: %s", a.ID, a.Outcome)
				// An extra idle runner may be scaled down when the demand
				// figure moves; no runner is stopped as a zombie, and the
				// one that ran the job is never stopped.
				assert.NotContains(t, a.LastMessage, "stopping: zombie", "attempt %s", a.ID)
				if a.Job.Known() {
					assert.NotContains(t, a.LastMessage, "stopping", "attempt %s ran a job", a.ID)
				}
				if a.Outcome.Kind == rm.CompletedJob && a.Job.ID == w.jobID(jobs[0]) {
					ran = true
				}
				if a.ID == spare.ID && !a.Job.Known() {
					assert.True(t, a.Live(), "the idle spare is still there: %s", a.Outcome)
				}
			}
			assert.True(t, ran, "the job's attempt completed it")
			assert.NotContains(t, w.logs.String(), "runner is a zombie")
		})
	}
}

// runnerRoutes are the routes that register, look up, list and remove
// runners, in both modes.
var runnerRoutes = []string{
	fakegithub.RouteScaleSetJITConfig, fakegithub.RouteAgent, fakegithub.RouteAgentByName, fakegithub.RouteDeleteAgent,
	fakegithub.RouteRepoJITConfig, fakegithub.RouteRepoRunners, fakegithub.RouteRepoRunner, fakegithub.RouteRepoDeleteRunner,
}

// TestE2ERunnerRoutesStorm: 10 s of 500s on the runner routes do not pause
// launches (GitHub's failures are not runner failures), and the loop never
// waits past its backoff ceiling, so the next job starts as soon as
// GitHub answers.
func TestE2ERunnerRoutesStorm(t *testing.T) {
	for _, mode := range []rm.Mode{rm.ModeScaleSet, rm.ModeClassic} {
		t.Run(mode.String(), func(t *testing.T) {
			const storm = 10 * time.Second
			w := newWorld(t, worldOpts{mode: mode, max: 2})
			cfg := w.supervisorConfig(nil, nil)
			cfg.Loop.MaxFailedLaunchesPerMinute = 3
			for _, r := range runnerRoutes {
				w.fake.Fault(r, fakegithub.Fault{Status: http.StatusInternalServerError})
			}
			w.run(cfg)
			w.enqueue(4, 200*time.Millisecond, 8<<20)
			time.Sleep(storm) // the storm's length, not a wait for a result
			w.fake.ClearFaults()
			ended := time.Now()
			w.waitJobs(60 * time.Second)
			w.settled(30 * time.Second)

			first := time.Time{}
			for _, j := range w.fake.Jobs() {
				assert.Equal(t, 1, j.Starts)
				assert.Equal(t, "succeeded", j.Result)
				if first.IsZero() || j.StartedAt.Before(first) {
					first = j.StartedAt
				}
			}
			t.Logf("%s: first job started %s after the storm's end", mode, first.Sub(ended).Round(time.Millisecond))
			// The loop held GitHub calls back no longer than its backoff
			// ceiling at any time of the storm (each wait it chose is
			// logged), and recovered: the next job waits for no pause.
			waits := retryWaits(t, w.logs.String(), "reconcile pass")
			require.NotEmpty(t, waits, "the storm made passes fail")
			for _, d := range waits {
				assert.LessOrEqual(t, d, cfg.Loop.BackoffMax, "a wait past the ceiling: %v", waits)
			}
			assert.Contains(t, w.logs.String(), "reconcile pass recovered")
			failedJIT := 0
			for _, c := range w.fake.CallLog() {
				if (c.Route == fakegithub.RouteScaleSetJITConfig || c.Route == fakegithub.RouteRepoJITConfig) && c.Status == http.StatusInternalServerError {
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
			t.Logf("%s: %d failed registrations during the storm", mode, failedJIT)
			if mode == rm.ModeScaleSet {
				// (Classic mode's failing runner list holds its passes back
				// before any registration.)
				assert.Greater(t, failedJIT, cfg.Loop.MaxFailedLaunchesPerMinute, "more failures than the launch budget...")
			}
			assert.NotContains(t, w.logs.String(), "launches paused", "...and launches never paused")
			assert.Equal(t, failedJIT, failed)
		})
	}
}

// retryWaits are the waits a driver named name logged after its failed
// steps (retry_in), in order.
func retryWaits(t *testing.T, logs, name string) []time.Duration {
	t.Helper()
	re := regexp.MustCompile(`msg="` + regexp.QuoteMeta(name) + ` failed(?: again)?".*? retry_in=(\S+)`)
	var out []time.Duration
	for _, m := range re.FindAllStringSubmatch(logs, -1) {
		d, err := time.ParseDuration(m[1])
		require.NoError(t, err, m[0])
		out = append(out, d)
	}
	return out
}
