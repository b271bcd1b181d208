//go:build linux

package reconcile_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/storetest"
)

const (
	e2eToken = "ghp_e2eTokenNeverPrinted0123456789"
	e2eRepo  = "acme/app"
	e2eSet   = "e2e"
)

// world is the whole system over real parts: the fake GitHub, the real
// clients, a real journal, the native launcher starting fake runner
// processes, the meters sampling their real process trees.
type world struct {
	t       *testing.T
	mode    rm.Mode
	poll    time.Duration
	fake    *fakegithub.Server
	client  *github.Client
	dataDir string
	install string
	st      *sqlite.Store
	host    rm.Host
	policy  rm.Policy
	meters  *meter.AttemptMeters
	logs    *syncBuffer
	log     *slog.Logger
}

// worldOpts shapes a world.
type worldOpts struct {
	mode      rm.Mode
	max       int
	minIdle   int
	spare     int
	estimate  uint64
	runnerDir string // "" → the fake runner install
	// poll is classic mode's demand poll (100 ms when 0).
	poll time.Duration
	fake []fakegithub.Option
	// dataDir and host reuse a world's (a restart).
	dataDir string
	host    rm.Host
	policy  rm.Policy
}

func newWorld(t *testing.T, o worldOpts) *world {
	t.Helper()
	if o.max == 0 {
		o.max = 4
	}
	if o.estimate == 0 {
		o.estimate = 64 << 20
	}
	if o.poll == 0 {
		o.poll = 100 * time.Millisecond
	}
	w := &world{t: t, mode: o.mode, poll: o.poll, logs: &syncBuffer{}, install: githubtest.BuildFakeRunner(t)}
	w.log = slog.New(slog.NewTextHandler(w.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	w.fake = githubtest.NewTestServer(t, append([]fakegithub.Option{fakegithub.WithToken(e2eToken), fakegithub.WithRepo(e2eRepo)}, o.fake...)...)
	c, err := github.New(github.Config{WebURL: w.fake.URL(), APIURL: w.fake.APIURL(), Token: e2eToken, Logger: w.log})
	require.NoError(t, err)
	w.client = c
	w.dataDir = o.dataDir
	if w.dataDir == "" {
		w.dataDir = t.TempDir()
	}
	w.openJournal()
	ctx := t.Context()
	if o.host.ID.IsZero() {
		w.host = storetest.NewHost().Build()
		require.NoError(t, w.st.PutHost(ctx, w.host))
		runnerDir := o.runnerDir
		if runnerDir == "" {
			runnerDir = w.install
		}
		pb := storetest.NewPolicy().Name("e2e").Repository(e2eRepo).Host(w.host.ID).RunnerDir(runnerDir).
			MemoryEstimate(o.estimate).MinIdle(o.minIdle).Spare(o.spare)
		if o.mode == rm.ModeClassic {
			pb = pb.Labels(e2eSet).Max(o.max)
		} else {
			pb = pb.Autoscale(e2eSet, o.max)
		}
		w.policy = pb.Build()
		require.NoError(t, w.st.InsertPolicy(ctx, w.policy))
	} else {
		w.host, w.policy = o.host, o.policy
	}
	w.meters = meter.New(filepath.Join(w.dataDir, "state", "memory-peaks.toml"))
	t.Cleanup(func() {
		if strings.Contains(w.logs.String(), e2eToken) {
			t.Errorf("the token reached a log")
		}
		if t.Failed() {
			t.Logf("manager log:\n%s", tail(w.logs.String(), 200))
		}
	})
	return w
}

// jobID is the id the journal names fake job j by, in the world's mode: its
// REST number in decimal in classic mode, else the jobId of its scale-set
// messages (a UUID unless the fake was told otherwise), or its
// runnerRequestId in decimal where they carry none.
func (w *world) jobID(j fakegithub.JobRecord) string {
	switch {
	case w.mode == rm.ModeClassic:
		return strconv.FormatInt(j.ID, 10)
	case j.ScaleSetJobID == "":
		return strconv.FormatInt(j.RequestID, 10)
	}
	return j.ScaleSetJobID
}

// jobIDOf is jobID of the fake's job numbered id.
func (w *world) jobIDOf(id int64) string {
	w.t.Helper()
	j, ok := w.fake.Job(id)
	require.True(w.t, ok, "job %d", id)
	return w.jobID(j)
}

func (w *world) openJournal() {
	st, err := sqlite.Open(filepath.Join(w.dataDir, "journal.db"))
	require.NoError(w.t, err)
	w.st = st
	w.t.Cleanup(func() { _ = st.Close() })
}

func tail(s string, lines int) string {
	ls := strings.Split(s, "\n")
	if len(ls) > lines {
		ls = ls[len(ls)-lines:]
	}
	return strings.Join(ls, "\n")
}

// targets makes the GitHub side of a policy, in the world's mode.
func (w *world) targets(ctx context.Context, p rm.Policy) (reconcile.Target, error) {
	prefix := rm.RunnerNamePrefix(w.host.ID)
	if p.Target.Mode() == rm.ModeClassic {
		return targetOf(github.NewClassicTarget(w.client, p.Target, github.ClassicOptions{NamePrefix: prefix, PollInterval: w.poll, Logger: w.log}))
	}
	return targetOf(github.NewScaleSetTarget(ctx, w.client, p.Target, github.ScaleSetOptions{
		Owner: w.host.Name, HostID: w.host.ID.String(), Journal: w.st,
		DisableUpdate: true, NamePrefix: prefix, Logger: w.log, CapacityCheck: 50 * time.Millisecond}))
}

// supervisorConfig is the manager's wiring with test timings.
func (w *world) supervisorConfig(launcher rm.Launcher, adm *reconcile.Admission) reconcile.SupervisorConfig {
	if launcher == nil {
		native := native.NewLauncher(w.dataDir, native.WithLogger(w.log))
		w.t.Cleanup(func() { _ = native.Close() }) // the empty cgroups of runners a test killed itself
		launcher = native
	}
	machine := platform.NewMachine()
	if adm == nil {
		adm = &reconcile.Admission{Memory: machine, DiskFree: machine.DiskFree, DiskPath: w.dataDir}
	}
	return reconcile.SupervisorConfig{
		Store: w.st, Host: w.host, Launcher: launcher, Meters: w.meters, Targets: w.targets,
		Machine: machine, Installs: runnerpkg.Installs{DataDir: w.dataDir},
		Admission: adm, Logger: w.log, AttemptsDir: datadir.New(w.dataDir).Attempts(), RefreshEvery: 200 * time.Millisecond,
		SampleEvery: 25 * time.Millisecond, Budget: w.client.Budget,
		Loop: reconcile.LoopOptions{
			ActiveRequeue: 250 * time.Millisecond, RunnerListEvery: 300 * time.Millisecond,
			JobWordGrace: 2 * time.Second, ScaleDownAfter: -1, StopGrace: 2 * time.Second,
			BackoffBase: 100 * time.Millisecond, BackoffMax: time.Second,
		},
	}
}

// run runs a supervisor until the test ends (or stop is called).
func (w *world) run(cfg reconcile.SupervisorConfig) (sup *reconcile.Supervisor, stop func()) {
	w.t.Helper()
	return runSupervisor(w.t, cfg, 30*time.Second)
}

// enqueue queues n jobs for the world's target.
func (w *world) enqueue(n int, d time.Duration, mem uint64) []int64 {
	labels := []string{e2eSet}
	if w.mode == rm.ModeClassic {
		labels = []string{"self-hosted", e2eSet}
	}
	ids := make([]int64, n)
	for i := range n {
		ids[i] = w.fake.EnqueueJob(fakegithub.JobSpec{Repo: e2eRepo, Labels: labels, Duration: d, MemoryBytes: mem, CPUMillicores: 200})
	}
	return ids
}

// liveProcesses counts the journal's live attempts whose runner process is
// alive.
func (w *world) liveProcesses() int {
	as, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
	if err != nil {
		return -1
	}
	n := 0
	for _, a := range as {
		if a.PID != 0 && platform.Alive(a.PID, a.ProcessStart) {
			n++
		}
	}
	return n
}

// sampleLive samples liveProcesses every 5 ms until stop, returning the
// largest count seen.
func (w *world) sampleLive() (stop func() int) {
	done := make(chan struct{})
	peak := make(chan int, 1)
	go func() {
		most := 0
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			most = max(most, w.liveProcesses())
			select {
			case <-done:
				peak <- most
				return
			case <-t.C:
			}
		}
	}()
	return func() int {
		close(done)
		return <-peak
	}
}

// waitJobs waits until every job completed.
func (w *world) waitJobs(d time.Duration) {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	if err := w.fake.WaitJobsCompleted(ctx); err != nil {
		done := 0
		for _, j := range w.fake.Jobs() {
			if j.Status == "completed" {
				done++
			}
		}
		w.t.Fatalf("jobs not completed after %s: %d of %d done", d, done, len(w.fake.Jobs()))
	}
}

// maxOverlap is the most jobs the fake saw running at once.
func maxOverlap(jobs []fakegithub.JobRecord) int {
	most := 0
	for _, a := range jobs {
		n := 0
		for _, b := range jobs {
			if !b.StartedAt.After(a.StartedAt) && b.CompletedAt.After(a.StartedAt) {
				n++
			}
		}
		most = max(most, n)
	}
	return most
}

// attempts lists every attempt of the world's policy.
func (w *world) attempts() []rm.Attempt {
	as, err := w.st.Attempts(context.Background(), store.AttemptFilter{Policy: w.policy.ID})
	require.NoError(w.t, err)
	return as
}

// settled waits until nothing is left: no live attempt, no registration
// with the host's prefix, no runner process, no attempt directory.
func (w *world) settled(d time.Duration) {
	w.t.Helper()
	prefix := rm.RunnerNamePrefix(w.host.ID)
	var why string
	ok := assert.Eventually(w.t, func() bool {
		live, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
		if err != nil || len(live) > 0 {
			why = fmt.Sprintf("%d live attempts", len(live))
			return false
		}
		for _, r := range w.fake.Runners() {
			if strings.HasPrefix(r.Name, prefix) {
				why = "registration " + r.Name + " left"
				return false
			}
		}
		if n := countRunnerProcesses(w.dataDir); n > 0 {
			why = fmt.Sprintf("%d runner processes left", n)
			return false
		}
		entries, _ := os.ReadDir(filepath.Join(w.dataDir, "attempts"))
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), ".") { // .failed (kept for debugging) and .spare (prepared roots)
				why = "attempt directory " + e.Name() + " left"
				return false
			}
		}
		return true
	}, d, 20*time.Millisecond)
	if !ok {
		w.t.Fatalf("not settled: %s", why)
	}
}

