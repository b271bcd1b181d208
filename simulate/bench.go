package simulate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"runtime/pprof"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// BenchOptions shape a benchmark run (RunBench): a busy day compressed into
// about a minute. Zero fields take the defaults.
type BenchOptions struct {
	// Jobs to serve (default 2,000) over Policies (default 10), each with
	// its own scale set (or, Classic, label set), max and first-job
	// estimate from a fixed mix (benchProfiles).
	Jobs, Policies int
	// Span is how long jobs keep arriving (default 1 min): bursts at the
	// start of each cycle, a trickle, then a quiet spell.
	Span time.Duration
	// Cycles of burst, trickle and quiet within Span (default 6).
	Cycles int
	// HostMemory is the host's memory as admission sees it (default 16
	// GiB), whatever the machine really has; Reserve is kept free (default
	// 1 GiB).
	HostMemory, Reserve uint64
	// Classic uses classic mode (labels, REST demand polling), polling
	// the repository's jobs every ClassicPoll (default 500 ms, where the
	// daemon's default is 30 s: jobs of a minute's busy day would
	// otherwise wait for the poll).
	Classic     bool
	ClassicPoll time.Duration
	// Webhooks (classic mode) has the fake GitHub send workflow_job
	// webhooks to the daemon's receiver, as [webhook] listen does.
	Webhooks bool
	// Max replaces every policy's max runners (0 keeps the mix's).
	Max int
	// Seed makes the arrivals and the job mix repeatable (default 1).
	Seed uint64
	// Store is the journal the daemon keeps (a PostgreSQL store, say);
	// nil is the SQLite file in the data directory. The bench writes its
	// policies into it and does not close it.
	Store store.Store
	// CPUProfile, when not nil, gets the CPU profile of the run (pprof's
	// format), the one the report's CPU split is read from.
	CPUProfile io.Writer
	// DataDir, RunnerExecutable and Logger are as in Options.
	DataDir          string
	RunnerExecutable string
	Logger           *slog.Logger
	// SampleStatusEvery is how often the supervisor's Status is sampled
	// for the admission figures (default 100 ms).
	SampleStatusEvery time.Duration
}

