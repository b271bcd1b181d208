// Package simulate owns the simulation of a busy day: the whole manager
// (journal, supervisor, native launcher, meters, admission), run through
// the daemon's own entry point (daemon) against the fake GitHub
// of simulate/fakegithub, whose fake runners are real processes
// that use the memory and CPU their jobs ask for. It needs no token and no
// installed runner. `runner-manager demo` and examples/simulate are thin
// programs over it.
//
// The fake runner is a program that acts as the runner's listener when its
// file is named Runner.Listener (busybox style): the demo hard-links its own
// executable into a runner directory. A program that uses this package
// calls RunFakeRunnerIfNamed first thing in main.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
	"github.com/runner-manager/runner-manager/store"
)

// Repo is the repository the simulated jobs belong to.
const Repo = "demo/app"

// Options shape a simulation; zero fields take the defaults.
type Options struct {
	// Jobs to enqueue (default 20).
	Jobs int
	// Policies serving them (default 2), each with its own scale set (or,
	// Classic, label set); jobs are spread over them.
	Policies int
	// Max runners at once per policy (default 4).
	Max int
	// Classic uses classic mode (labels, REST demand polling) instead of
	// scale sets.
	Classic bool
	// Seed makes the job mix repeatable (default 1).
	Seed uint64
	// MinDuration, MaxDuration bound each job's length (default 200 ms and
	// 2 s); MinMemory, MaxMemory what it allocates (default 16 and 128 MiB);
	// MaxCPU the millicores it burns (default 200).
	MinDuration, MaxDuration time.Duration
	MinMemory, MaxMemory     uint64
	MaxCPU                   int
	// MemoryEstimate is each policy's first-job estimate (default 256 MiB).
	MemoryEstimate uint64
	// Memory is the host's memory as admission sees it (default: the real
	// host's); Reserve is kept free (default 1 GiB).
	Memory  reconcile.MemorySource
	Reserve uint64
	// DataDir is the journal's and runners' directory (default: a
	// temporary one, removed by Close).
	DataDir string
	// RunnerExecutable is the fake runner's program: one that runs
	// fakerunner.Main when named Runner.Listener (default: this program,
	// os.Executable).
	RunnerExecutable string
	// Logger receives the manager's logs (default: discarded).
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.Jobs, 20)
	def(&o.Policies, 2)
	def(&o.Max, 4)
	def(&o.MaxCPU, 200)
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.MinDuration <= 0 {
		o.MinDuration = 200 * time.Millisecond
	}
	if o.MaxDuration < o.MinDuration {
		o.MaxDuration = max(2*time.Second, o.MinDuration)
	}
	if o.MinMemory == 0 {
		o.MinMemory = 16 << 20
	}
	if o.MaxMemory < o.MinMemory {
		o.MaxMemory = max(128<<20, o.MinMemory)
	}
	if o.MemoryEstimate == 0 {
		o.MemoryEstimate = 256 << 20
	}
	if o.Memory == nil {
		o.Memory = platform.NewMachine()
	}
	if o.Reserve == 0 {
		o.Reserve = 1 << 30
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// RunFakeRunnerIfNamed runs the fake runner when args[0] (os.Args) names the
// runner's listener, returning its exit status and true; otherwise false.
func RunFakeRunnerIfNamed(args []string) (int, bool) {
	if len(args) == 0 {
		return 0, false
	}
	base := filepath.Base(args[0])
	if base != "Runner.Listener" && base != "Runner.Listener.exe" {
		return 0, false
	}
	return fakerunner.Main(args[1:]), true
}

// Sim is a running simulation.
type Sim struct {
	opts     Options
	server   *fakegithub.Server
	d        *daemon.Daemon
	store    store.Store // d's
	host     rm.Host
	policies []rm.Policy
	dataDir  string
	tempDir  bool
	started  time.Time
	jobs     []int64

	cancel  context.CancelFunc
	runDone chan error
	// hookSecret signs the fake's webhooks to the daemon ("" sends none).
	hookSecret string

	mu        sync.Mutex
	peakLive  int
	doneAt    time.Time // when the last job completed
	refusals  map[string]int
	closeOnce sync.Once
	closeErr  error
}

// Start sets the simulation up (fake GitHub, data directory, fake runner,
// the daemon with its journal, policies), runs the daemon and enqueues the
// jobs. Close it when done.
func Start(ctx context.Context, opts Options) (_ *Sim, err error) {
	opts.setDefaults()
	s := &Sim{opts: opts, runDone: make(chan error, 1), refusals: map[string]int{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	w := world{DataDir: opts.DataDir, TempPrefix: "runner-manager-demo-", RunnerExecutable: opts.RunnerExecutable,
		Name: "demo", Logger: opts.Logger, Classic: opts.Classic}
	for i := range opts.Policies {
		w.Policies = append(w.Policies, worldPolicy{Name: fmt.Sprintf("demo-%d", i+1), Max: opts.Max, Estimate: opts.MemoryEstimate})
	}
	err = s.setUp(ctx, w, func(dataDir string) daemon.Config {
		return daemon.Config{
			Admission:   &reconcile.Admission{Memory: opts.Memory, Reserve: opts.Reserve, DiskPath: dataDir},
			ClassicPoll: 500 * time.Millisecond,
			// The configuration file's default: each repository's jobs in
			// its workspace slots (docs/warm.md).
			Warm: daemon.Warm{Enabled: true},
		}
	})
	if err != nil {
		return nil, err
	}
	s.run(ctx)

	s.started = time.Now()
	rng := rand.New(rand.NewPCG(opts.Seed, 0x5eed))
	for i := range opts.Jobs {
		p := s.policies[i%len(s.policies)]
		labels := []string{p.Target.ScaleSet}
		if opts.Classic {
			labels = []string{"self-hosted", p.Name}
		}
		d := opts.MinDuration + time.Duration(rng.Int64N(int64(opts.MaxDuration-opts.MinDuration)+1))
		mem := opts.MinMemory + rng.Uint64N(opts.MaxMemory-opts.MinMemory+1)
		s.jobs = append(s.jobs, s.server.EnqueueJob(fakegithub.JobSpec{
			Repo: Repo, Labels: labels, Name: fmt.Sprintf("job-%02d", i+1),
			Duration: d, MemoryBytes: mem, CPUMillicores: rng.IntN(opts.MaxCPU + 1),
		}))
	}
	return s, nil
}

// Daemon is the simulation's daemon (for Status, StopAttempt, Refresh).
func (s *Sim) Daemon() *daemon.Daemon { return s.d }

// run runs the daemon until Close, its goroutines labelled part=manager
// in a CPU profile.
func (s *Sim) run(ctx context.Context) {
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	s.cancel = cancel
	pprof.Do(runCtx, pprof.Labels("part", "manager"), func(runCtx context.Context) {
		go func() { s.runDone <- s.d.Run(runCtx) }()
	})
}

// Store is the simulation's journal.
func (s *Sim) Store() store.Store { return s.store }

// DataDir is the simulation's data directory.
func (s *Sim) DataDir() string { return s.dataDir }

// Server is the fake GitHub.
func (s *Sim) Server() *fakegithub.Server { return s.server }

// Policies are the simulation's policies.
func (s *Sim) Policies() []rm.Policy { return slices.Clone(s.policies) }

// Progress is how far a simulation got.
type Progress struct {
	Total, Done, Running, Queued int
	// Live is how many runner attempts are live now.
	Live    int
	Elapsed time.Duration
}

// Progress looks at the fake's jobs and the supervisor's live attempts.
func (s *Sim) Progress() Progress {
	p := Progress{Total: len(s.jobs), Elapsed: time.Since(s.started)}
	for _, j := range s.server.Jobs() {
		switch j.Status {
		case "completed":
			p.Done++
		case "in_progress":
			p.Running++
		default:
			p.Queued++
		}
	}
	st := s.d.Status()
	for _, ps := range st.Policies {
		p.Live += ps.Live
	}
	s.mu.Lock()
	s.peakLive = max(s.peakLive, p.Live)
	s.refusals = st.Refusals
	if p.Done == p.Total && s.doneAt.IsZero() {
		s.doneAt = time.Now()
	}
	s.mu.Unlock()
	return p
}

// Wait returns once every job completed (calling progress, when not nil,
// about every tick), or ctx ends.
func (s *Sim) Wait(ctx context.Context, tick time.Duration, progress func(Progress)) error {
	if tick <= 0 {
		tick = 250 * time.Millisecond
	}
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		p := s.Progress()
		if progress != nil {
			progress(p)
		}
		if p.Done == p.Total {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d jobs done when it stopped: %w", p.Done, p.Total, ctx.Err())
		case err := <-s.runDone:
			s.runDone <- err
			return fmt.Errorf("the supervisor stopped: %v", err)
		case <-t.C:
		}
	}
}

// Settle waits, up to d, for every attempt in the journal to end: after the
// last job completed, its runner's attempt is concluded within moments.
func (s *Sim) Settle(ctx context.Context, d time.Duration) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		live := 0
		for _, p := range s.policies {
			as, err := s.store.ActiveAttempts(ctx, p.ID)
			if err == nil {
				live += len(as)
			}
		}
		if live == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Progress()
		}
	}
}

