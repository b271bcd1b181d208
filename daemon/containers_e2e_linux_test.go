//go:build linux

package daemon_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/container/containertest"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// boxWorld is a daemon whose policies run in containers of the tests'
// image on the tests' engine, with a fake GitHub on loopback.
type boxWorld struct {
	world
	e     *container.Engine
	host  string // the engine's address
	image string
	logs  *syncBuffer
}

func newBoxWorld(t *testing.T, opts ...fakegithub.Option) boxWorld {
	t.Helper()
	e, host := containertest.Engine(t)
	image := containertest.RunnerImage(t)
	return boxWorld{world: newWorld(t, opts...), e: e, host: host, image: image, logs: &syncBuffer{}}
}

// daemon builds the world's daemon; engine "" is the tests' engine.
func (w boxWorld) daemon(t *testing.T, engine string) *daemon.Daemon {
	t.Helper()
	if engine == "" {
		engine = w.host
	}
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), ContainerHost: engine,
		SampleEvery: 100 * time.Millisecond, ClassicPoll: 500 * time.Millisecond, Logger: w.logger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	return d
}

// logger writes the daemon's log to the world's buffer (and to stderr
// with DAEMON_TEST_LOG set).
func (w boxWorld) logger(t *testing.T) *slog.Logger {
	var out = w.logs
	h := slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelInfo})
	if os.Getenv("DAEMON_TEST_LOG") != "" {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon log (tail):\n%s", tail(w.logs.String(), 60))
		}
	})
	return slog.New(h)
}

// policy writes a container policy named name of d's host: a scale set,
// or with classic a label set; edit changes it before it is written.
func (w boxWorld) policy(t *testing.T, d *daemon.Daemon, name string, classic bool, edit func(*rm.Policy)) rm.Policy {
	t.Helper()
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", name)
	if classic {
		target, err = rm.NewLabelTarget(scope, "", []string{name})
	}
	require.NoError(t, err)
	p := rm.Policy{ID: rm.NewPolicyID(), Name: name, Host: d.Host().ID, Target: target, Max: 4,
		MemoryEstimate: 64 << 20, Backend: rm.BackendContainer,
		// Host networking: the fake GitHub listens on loopback.
		Container: rm.ContainerSettings{Image: w.image, Network: "host"}}
	if edit != nil {
		edit(&p)
	}
	require.NoError(t, p.Validate())
	require.NoError(t, d.Store().InsertPolicy(t.Context(), p))
	return p
}

// enqueue queues n jobs for the policy's label.
func (w boxWorld) enqueue(n int, label string, classic bool, spec fakegithub.JobSpec) {
	spec.Repo, spec.Labels = repo, []string{label}
	if classic {
		spec.Labels = []string{"self-hosted", label}
	}
	for i := range n {
		s := spec
		s.Name = fmt.Sprintf("%s-%d", label, i)
		w.gh.EnqueueJob(s)
	}
}