func (o *BenchOptions) setDefaults() {
	if o.Jobs <= 0 {
		o.Jobs = 2000
	}
	if o.Policies <= 0 {
		o.Policies = 10
	}
	if o.Span <= 0 {
		o.Span = time.Minute
	}
	if o.Cycles <= 0 {
		o.Cycles = 6
	}
	if o.HostMemory == 0 {
		o.HostMemory = 16 << 30
	}
	if o.Reserve == 0 {
		o.Reserve = 1 << 30
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.ClassicPoll <= 0 {
		o.ClassicPoll = 500 * time.Millisecond
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.SampleStatusEvery <= 0 {
		o.SampleStatusEvery = 100 * time.Millisecond
	}
}

// benchProfile is one policy's part of the mix: how many runners, what a
// first job is expected to take, and what its jobs really do.
type benchProfile struct {
	max                  int
	estimate             uint64
	weight               int // share of the arrivals
	minDur, maxDur       time.Duration
	minMemory, maxMemory uint64
	maxCPU               int
}

// benchProfiles is the policy mix, used round-robin: light and heavy jobs,
// short and long ones, small and large first-job estimates (the large
// ones make admission refuse on memory until real peaks are banked).
var benchProfiles = []benchProfile{
	{max: 8, estimate: 256 << 20, weight: 4, minDur: 30 * time.Millisecond, maxDur: 150 * time.Millisecond, minMemory: 8 << 20, maxMemory: 16 << 20, maxCPU: 100},
	{max: 6, estimate: 1 << 30, weight: 3, minDur: 100 * time.Millisecond, maxDur: 400 * time.Millisecond, minMemory: 16 << 20, maxMemory: 48 << 20, maxCPU: 200},
	{max: 10, estimate: 512 << 20, weight: 4, minDur: 50 * time.Millisecond, maxDur: 250 * time.Millisecond, minMemory: 8 << 20, maxMemory: 32 << 20, maxCPU: 100},
	{max: 4, estimate: 4 << 30, weight: 1, minDur: 200 * time.Millisecond, maxDur: 800 * time.Millisecond, minMemory: 32 << 20, maxMemory: 64 << 20, maxCPU: 300},
	{max: 8, estimate: 2 << 30, weight: 2, minDur: 100 * time.Millisecond, maxDur: 500 * time.Millisecond, minMemory: 24 << 20, maxMemory: 64 << 20, maxCPU: 200},
}

// FixedMemory is a host of Total bytes as admission sees it, whatever the
// machine has: the bench fakes the size so admission binds.
type FixedMemory struct{ Total uint64 }

var _ reconcile.MemorySource = FixedMemory{}

// Memory implements reconcile.MemorySource: available is what the real
// host has, at most Total.
func (m FixedMemory) Memory() (total, available uint64, err error) {
	_, avail, err := platform.HostMemory()
	return m.Total, min(avail, m.Total), err
}

// arrival is one planned job.
type arrival struct {
	at     time.Duration // after the start
	policy int
	spec   fakegithub.JobSpec
}

// plan spreads the jobs over the span: each cycle opens with a burst (40 %
// of its jobs at once), trickles 60 % evenly over the next 40 % of the
// cycle, and stays quiet for the rest.
func (o BenchOptions) plan(policies []rm.Policy) []arrival {
	rng := rand.New(rand.NewPCG(o.Seed, 0xbe9c4))
	var weights []int
	total := 0
	for i := range policies {
		w := benchProfiles[i%len(benchProfiles)].weight
		weights = append(weights, w)
		total += w
	}
	pick := func() int {
		n := rng.IntN(total)
		for i, w := range weights {
			if n < w {
				return i
			}
			n -= w
		}
		return len(weights) - 1
	}
	cycle := o.Span / time.Duration(o.Cycles)
	out := make([]arrival, 0, o.Jobs)
	for c := range o.Cycles {
		n := o.Jobs / o.Cycles
		if c < o.Jobs%o.Cycles {
			n++
		}
		burst := n * 4 / 10
		start := time.Duration(c) * cycle
		for j := range n {
			at := start
			if j >= burst {
				at += time.Duration(int64(cycle) * 4 / 10 * int64(j-burst+1) / int64(n-burst))
			}
			pi := pick()
			pr := benchProfiles[pi%len(benchProfiles)]
			p := policies[pi]
			labels := []string{p.Target.ScaleSet}
			if o.Classic {
				labels = []string{"self-hosted", p.Name}
			}
			d := pr.minDur + time.Duration(rng.Int64N(int64(pr.maxDur-pr.minDur)+1))
			mem := pr.minMemory + rng.Uint64N(pr.maxMemory-pr.minMemory+1)
			out = append(out, arrival{at: at, policy: pi, spec: fakegithub.JobSpec{
				Repo: Repo, Labels: labels, Name: fmt.Sprintf("%s-job-%04d", p.Name, len(out)+1),
				Duration: d, MemoryBytes: mem, CPUMillicores: rng.IntN(pr.maxCPU + 1),
			}})
		}
	}
	slices.SortStableFunc(out, func(a, b arrival) int { return int(a.at - b.at) })
	return out
}

// Bench is a running benchmark: a Sim whose jobs arrive on a plan, whose
// launcher is timed and whose supervisor's Status is sampled.
type Bench struct {
	*Sim
	opts     BenchOptions
	launcher *timedLauncher
	native   *native.Launcher
	plan     []arrival

	cpuStart   time.Duration
	profile    *cpuProfile
	cpuParts   map[string]float64
	cpuErr     error
	sampleStop context.CancelFunc
	sampleDone chan struct{}
	arriveDone chan struct{}

	mu          sync.Mutex
	peakLive    map[rm.PolicyID]int
	minAdmitted map[rm.PolicyID]int
	capped      map[rm.PolicyID]int // samples with admitted below max
	peakCommit  uint64
	samples     int
}

// StartBench sets the benchmark up as Start does (fake GitHub, data
// directory, fake runner, the daemon over a timed native launcher with
// admission on a host of HostMemory, policies from the mix), runs the
// daemon, and starts enqueuing the planned jobs. Close it when done.
func StartBench(ctx context.Context, opts BenchOptions) (_ *Bench, err error) {
	opts.setDefaults()
	s := &Sim{opts: Options{Classic: opts.Classic}, runDone: make(chan error, 1), refusals: map[string]int{}}
	b := &Bench{Sim: s, opts: opts, peakLive: map[rm.PolicyID]int{}, minAdmitted: map[rm.PolicyID]int{},
		capped: map[rm.PolicyID]int{}, sampleDone: make(chan struct{}), arriveDone: make(chan struct{})}
	defer func() {
		if err != nil {
			b.Close()
		}
	}()
	w := world{DataDir: opts.DataDir, TempPrefix: "runner-manager-bench-", RunnerExecutable: opts.RunnerExecutable,
		Name: "bench", Logger: opts.Logger, HostMemory: opts.HostMemory, Classic: opts.Classic, Webhooks: opts.Webhooks && opts.Classic,
		Store: opts.Store}
	for i := range opts.Policies {
		pr := benchProfiles[i%len(benchProfiles)]
		if opts.Max > 0 {
			pr.max = opts.Max
		}
		w.Policies = append(w.Policies, worldPolicy{Name: fmt.Sprintf("bench-%02d", i+1), Max: pr.max, Estimate: pr.estimate})
	}
	// The launcher is timed; admission sees a host of HostMemory.
	err = s.setUp(ctx, w, func(dataDir string) daemon.Config {
		b.native = native.NewLauncher(dataDir, native.WithLogger(opts.Logger))
		b.launcher = &timedLauncher{Launcher: b.native}
		cfg := daemon.Config{
			Launchers:   map[rm.Backend]rm.Launcher{rm.DefaultBackend: b.launcher},
			Admission:   &reconcile.Admission{Memory: FixedMemory{Total: opts.HostMemory}, Reserve: opts.Reserve, DiskPath: dataDir},
			ClassicPoll: opts.ClassicPoll,
		}
		cfg.Loop.ScaleDownAfter = 2 * time.Second
		return cfg
	})
	if err != nil {
		return nil, err
	}
	b.plan = opts.plan(s.policies)
	s.jobs = make([]int64, len(b.plan)) // the total Progress and Wait count to
	b.cpuStart = processCPU()
	b.profile = startCPUProfile(opts.CPUProfile)
	s.run(ctx)
	if err := s.deliverWebhooks(ctx); err != nil {
		return nil, err
	}

	s.started = time.Now()
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	b.sampleStop = stop
	pprof.Do(sctx, pprof.Labels("part", "bench"), func(sctx context.Context) {
		go b.sampleStatus(sctx)
		go b.arrive(sctx)
	})
	return b, nil
}

// arrive enqueues the planned jobs at their times.
func (b *Bench) arrive(ctx context.Context) {
	defer close(b.arriveDone)
	t := time.NewTimer(0)
	defer t.Stop()
	for i := 0; i < len(b.plan); {
		due := b.started.Add(b.plan[i].at)
		if wait := time.Until(due); wait > 0 {
			t.Reset(wait)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
		for ; i < len(b.plan) && !b.started.Add(b.plan[i].at).After(time.Now()); i++ {
			b.server.EnqueueJob(b.plan[i].spec)
		}
	}
}

// sampleStatus samples the supervisor's Status: live runners and admitted
// capacity per policy, memory committed.
func (b *Bench) sampleStatus(ctx context.Context) {
	defer close(b.sampleDone)
	t := time.NewTicker(b.opts.SampleStatusEvery)
	defer t.Stop()
	for {
		st := b.d.Status()
		b.mu.Lock()
		b.samples++
		b.peakCommit = max(b.peakCommit, st.Memory.CommittedBytes)
		for _, ps := range st.Policies {
			b.peakLive[ps.ID] = max(b.peakLive[ps.ID], ps.Live)
			if ps.Admitted > 0 || ps.Live > 0 || ps.Demand > 0 {
				if m, ok := b.minAdmitted[ps.ID]; !ok || ps.Admitted < m {
					b.minAdmitted[ps.ID] = ps.Admitted
				}
				if ps.Admitted < ps.Max {
					b.capped[ps.ID]++
				}
			}
		}
		b.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Close stops the sampling, the CPU profile, the simulation and the
// launcher's spare roots.
func (b *Bench) Close() error {
	if b.sampleStop != nil {
		b.sampleStop()
		<-b.sampleDone
		<-b.arriveDone
	}
	_, err := b.cpuSplit()
	err = errors.Join(err, b.Sim.Close())
	if b.native != nil {
		err = errors.Join(err, b.native.Close())
	}
	return err
}

// RunBench runs a whole benchmark: StartBench, Wait (with progress), the
// report, Close. The report is returned even when not every job was served.
func RunBench(ctx context.Context, opts BenchOptions, progress func(Progress)) (BenchReport, error) {
	b, err := StartBench(ctx, opts)
	if err != nil {
		return BenchReport{}, err
	}
	defer b.Close()
	// Fail fast when the fake's REST quota (GitHub's 5,000 an hour) is
	// spent: launches would wait for the hour's reset.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	lowest := -1
	werr := b.Wait(ctx, 0, func(p Progress) {
		_, remaining, reset := b.server.RateLimit()
		if lowest < 0 || remaining < lowest {
			lowest = remaining
		}
		if remaining == 0 {
			cancel(fmt.Errorf("the REST quota (GitHub's hourly budget) was spent after %d of %d jobs; it resets at %s: run fewer --jobs (classic mode spends REST calls per job)",
				p.Done, p.Total, reset.Format(time.TimeOnly)))
		}
		if progress != nil {
			progress(p)
		}
	})
	if cause := context.Cause(ctx); werr != nil && cause != nil && !errors.Is(cause, context.Canceled) {
		werr = cause
	}
	// Runners still live once the queue is empty are spare; those still
	// live a poll (and 10 s) later are stranded.
	liveAtEmpty := b.live(ctx)
	b.Settle(ctx, max(10*time.Second, b.opts.ClassicPoll+10*time.Second))
	stranded := b.live(ctx)
	rep, err := b.Report(context.WithoutCancel(ctx))
	rep.LiveWhenQueueEmptied, rep.Stranded = liveAtEmpty, stranded
	rep.Calls.RESTBudgetLowest, rep.Calls.RESTBudgetExhausted = lowest, lowest == 0
	if werr != nil {
		return rep, werr
	}
	if err != nil {
		return rep, err
	}
	if err := b.Close(); err != nil {
		return rep, err
	}
	if rep.Served != rep.Queued {
		return rep, fmt.Errorf("only %d of %d jobs were served", rep.Served, rep.Queued)
	}
	return rep, nil
}

// cpuSplit stops the CPU profile on its first call and returns the CPU
// each part of the process spent until then (nil without a profile).
func (b *Bench) cpuSplit() (map[string]float64, error) {
	if b.profile != nil {
		b.cpuParts, b.cpuErr = b.profile.stop()
		b.profile = nil
	}
	return b.cpuParts, b.cpuErr
}

// live counts the journal's live attempts.
func (b *Bench) live(ctx context.Context) int {
	n := 0
	for _, p := range b.policies {
		if as, err := b.store.ActiveAttempts(ctx, p.ID); err == nil {
			n += len(as)
		}
	}
	return n
}

// timedLauncher is a launcher that notes when each launch was asked for,
// when its process started and when it exited.
type timedLauncher struct {
	rm.Launcher
	mu       sync.Mutex
	launches []*launchTimes
}

type launchTimes struct {
	attempt               rm.AttemptID
	asked, started, ended time.Time
}

func (l *timedLauncher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	asked := time.Now()
	p, err := l.Launcher.Launch(ctx, spec)
	if err != nil {
		return p, err
	}
	lt := &launchTimes{attempt: spec.Attempt, asked: asked, started: time.Now()}
	l.mu.Lock()
	l.launches = append(l.launches, lt)
	l.mu.Unlock()
	go func() {
		<-p.Done()
		at := time.Now()
		l.mu.Lock()
		lt.ended = at
		l.mu.Unlock()
	}()
	return p, nil
}

// RanJob passes on the wrapped launcher's evidence that a runner ran a job
// (the native launcher's Worker log), which the loops ask for through an
// optional interface an embedded Launcher does not carry.
func (l *timedLauncher) RanJob(a rm.AttemptID) bool {
	ev, ok := l.Launcher.(interface{ RanJob(rm.AttemptID) bool })
	return ok && ev.RanJob(a)
}

func (l *timedLauncher) snapshot() []launchTimes {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]launchTimes, len(l.launches))
	for i, lt := range l.launches {
		out[i] = *lt
	}
	return out
}