// Summary is what a simulation did.
type Summary struct {
	// Mode is "scale-set" or "classic".
	Mode         string
	Jobs, Served int
	// Failed jobs completed with a result other than success; Canceled ones
	// were never run.
	Failed, Canceled int
	// DistinctRunners that ran the served jobs: one per job when every
	// runner was ephemeral.
	DistinctRunners int
	// RanTwice counts jobs started more than once (should be none).
	RanTwice        int
	WaitP50         time.Duration
	WaitP95         time.Duration
	PeakConcurrency int
	// PeakLiveRunners is the most live runner attempts seen at once.
	PeakLiveRunners int
	Refusals        map[string]int
	// Outcomes counts the journal's attempts by outcome.
	Outcomes map[string]int
	// RESTCalls and ScaleSetCalls are the manager's calls to the fake.
	RESTCalls, ScaleSetCalls int
	// Elapsed is from the first job queued to the last one completed (or
	// to now, while jobs remain).
	Elapsed time.Duration
}

// CallsPerJob is the manager's GitHub calls per served job.
func (s Summary) CallsPerJob() float64 {
	if s.Served == 0 {
		return 0
	}
	return float64(s.RESTCalls+s.ScaleSetCalls) / float64(s.Served)
}

// Summary reads the figures of the run so far.
func (s *Sim) Summary(ctx context.Context) (Summary, error) {
	sum := Summary{Mode: "scale-set", Jobs: len(s.jobs), Elapsed: time.Since(s.started), Outcomes: map[string]int{}}
	if s.opts.Classic {
		sum.Mode = "classic"
	}
	var waits []time.Duration
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	runners := map[string]bool{}
	for _, j := range s.server.Jobs() {
		if j.Starts > 1 {
			sum.RanTwice++
		}
		if j.Status != "completed" {
			continue
		}
		switch j.Result {
		case fakegithub.ResultSucceeded, "":
			sum.Served++
		case "canceled":
			sum.Canceled++
			continue
		default:
			sum.Served++
			sum.Failed++
		}
		runners[j.RunnerName] = true
		if !j.StartedAt.IsZero() {
			waits = append(waits, j.StartedAt.Sub(j.QueuedAt))
			edges = append(edges, edge{j.StartedAt, 1}, edge{j.CompletedAt, -1})
		}
	}
	sum.DistinctRunners = len(runners)
	slices.Sort(waits)
	sum.WaitP50, sum.WaitP95 = percentile(waits, 50), percentile(waits, 95)
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d // an end before a start at the same instant
	})
	cur := 0
	for _, e := range edges {
		cur += e.d
		sum.PeakConcurrency = max(sum.PeakConcurrency, cur)
	}
	for _, p := range s.policies {
		as, err := s.store.Attempts(ctx, store.AttemptFilter{Policy: p.ID})
		if err != nil {
			return sum, err
		}
		for _, a := range as {
			k := "live"
			if !a.Outcome.IsZero() {
				k = string(a.Outcome.Kind)
				if a.Outcome.Kind == rm.Failed {
					k += "(" + string(a.Outcome.Reason) + ")"
				}
			}
			sum.Outcomes[k]++
		}
	}
	sum.RESTCalls = s.server.CallsREST()
	sum.ScaleSetCalls = s.server.CallsScaleSet()
	s.mu.Lock()
	sum.PeakLiveRunners = s.peakLive
	sum.Refusals = s.refusals
	if !s.doneAt.IsZero() {
		sum.Elapsed = s.doneAt.Sub(s.started)
	}
	s.mu.Unlock()
	return sum, nil
}