// watch lists the host's containers every 50 ms until stop: every
// container seen (name → engine id) and the most running at once.
func (w boxWorld) watch(t *testing.T, host rm.HostID) (stop func() (seen map[string]string, peak int)) {
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	seen := map[string]string{}
	peak := 0
	var mislabelled []string
	var wg sync.WaitGroup
	wg.Go(func() {
		for ctx.Err() == nil {
			if list, err := w.e.Containers(ctx, host); err == nil {
				mu.Lock()
				running := 0
				for _, c := range list {
					seen[c.Name] = c.ID
					if c.Name != container.ContainerName(c.Attempt) {
						mislabelled = append(mislabelled, c.Name)
					}
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
	return func() (map[string]string, int) {
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, mislabelled, "each container's attempt label names its own attempt")
		return seen, peak
	}
}

// noContainers waits until the host has no runner container left.
func (w boxWorld) noContainers(t *testing.T, host rm.HostID) {
	t.Helper()
	require.Eventually(t, func() bool {
		list, err := w.e.Containers(t.Context(), host)
		return err == nil && len(list) == 0
	}, 30*time.Second, 100*time.Millisecond, "every attempt's container is removed")
}

// inspectAttempt waits for the attempt's container and returns its
// memory limit as the engine holds it.
func (w boxWorld) containerMemory(t *testing.T, a rm.AttemptID) int64 {
	t.Helper()
	cli, err := client.New(client.FromEnv, client.WithHost(w.host))
	require.NoError(t, err)
	defer cli.Close()
	var mem int64
	require.Eventually(t, func() bool {
		res, err := cli.ContainerInspect(t.Context(), container.ContainerName(a), client.ContainerInspectOptions{})
		if err != nil || res.Container.HostConfig == nil {
			return false
		}
		mem = res.Container.HostConfig.Memory
		return true
	}, 30*time.Second, 20*time.Millisecond, "attempt %s's container", a)
	return mem
}

// attempts are the policy's attempts, newest first.
func attemptsOf(t *testing.T, st store.Store, p rm.Policy) []rm.Attempt {
	t.Helper()
	as, err := st.Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	return as
}

// TestContainerE2EJobs: 50 jobs at max 4, in scale-set and in classic
// mode, each in its own container (its own name, engine id and labels),
// never more than 4 at once, none left afterwards, one runner per job.
func TestContainerE2EJobs(t *testing.T) {
	const jobs, most = 50, 4
	for _, mode := range []struct {
		name    string
		classic bool
	}{{"ScaleSet", false}, {"Classic", true}} {
		t.Run(mode.name, func(t *testing.T) {
			w := newBoxWorld(t)
			d := w.daemon(t, "")
			p := w.policy(t, d, "boxed", mode.classic, nil)
			watched := w.watch(t, d.Host().ID)
			began := time.Now()
			stop := start(t, d)
			w.enqueue(jobs, "boxed", mode.classic, fakegithub.JobSpec{Duration: 100 * time.Millisecond, MemoryBytes: 8 << 20})
			ctx, cancel := context.WithTimeout(t.Context(), 150*time.Second)
			defer cancel()
			require.NoError(t, w.gh.WaitJobsCompleted(ctx))
			took := time.Since(began)
			require.Eventually(t, func() bool { return ended(t, d.Store(), p) == jobs }, 30*time.Second, 100*time.Millisecond)
			w.noContainers(t, d.Host().ID)
			seen, peak := watched()
			require.NoError(t, stop())

			runners := map[string]bool{}
			for _, j := range w.gh.Jobs() {
				assert.Equal(t, "completed", j.Status)
				assert.Equal(t, 1, j.Starts, "job %d ran once", j.ID)
				runners[j.RunnerName] = true
			}
			assert.Len(t, runners, jobs, "one ephemeral runner per job")
			ids := map[string]bool{}
			for _, id := range seen {
				assert.False(t, ids[id], "container %s seen under two names", id)
				ids[id] = true
			}
			completed, withPID := 0, 0
			for _, a := range attemptsOf(t, d.Store(), p) {
				if a.Outcome.Kind != rm.CompletedJob {
					continue
				}
				completed++
				assert.NotEmpty(t, seen[container.ContainerName(a.ID)], "attempt %s ran in a container of its own", a.ID)
				if a.PID != 0 {
					withPID++
				}
			}
			assert.Equal(t, jobs, completed)
			assert.LessOrEqual(t, peak, most, "never more containers than the policy's max")
			assert.Empty(t, w.gh.Runners(), "no registration left")
			// A container whose runner is done before its launch returns
			// (a 100 ms job on a loaded machine) has no pid to record.
			t.Logf("%s: %d jobs at max %d in containers: %v (%d containers, %d ids, at most %d running at once, %d with their init pid recorded)",
				mode.name, jobs, most, took.Round(time.Millisecond), len(seen), len(ids), peak, withPID)
		})
	}
}

// TestContainerE2EMetered: a job allocating 256 MiB in a container is
// metered within 10 % of it through the daemon's meters, its peak is
// banked, and the memory limit of a policy limited from its peaks is twice
// the expected peak: the estimate's at first, the banked peak's after. A
// container policy that sets no limit is limited the same way.
func TestContainerE2EMetered(t *testing.T) {
	const alloc, estimate = 256 << 20, 200 << 20
	w := newBoxWorld(t)
	d := w.daemon(t, "")
	p := w.policy(t, d, "metered", false, func(p *rm.Policy) {
		p.Max, p.MemoryEstimate, p.MemoryLimit = 1, estimate, rm.MemoryLimitFromPeaks
	})
	unlimited := w.policy(t, d, "unlimited", false, func(p *rm.Policy) { p.Max, p.MemoryEstimate = 1, estimate })
	stop := start(t, d)
	w.enqueue(1, "metered", false, fakegithub.JobSpec{Duration: 3 * time.Second, MemoryBytes: alloc})
	w.enqueue(1, "unlimited", false, fakegithub.JobSpec{Duration: 3 * time.Second, MemoryBytes: 8 << 20})
	var other rm.Attempt
	require.Eventually(t, func() bool {
		as := attemptsOf(t, d.Store(), unlimited)
		if len(as) == 0 {
			return false
		}
		other = as[0]
		return true
	}, 30*time.Second, 20*time.Millisecond)
	assert.Equal(t, int64(2*estimate), w.containerMemory(t, other.ID), "a policy that sets no limit: twice its expected peak too")
	var first rm.Attempt
	require.Eventually(t, func() bool {
		as := attemptsOf(t, d.Store(), p)
		if len(as) == 0 {
			return false
		}
		first = as[0]
		return true
	}, 30*time.Second, 20*time.Millisecond)
	assert.Equal(t, int64(2*estimate), w.containerMemory(t, first.ID), "no peaks yet: twice the estimate")
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 1 }, 30*time.Second, 50*time.Millisecond)
	a, err := d.Store().Attempt(t.Context(), first.ID)
	require.NoError(t, err)
	t.Logf("a job allocating %d MiB metered at %d MiB over %d samples (%s)", alloc>>20, a.Usage.PeakRSSBytes>>20, a.Usage.Samples, a.Usage.Source)
	assert.GreaterOrEqual(t, a.Usage.PeakRSSBytes, uint64(alloc), "the meters see the job's memory")
	assert.LessOrEqual(t, a.Usage.PeakRSSBytes, uint64(alloc)*110/100, "within 10 %% of what the job allocated")
	assert.Equal(t, rm.UsageFromProcessTree, a.Usage.Source)

	// The journal's end is written before the meters bank the peak (the
	// pass concludes, then tells the meters): wait for the file.
	var peaks datadir.Peaks
	var loadErr error
	require.Eventually(t, func() bool {
		peaks, loadErr = datadir.LoadPeaks(datadir.New(w.dataDir).PeaksFile())
		return loadErr != nil || len(peaks.Policies[p.ID.String()]) > 0
	}, 10*time.Second, 20*time.Millisecond, "the peak is banked")
	require.NoError(t, loadErr)
	require.Len(t, peaks.Policies[p.ID.String()], 1, "the peak is banked once")
	banked := peaks.Policies[p.ID.String()][0]

	// The next attempt's limit follows the banked peak.
	w.enqueue(1, "metered", false, fakegithub.JobSpec{Duration: time.Second, MemoryBytes: 8 << 20})
	var second rm.Attempt
	require.Eventually(t, func() bool {
		for _, a := range attemptsOf(t, d.Store(), p) {
			if a.ID != first.ID {
				second = a
				return true
			}
		}
		return false
	}, 30*time.Second, 20*time.Millisecond)
	limit := w.containerMemory(t, second.ID)
	assert.GreaterOrEqual(t, limit, int64(2*banked), "twice at least the banked peak of %d MiB", banked>>20)
	t.Logf("container memory limits: %d MiB (estimate %d MiB), then %d MiB (banked peak %d MiB)", 2*estimate>>20, estimate>>20, limit>>20, banked>>20)
	ctx2, cancel2 := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel2()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx2))
	w.noContainers(t, d.Host().ID)
	require.NoError(t, stop())
}