// countRunnerProcesses counts live (not zombie) processes working under
// <dataDir>/attempts/.
func countRunnerProcesses(dataDir string) int {
	under := filepath.Join(dataDir, "attempts") + "/"
	entries, _ := os.ReadDir("/proc")
	n := 0
	for _, e := range entries {
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd, under) {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			continue
		}
		n++
	}
	return n
}

func TestE2EFiftyJobs(t *testing.T) {
	for _, mode := range []rm.Mode{rm.ModeScaleSet, rm.ModeClassic} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t, worldOpts{mode: mode, max: 4})
			ids := w.enqueue(50, 250*time.Millisecond, 16<<20)
			sup, stopSup := w.run(w.supervisorConfig(nil, nil))
			stopSample := w.sampleLive()
			start := time.Now()
			w.waitJobs(90 * time.Second)
			elapsed := time.Since(start)
			peak := stopSample()
			w.settled(30 * time.Second)
			// An attempt concluded from its runner's Worker log gets its
			// job's name from GitHub's next word.
			require.Eventually(t, func() bool {
				for _, a := range w.attempts() {
					if a.Outcome.Kind == rm.CompletedJob && !a.Job.Known() {
						return false
					}
				}
				return true
			}, 10*time.Second, 20*time.Millisecond, "every completed job is named")
			st := sup.Status()
			stopSup()
			t.Logf("%s: 50 jobs in %s, at most %d runners at once", mode, elapsed.Round(time.Millisecond), peak)

			assert.LessOrEqual(t, peak, 4, "never more than max live")
			assert.Positive(t, peak)
			jobs := w.fake.Jobs()
			require.Len(t, jobs, 50)
			assert.LessOrEqual(t, maxOverlap(jobs), 4)
			runners := map[string]string{}
			for _, j := range jobs {
				assert.Equal(t, "succeeded", j.Result, "job %d", j.ID)
				assert.Equal(t, 1, j.Starts, "job %d ran once", j.ID)
				if prev, dup := runners[j.RunnerName]; dup {
					t.Errorf("jobs %s and %d ran on one runner %s", prev, j.ID, j.RunnerName)
				}
				runners[j.RunnerName] = w.jobID(j)
			}

			byJob := map[string]rm.Attempt{}
			metered := 0
			for _, a := range w.attempts() {
				switch a.Outcome.Kind {
				case rm.CompletedJob:
					_, dup := byJob[a.Job.ID]
					assert.False(t, dup, "job %s concluded twice", a.Job.ID)
					byJob[a.Job.ID] = a
					assert.Equal(t, runners[a.RunnerName], a.Job.ID, "the journal names the job its runner ran")
					if mode == rm.ModeClassic {
						assert.Equal(t, a.Job.ID, strconv.FormatInt(a.Job.Number, 10), "a classic job keeps its REST number")
					} else {
						assert.Zero(t, a.Job.Number, "scale-set messages carry no REST number")
					}
					require.NotNil(t, a.ExitCode)
					assert.Equal(t, 0, *a.ExitCode)
					if a.Usage.Samples > 0 && a.Usage.PeakRSSBytes > 0 {
						metered++
					}
				case rm.ExitedIdleWithoutWork:
					// A spare runner for a demand figure that lagged: fine.
				default:
					t.Errorf("attempt %s: %s", a.ID, a.Outcome)
				}
			}
			for _, id := range ids {
				assert.Contains(t, byJob, w.jobIDOf(id), "job %d has its CompletedJob attempt", id)
			}
			assert.GreaterOrEqual(t, metered, 40, "most attempts carry their usage")
			limit, remaining, _ := w.fake.RateLimit()
			t.Logf("%s: %d of 50 attempts metered; %d REST requests (%d of the budget), %d scale-set calls; %d policies",
				mode, metered, w.fake.CallsREST(), limit-remaining, w.fake.CallsScaleSet(), len(st.Policies))
		})
	}
}
