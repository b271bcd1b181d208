package github_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// managedTarget is what the manager asks of a target (reconcile.Target).
type managedTarget interface {
	JITConfig(ctx context.Context, runnerName string) (rm.JITConfig, error)
	RemoveRunner(ctx context.Context, id int64) error
	Runners(ctx context.Context, namePrefix string) ([]rm.Runner, error)
	LookupRunner(ctx context.Context, id int64, name string) (rm.Runner, bool, error)
	Watch(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error
	Close(ctx context.Context) error
}

// miniManager is the least a manager does with a target: on each demand
// report it looks at GitHub's runners (as a reconcile pass observes them),
// then starts fake runners with JIT configurations until the live ones
// cover the demand, up to max.
type miniManager struct {
	t       *testing.T
	target  managedTarget
	install string
	max     int
	// quiet: a runner's exit nudges no poll (the real loop does not nudge
	// its target; a test that counts polls wants none but its own).
	quiet bool

	mu      sync.Mutex
	procs   []*exec.Cmd
	exited  map[*exec.Cmd]chan struct{}
	started int
	events  []rm.JobEvent
	wants   []int
	regs    []rm.JITConfig
}

func (m *miniManager) alive() int {
	n := 0
	for _, p := range m.procs {
		select {
		case <-m.exited[p]:
		default:
			n++
		}
	}
	return n
}

func (m *miniManager) report(d rm.Demand) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.events = append(m.events, d.Events...)
	m.wants = append(m.wants, d.Wanted)
	ctx := context.Background()
	if _, err := m.registrations(ctx); err != nil {
		m.t.Errorf("runners: %v", err)
		return
	}
	for alive := m.alive(); alive < min(d.Wanted, m.max); alive++ {
		name := fmt.Sprintf("%se2e-%03d", prefix, m.started)
		m.started++
		jit, err := m.target.JITConfig(ctx, name)
		if err != nil {
			m.t.Errorf("JIT config for %s: %v", name, err)
			return
		}
		m.regs = append(m.regs, jit)
		m.launch(jit)
	}
}

// registrations lists the target's runners of this manager, or, where
// the target cannot list them (scale-set mode), looks up each one it
// registered.
func (m *miniManager) registrations(ctx context.Context) ([]rm.Runner, error) {
	runners, err := m.target.Runners(ctx, prefix)
	if !errors.Is(err, rm.ErrCannotList) {
		return runners, err
	}
	runners = nil
	for _, jit := range m.regs {
		r, found, err := m.target.LookupRunner(ctx, jit.RunnerID, "")
		if err != nil {
			return nil, err
		}
		if found {
			runners = append(runners, r)
		}
	}
	return runners, nil
}

// launch starts a fake runner in a root of its own, as the launcher does.
func (m *miniManager) launch(jit rm.JITConfig) {
	root := m.t.TempDir()
	bin := filepath.Join(root, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		m.t.Error(err)
		return
	}
	name := fakegithub.ListenerName()
	if err := os.Link(filepath.Join(m.install, "bin", name), filepath.Join(bin, name)); err != nil {
		m.t.Error(err)
		return
	}
	_ = os.Symlink(filepath.Join(m.install, "externals"), filepath.Join(root, "externals"))
	cmd := exec.Command(filepath.Join(bin, name), "run")
	cmd.Env = append(os.Environ(), "ACTIONS_RUNNER_INPUT_JITCONFIG="+jit.Encoded)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		m.t.Error(err)
		return
	}
	done := make(chan struct{})
	m.procs = append(m.procs, cmd)
	m.exited[cmd] = done
	go func() {
		_ = cmd.Wait()
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			m.t.Errorf("runner %s exited %d: %s", jit.RunnerName, code, out.String())
		}
		close(done)
		if n, ok := m.target.(interface{ Nudge() }); ok && !m.quiet {
			n.Nudge() // a runner exited: look now
		}
	}()
}

// registerAndLaunch registers a runner named name with the target and
// launches it.
func (m *miniManager) registerAndLaunch(name string) rm.JITConfig {
	m.t.Helper()
	jit, err := m.target.JITConfig(m.t.Context(), name)
	require.NoError(m.t, err)
	m.launch(jit)
	return jit
}

// drain removes the registrations left (spare runners a late demand figure
// asked for), as scale-down does, and waits for every runner to exit.
func (m *miniManager) drain(ctx context.Context) {
	m.mu.Lock()
	runners, err := m.registrations(ctx)
	m.mu.Unlock()
	require.NoError(m.t, err)
	for _, r := range runners {
		require.NoError(m.t, m.target.RemoveRunner(ctx, r.ID), "an idle runner is removed")
	}
	m.mu.Lock()
	procs := slices.Clone(m.procs)
	m.mu.Unlock()
	for _, p := range procs {
		select {
		case <-m.exited[p]:
		case <-ctx.Done():
			_ = p.Process.Kill()
			m.t.Errorf("a runner did not exit after its registration was removed")
			<-m.exited[p]
		}
	}
}