// TestContainerE2EOOMKilled: a job over its policy's memory limit is
// concluded Failed(OOMKilled), its container ran at the limit, and the
// limit is banked as its peak (the job needed at least that).
func TestContainerE2EOOMKilled(t *testing.T) {
	const limit = rm.MinMemoryLimit // 256 MiB
	w := newBoxWorld(t)
	d := w.daemon(t, "")
	p := w.policy(t, d, "heavy", false, func(p *rm.Policy) { p.Max, p.MemoryLimit = 1, limit })
	stop := start(t, d)
	w.enqueue(1, "heavy", false, fakegithub.JobSpec{Duration: 10 * time.Second, MemoryBytes: 2 * limit})
	var a rm.Attempt
	require.Eventually(t, func() bool {
		as := attemptsOf(t, d.Store(), p)
		if len(as) == 0 {
			return false
		}
		a = as[len(as)-1]
		return true
	}, 30*time.Second, 20*time.Millisecond)
	assert.Equal(t, int64(limit), w.containerMemory(t, a.ID), "the policy's limit")
	require.Eventually(t, func() bool {
		got, err := d.Store().Attempt(t.Context(), a.ID)
		require.NoError(t, err)
		a = got
		return a.State.Ended()
	}, 60*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())
	t.Logf("outcome %s, exit code %v, peak %d MiB", a.Outcome, deref(a.ExitCode), a.Usage.PeakRSSBytes>>20)
	assert.Equal(t, rm.Failed, a.Outcome.Kind)
	assert.Equal(t, rm.OOMKilled, a.Outcome.Reason)
	assert.Contains(t, a.Outcome.Detail, "at its memory limit of 256MiB")
	assert.Contains(t, w.logs.String(), "oom_killed", "the conclusion is logged with its reason")
	peaks, err := datadir.LoadPeaks(datadir.New(w.dataDir).PeaksFile())
	require.NoError(t, err)
	require.Len(t, peaks.Policies[p.ID.String()], 1, "an OOM kill's peak counts")
	assert.GreaterOrEqual(t, peaks.Policies[p.ID.String()][0], uint64(limit), "the job needed the limit at least")
	w.noContainers(t, d.Host().ID)
}

