//go:build linux

package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// A scale-set policy with a spare keeps a runner listening before any
// job: a job queued finds it (no boot to wait for), a new spare replaces
// it, and a stop removes the spare: registration, process, concluded
// idle. Real fake-runner processes that take 3 s to boot.
func TestE2ESpares(t *testing.T) {
	const boot = 3 * time.Second
	w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 2, spare: 1, fake: []fakegithub.Option{fakegithub.WithRunnerBootDelay(boot)}})
	_, stop := w.run(w.supervisorConfig(nil, nil))
	prefix := rm.RunnerNamePrefix(w.host.ID)
	online := func() int {
		n := 0
		for _, r := range w.fake.Runners() {
			if strings.HasPrefix(r.Name, prefix) && r.Online && !r.Busy {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return online() == 1 }, 60*time.Second, 20*time.Millisecond, "a spare listens before any job")
	listening := map[string]bool{}
	for _, r := range w.fake.Runners() {
		if strings.HasPrefix(r.Name, prefix) && r.Online && !r.Busy {
			listening[r.Name] = true
		}
	}

	id := w.enqueue(1, 200*time.Millisecond, 8<<20)[0]
	require.NoError(t, w.fake.WaitFor(waitCtxE2E(t, 60*time.Second), func() bool {
		j, _ := w.fake.Job(id)
		return j.Status == "completed"
	}))
	j, _ := w.fake.Job(id)
	waited := j.StartedAt.Sub(j.QueuedAt)
	t.Logf("queued → started: %s (runner boot %s)", waited.Round(time.Millisecond), boot)
	assert.True(t, listening[j.RunnerName], "the job was taken by %s, not by a runner listening before it was queued (%v)", j.RunnerName, listening)
	require.Eventually(t, func() bool { return online() == 1 }, 60*time.Second, 20*time.Millisecond, "a new spare replaces the one that took the job")

	stop()
	assert.Zero(t, countRunnerProcesses(w.dataDir), "no runner process is left")
	for _, r := range w.fake.Runners() {
		assert.False(t, strings.HasPrefix(r.Name, prefix), "no registration is left: %s", r.Name)
	}
	live, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
	require.NoError(t, err)
	assert.Empty(t, live)
	assert.Contains(t, w.logs.String(), "warm spare launched")
}

func waitCtxE2E(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// gatedLauncher holds the first launch until the supervisor's context
// ends (the stop has begun), then launches: a spare launched just before
// the stop. whole makes that launch ignore the cancellation (the process
// starts), else the launcher sees it.
type gatedLauncher struct {
	rm.Launcher
	once    sync.Once
	entered chan struct{}
	whole   bool
}

func (g *gatedLauncher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	first := false
	g.once.Do(func() { first = true })
	if !first {
		return g.Launcher.Launch(ctx, spec)
	}
	close(g.entered)
	<-ctx.Done()
	if g.whole {
		ctx = context.WithoutCancel(ctx)
	}
	return g.Launcher.Launch(ctx, spec)
}

// A stop removes a spare whose launch was under way when it came: its
// registration (made by the JIT request before the stop), its process if
// it started, its directory; the attempt is concluded.
func TestE2EStopRemovesASpareLaunchedJustBefore(t *testing.T) {
	for _, whole := range []bool{true, false} {
		t.Run(map[bool]string{true: "started", false: "launch-cancelled"}[whole], func(t *testing.T) {
			w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 2, spare: 1, fake: []fakegithub.Option{fakegithub.WithRunnerBootDelay(time.Second)}})
			native := native.NewLauncher(w.dataDir, native.WithLogger(w.log))
			t.Cleanup(func() { _ = native.Close() })
			g := &gatedLauncher{Launcher: native, entered: make(chan struct{}), whole: whole}
			_, stop := w.run(w.supervisorConfig(g, nil))
			select {
			case <-g.entered:
			case <-time.After(30 * time.Second):
				t.Fatal("no spare launched")
			}
			prefix := rm.RunnerNamePrefix(w.host.ID)
			regs := func() []string {
				var out []string
				for _, r := range w.fake.Runners() {
					if strings.HasPrefix(r.Name, prefix) {
						out = append(out, r.Name)
					}
				}
				return out
			}
			require.Len(t, regs(), 1, "the spare's JIT request registered it before the stop")
			stop()
			assert.Empty(t, regs(), "no registration is left")
			assert.Zero(t, countRunnerProcesses(w.dataDir), "no runner process is left")
			live, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
			require.NoError(t, err)
			assert.Empty(t, live, "the spare's attempt is concluded")
			entries, _ := os.ReadDir(filepath.Join(w.dataDir, "attempts"))
			for _, e := range entries {
				assert.True(t, strings.HasPrefix(e.Name(), "."), "no attempt directory is left: %s", e.Name())
			}
		})
	}
}

// GitHub drops idle JIT runners after minutes (actions/runner #4726): a
// spare it drops ends idle, never failed, whether its runner exits as
// the real one does or stays alive, deaf; the loop replaces it.
func TestE2ESpareDroppedIdleByGitHub(t *testing.T) {
	for _, tc := range []struct {
		name   string
		zombie bool
	}{{"Exits", false}, {"StaysAlive", true}} {
		t.Run(tc.name, func(t *testing.T) {
			opts := []fakegithub.Option{fakegithub.WithRunnerBootDelay(100 * time.Millisecond), fakegithub.WithDropIdleRunnersAfter(500 * time.Millisecond)}
			if tc.zombie {
				opts = append(opts, fakegithub.Zombie())
			}
			w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 2, spare: 1, fake: opts})
			cfg := w.supervisorConfig(nil, nil)
			cfg.Loop.ZombieGrace = 500 * time.Millisecond
			cfg.Loop.RunnerListEvery = 100 * time.Millisecond
			// A loop of spares alone passes at the idle cadence: looked up
			// that often, a deaf one is found within the test.
			cfg.Loop.IdleRequeue = 200 * time.Millisecond
			w.run(cfg)
			seen := map[rm.AttemptID]bool{}
			for range 2 {
				a := w.nextEnded(60*time.Second, seen)
				assert.Equal(t, rm.ExitedIdleWithoutWork, a.Outcome.Kind, a.Outcome.String())
				assert.False(t, a.Job.Known())
				assert.False(t, platform.Alive(a.PID, a.ProcessStart), "its runner is gone")
				if tc.zombie {
					assert.Contains(t, a.Outcome.Detail, "removed idle by GitHub; it stayed alive")
				} else {
					require.NotNil(t, a.ExitCode, a.Outcome.String())
					assert.Equal(t, 0, *a.ExitCode, "the runner exits 0, as the real one does")
				}
				t.Logf("%s: %s", a.ID, a.Outcome)
			}
			w.waitFor(60*time.Second, "a spare live again", func() bool {
				for _, a := range w.attempts() {
					if a.Live() && !seen[a.ID] {
						return true
					}
				}
				return false
			})
			for _, a := range w.attempts() {
				assert.NotEqual(t, rm.StateFailed, a.State, "%s: %s", a.ID, a.Outcome)
			}
		})
	}
}