// TestEndToEndCallsPerJob serves jobs with fake runners in each mode and
// auth kind and counts the calls GitHub sees per served job.
func TestEndToEndCallsPerJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs fake runners")
	}
	install := githubtest.BuildFakeRunner(t)
	const jobs, max = 8, 4
	for _, mode := range []string{"classic", "scale-set"} {
		for _, kind := range []string{"PAT", "App"} {
			t.Run(mode+"/"+kind, func(t *testing.T) {
				t.Parallel()
				env := newFakeEnv(t, kind)
				var target managedTarget
				var labels []string
				switch mode {
				case "classic":
					target = newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: 250 * time.Millisecond})
					labels = []string{"self-hosted", "linux", "gpu"}
				default:
					target = newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
					labels = []string{setName}
				}
				env.fake.ResetCalls()
				_, startRemaining, _ := env.fake.RateLimit()

				m := &miniManager{t: t, target: target, install: install, max: max, exited: map[*exec.Cmd]chan struct{}{}}
				for i := range jobs {
					env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: labels, Name: fmt.Sprintf("build-%d", i), Duration: 100 * time.Millisecond})
				}
				ctx, cancel := context.WithCancel(context.Background())
				watchDone := make(chan error, 1)
				go func() { watchDone <- target.Watch(ctx, func() int { return max }, m.report) }()
				t.Cleanup(cancel)

				require.NoError(t, env.fake.WaitJobsCompleted(waitCtx(t, 60*time.Second)))
				// Let the last events arrive, then measure the idle cost.
				require.Eventually(t, func() bool {
					m.mu.Lock()
					defer m.mu.Unlock()
					return len(eventsOf(m.events, rm.JobCompleted)) >= jobs
				}, 10*time.Second, 20*time.Millisecond, "every job's completion is reported")
				// Every runner that took a job exits and deregisters; then
				// two poll intervals let the last changes be seen.
				require.Eventually(t, func() bool {
					m.mu.Lock()
					defer m.mu.Unlock()
					ours := 0
					for _, r := range env.fake.Runners() {
						if r.Busy || r.JobID != 0 {
							ours++
						}
					}
					return ours == 0 && m.alive() <= m.started-jobs
				}, 10*time.Second, 20*time.Millisecond)
				time.Sleep(600 * time.Millisecond)
				busyCalls := env.fake.CallLog()
				_, remaining, _ := env.fake.RateLimit()
				busyQuota := startRemaining - remaining

				idleFrom := len(env.fake.CallLog())
				time.Sleep(time.Second) // an idle second: what does waiting cost?
				idle := env.fake.CallLog()[idleFrom:]
				_, idleRemaining, _ := env.fake.RateLimit()
				cancel()
				require.NoError(t, <-watchDone)
				m.drain(waitCtx(t, 10*time.Second))
				require.NoError(t, target.Close(context.Background()))
				m.mu.Lock()
				runnersLeft, err := m.registrations(context.Background())
				m.mu.Unlock()
				require.NoError(t, err)
				assert.Empty(t, runnersLeft, "no registration is left behind")

				recs := env.fake.Jobs()
				seen := map[int64]bool{}
				for _, j := range recs {
					assert.Equal(t, "completed", j.Status)
					assert.Equal(t, 1, j.Starts, "job %d ran once", j.ID)
					assert.False(t, seen[j.RunnerID], "job %d on a runner of its own", j.ID)
					seen[j.RunnerID] = true
				}
				m.mu.Lock()
				started, completed := eventsOf(m.events, rm.JobStarted), eventsOf(m.events, rm.JobCompleted)
				assert.Len(t, started, jobs, "one JobStarted per job")
				assert.Len(t, completed, jobs, "one JobCompleted per job")
				for _, e := range completed {
					assert.True(t, strings.HasPrefix(e.RunnerName, prefix), "completed on our runner %q", e.RunnerName)
				}
				// A job's events name it as its source does: the scale-set
				// messages by their jobId (a UUID, no REST number), classic
				// mode by its REST number.
				byName := map[string]fakegithub.JobRecord{}
				for _, j := range recs {
					byName[j.Name] = j
				}
				for _, e := range append(started, completed...) {
					j := byName[e.DisplayName]
					wantID, wantNumber := strconv.FormatInt(j.ID, 10), j.ID
					if mode == "scale-set" {
						wantID, wantNumber = j.ScaleSetJobID, 0
						_, err := uuid.Parse(e.JobID)
						assert.NoError(t, err, "a UUID jobId: %q", e.JobID)
					}
					assert.Equal(t, wantID, e.JobID, "%s of %s", e.Kind, e.DisplayName)
					assert.Equal(t, wantNumber, e.JobNumber, "%s of %s", e.Kind, e.DisplayName)
				}
				spare := m.started - jobs
				assert.GreaterOrEqual(t, spare, 0)
				assert.LessOrEqual(t, spare, max, "a late figure may start a spare runner, never a storm")
				m.mu.Unlock()

				restCalls, ssCalls := byKind(busyCalls, fakegithub.KindREST), byKind(busyCalls, fakegithub.KindScaleSet)
				t.Logf("%s/%s: %d jobs, %d runners: REST %d requests (%.2f/job), quota charged %d (%.2f/job); scale-set service %d (%.2f/job); idle second: %d requests, %d quota",
					mode, kind, jobs, m.started, len(restCalls), float64(len(restCalls))/jobs, busyQuota, float64(busyQuota)/jobs,
					len(ssCalls), float64(len(ssCalls))/jobs, len(idle), remaining-idleRemaining)
				t.Logf("REST routes: %s", routeCounts(restCalls))
				t.Logf("scale-set routes: %s", routeCounts(ssCalls))
				assert.Equal(t, 0, remaining-idleRemaining, "idle costs no quota")
				if mode == "scale-set" {
					assert.Empty(t, byKind(idle, fakegithub.KindREST), "scale-set mode sends no REST request while idle")
				}
			})
		}
	}
}

func byKind(calls []fakegithub.Call, kind string) []fakegithub.Call {
	var out []fakegithub.Call
	for _, c := range calls {
		if c.Kind == kind {
			out = append(out, c)
		}
	}
	return out
}

func routeCounts(calls []fakegithub.Call) string {
	n := map[string]int{}
	for _, c := range calls {
		n[fmt.Sprintf("%s %d", c.Route, c.Status)]++
	}
	keys := make([]string, 0, len(n))
	for k := range n {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %4d  %s", n[k], k)
	}
	return b.String()
}