func deref(p *int) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestContainerE2ELaunchFailures: an image that is not on the engine (a
// local one: never pulled), a pull that fails, an engine that is down:
// each attempt concluded with its own reason, logged, its registration
// removed and no container left.
func TestContainerE2ELaunchFailures(t *testing.T) {
	for _, tc := range []struct {
		name, image string
		engineDown  bool
		reason      rm.FailureReason
		says        string
	}{
		{"ImageMissing", "localhost/runner-manager-absent:none", false, rm.ImageMissing, "container image missing"},
		{"PullFailed", "127.0.0.1:1/runner-manager-absent:none", false, rm.ImagePullFailed, "pull failed"},
		{"EngineDown", "", true, rm.BackendUnavailable, "container engine unreachable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newBoxWorld(t)
			engine := ""
			if tc.engineDown {
				engine = "unix://" + filepath.Join(t.TempDir(), "nobody.sock")
			}
			d := w.daemon(t, engine)
			p := w.policy(t, d, "failing", false, func(p *rm.Policy) {
				p.Max = 1
				if tc.image != "" {
					p.Container.Image = tc.image
				}
			})
			stop := start(t, d)
			w.enqueue(1, "failing", false, fakegithub.JobSpec{Duration: time.Second})
			var failed rm.Attempt
			require.Eventually(t, func() bool {
				for _, a := range attemptsOf(t, d.Store(), p) {
					if a.State == rm.StateFailed {
						failed = a
						return true
					}
				}
				return false
			}, 60*time.Second, 50*time.Millisecond)
			require.NoError(t, stop())
			assert.Equal(t, tc.reason, failed.Outcome.Reason, "outcome %s", failed.Outcome)
			assert.Contains(t, failed.Outcome.Detail, tc.says)
			assert.Contains(t, w.logs.String(), `msg="launch failed"`)
			assert.Contains(t, w.logs.String(), "reason="+string(tc.reason))
			assert.Empty(t, w.gh.Runners(), "the failed launch's registration is removed")
			if !tc.engineDown {
				w.noContainers(t, d.Host().ID)
			}
			t.Logf("%s: %s", tc.name, failed.Outcome)
		})
	}
}

// boxChildEnv carries the killed daemon's world from its parent test.
const boxChildEnv = "RUNNER_MANAGER_BOX_CHILD"

type boxChild struct {
	URL, APIURL, DataDir, Engine string
}