func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := (len(sorted)*p + 99) / 100 // nearest rank
	return sorted[min(max(i, 1), len(sorted))-1]
}

// Close stops the supervisor (runners still live are stopped by their
// loops' drain), the fake GitHub and the journal, and removes a temporary
// data directory.
func (s *Sim) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.d != nil {
			// Stop what still runs (a simulation cut short), so no runner
			// outlives it.
			ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
			for _, a := range s.d.Status().Attempts {
				if a.State.Live() {
					_ = s.d.StopAttempt(ctx, a.ID)
				}
			}
			cancel()
		}
		if s.cancel != nil {
			s.cancel()
			if err := <-s.runDone; err != nil {
				errs = append(errs, err)
			}
		}
		if s.server != nil {
			s.server.Close()
		}
		if s.d != nil {
			errs = append(errs, s.d.Close())
		}
		if s.tempDir {
			errs = append(errs, os.RemoveAll(s.dataDir))
		}
		s.closeErr = errors.Join(errs...)
	})
	return s.closeErr
}

// Run runs a whole simulation: Start, Wait (with progress), the summary,
// Close.
func Run(ctx context.Context, opts Options, progress func(Progress)) (Summary, error) {
	s, err := Start(ctx, opts)
	if err != nil {
		return Summary{}, err
	}
	defer s.Close()
	werr := s.Wait(ctx, 0, progress)
	s.Settle(ctx, 10*time.Second)
	sum, err := s.Summary(context.WithoutCancel(ctx))
	if werr != nil {
		return sum, werr
	}
	if err != nil {
		return sum, err
	}
	return sum, s.Close()
}