// TestContainerE2EChildDaemon is the daemon that
// TestContainerE2EKilledDaemon runs in a child process and kills with
// SIGKILL.
func TestContainerE2EChildDaemon(t *testing.T) {
	raw := os.Getenv(boxChildEnv)
	if raw == "" {
		t.Skip("the daemon child of TestContainerE2EKilledDaemon")
	}
	var c boxChild
	require.NoError(t, json.Unmarshal([]byte(raw), &c))
	d, err := daemon.New(daemon.Config{DataDir: c.DataDir, ContainerHost: c.Engine, SampleEvery: 100 * time.Millisecond,
		GitHub: github.Config{WebURL: c.URL, APIURL: c.APIURL, Token: token},
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	require.NoError(t, err)
	_ = d.Run(context.Background()) // until killed
}

// TestContainerE2EKilledDaemon kills the daemon (a child process) with
// SIGKILL while containers run jobs, and starts it again on the same data
// directory: every job runs once, the containers alive at the kill are
// re-adopted (or, ended meanwhile, concluded), and nothing leaks: no
// container, no registration, no attempt directory, no live attempt.
func TestContainerE2EKilledDaemon(t *testing.T) {
	if os.Getenv(boxChildEnv) != "" {
		t.Skip("in the child")
	}
	const jobs = 16
	// A runner the restart stops with the job it was handed is failed by
	// GitHub after a while; the fake's 10 min, cut to 10 s here.
	w := newBoxWorld(t, fakegithub.WithRunnerLostAfter(10*time.Second))
	first := w.daemon(t, "")
	p := w.policy(t, first, "killed", false, nil)
	hostID := first.Host().ID
	require.NoError(t, first.Close())
	w.enqueue(jobs, "killed", false, fakegithub.JobSpec{Duration: 1500 * time.Millisecond, MemoryBytes: 8 << 20})

	raw, err := json.Marshal(boxChild{URL: w.gh.URL(), APIURL: w.gh.APIURL(), DataDir: w.dataDir, Engine: w.host})
	require.NoError(t, err)
	child := exec.Command(os.Args[0], "-test.run=^TestContainerE2EChildDaemon$", "-test.count=1")
	child.Env = append(os.Environ(), boxChildEnv+"="+string(raw))
	var out syncBuffer
	child.Stdout, child.Stderr = &out, &out
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		if t.Failed() {
			t.Logf("killed daemon's log:\n%s", tail(out.String(), 80))
		}
	})

	// Kill it mid-run: some jobs done, containers busy with others.
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitFor(ctx, func() bool {
		done, running := 0, 0
		for _, j := range w.gh.Jobs() {
			switch j.Status {
			case "completed":
				done++
			case "in_progress":
				running++
			}
		}
		return done >= 4 && running >= 2
	}), "the child daemon makes progress")
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	atKill, err := w.e.Containers(t.Context(), hostID)
	require.NoError(t, err)
	running := 0
	for _, c := range atKill {
		if c.Running {
			running++
		}
	}
	t.Logf("daemon killed with %d containers (%d running)", len(atKill), running)

	// Restart, in this process: the same data directory, journal, host.
	d := w.daemon(t, "")
	require.Equal(t, hostID, d.Host().ID)
	stop := start(t, d)
	wctx, wcancel := context.WithTimeout(t.Context(), 120*time.Second)
	defer wcancel()
	require.NoError(t, w.gh.WaitJobsCompleted(wctx))
	require.Eventually(t, func() bool {
		live, err := d.Store().LiveAttempts(t.Context(), hostID)
		return err == nil && len(live) == 0
	}, 60*time.Second, 100*time.Millisecond, "every attempt concluded")
	w.noContainers(t, hostID)
	// Every registration goes, that of an attempt the kill caught between
	// its JIT registration and its launch's record included: its runner
	// may have been handed a job and stopped with it at the restart, and
	// GitHub (the fake) holds it busy until it fails that job; the daemon
	// asks for its removal again every 15 s (reconcile/removals.go).
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		var left []string
		for _, r := range w.gh.Runners() {
			left = append(left, fmt.Sprintf("%s (online %v, busy %v)", r.Name, r.Online, r.Busy))
		}
		assert.Empty(c, left, "no registration left")
	}, 90*time.Second, 100*time.Millisecond)
	require.NoError(t, stop())

	runners := map[string]bool{}
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, "completed", j.Status)
		assert.Equal(t, 1, j.Starts, "job %d ran exactly once", j.ID)
		assert.False(t, runners[j.RunnerName], "runner %s ran two jobs", j.RunnerName)
		runners[j.RunnerName] = true
	}
	outcomes := map[string]int{}
	completed := map[string]bool{}
	for _, a := range attemptsOf(t, d.Store(), p) {
		outcomes[a.Outcome.String()]++
		if a.Outcome.Kind == rm.CompletedJob && a.Job.Known() {
			assert.False(t, completed[a.Job.ID], "job %s concluded twice", a.Job.ID)
			completed[a.Job.ID] = true
		}
	}
	t.Logf("outcomes: %v", outcomes)
	assert.GreaterOrEqual(t, len(completed), jobs-running, "every job's attempt concluded CompletedJob, but perhaps those running at the kill")
	if running > 0 {
		logs := w.logs.String()
		assert.True(t, strings.Contains(logs, "re-adopted runner process") || strings.Contains(logs, "runner ended while the manager was down"),
			"the containers alive at the kill were looked for")
	}
	entries, err := os.ReadDir(filepath.Join(w.dataDir, "attempts"))
	if err == nil {
		for _, e := range entries {
			assert.Equal(t, "failed-containers", e.Name(), "no attempt directory left")
		}
	}
}

// syncBuffer is a buffer safe for a process's or a logger's concurrent
// writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
