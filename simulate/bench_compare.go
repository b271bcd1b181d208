package simulate

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/actions/scaleset"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/baseline"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// CompareOptions shape a side-by-side run (RunCompare): the same jobs
// through the manager and through a baseline scaler written as
// actions/scaleset's example prescribes, each against a fake GitHub of
// the same options, one scale set of Max runners. Zero fields take the
// defaults.
type CompareOptions struct {
	// Jobs (default 40) of MinDuration–MaxDuration each (default 0.5–2.5 s).
	Jobs                     int
	MinDuration, MaxDuration time.Duration
	// Max runners (default 4); MinIdle runners kept waiting by both
	// scalers (the manager's min idle, the example's --min-runners), for a
	// warm start.
	Max, MinIdle int
	// Gap between two arrivals (0: all at once, a backlog).
	Gap time.Duration
	// Day, when set, spreads the arrivals (Gap is then unused) over a
	// working day compressed into Day: a quiet night, bursts at each
	// working hour, an evening's trickle (dayWeights).
	Day time.Duration
	// RunnerBoot is the fake runner's start-up, launch to listening
	// (default fakegithub.DefaultRunnerBootDelay; negative: none).
	RunnerBoot time.Duration
	// Spare is the manager's policy setting of warm spares: 0 its
	// default, sized by the day (rm.SpareAuto), as a user who sets nothing
	// gets it; N > 0 at most N; negative: none.
	Spare int
	// MaxSpares is the host's bound on warm spares (reconcile.Admission's
	// MaxSpares: 0 its default, reconcile.DefaultMaxSpares).
	MaxSpares int
	// Classic runs the manager alone in classic mode (labels, the
	// repository's demand polled at github.DefaultClassicPoll): there is no
	// baseline for it, and no spare.
	Classic bool
	// Webhooks (classic mode) has the fake GitHub send workflow_job
	// webhooks to the daemon's receiver, as [webhook] listen does.
	Webhooks bool
	// Seed makes the durations repeatable (default 1).
	Seed uint64
	// RunnerExecutable and Logger are as in Options.
	RunnerExecutable string
	Logger           *slog.Logger
	// Timeout bounds each scaler's run (default 5 min, or Day + 2 min).
	Timeout time.Duration
}

// policySpare is the compared policy's rm.Policy.Spare.
func (o CompareOptions) policySpare() int {
	switch {
	case o.Classic, o.Spare < 0:
		return 0
	case o.Spare == 0:
		return rm.SpareAuto
	}
	return o.Spare
}

func (o *CompareOptions) setDefaults() {
	if o.Jobs <= 0 {
		o.Jobs = 40
	}
	if o.MinDuration <= 0 {
		o.MinDuration = 500 * time.Millisecond
	}
	if o.MaxDuration < o.MinDuration {
		o.MaxDuration = max(2500*time.Millisecond, o.MinDuration)
	}
	if o.Max <= 0 {
		o.Max = 4
	}
	switch {
	case o.RunnerBoot == 0:
		o.RunnerBoot = fakegithub.DefaultRunnerBootDelay
	case o.RunnerBoot < 0:
		o.RunnerBoot = 0
	}
	o.Spare = min(o.Spare, rm.MaxSpare)
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = max(5*time.Minute, o.Day+2*time.Minute)
	}
}

// ScalerResult is what one scaler did with the jobs. Durations are in
// seconds (the wait in milliseconds).
type ScalerResult struct {
	Scaler string `json:"scaler"`
	Jobs   int    `json:"jobs"`
	Served int    `json:"served"`
	// Makespan is from the first job queued to the last completed; Ideal
	// is Σ job durations / max, what max runners that never wait would
	// take; Efficiency is Ideal / Makespan.
	MakespanSeconds float64 `json:"makespan_seconds"`
	IdealSeconds    float64 `json:"ideal_seconds"`
	Efficiency      float64 `json:"efficiency"`
	// ListSeconds is what max runners that start a job the instant one
	// arrives or a runner frees (no boot, no overhead), taking the jobs in
	// their queue order, would take with the durations the jobs had: the
	// best any scaler of these jobs can do in that order (the tail of the
	// last jobs included). ListEfficiency is ListSeconds / Makespan.
	ListSeconds    float64 `json:"list_schedule_seconds"`
	ListEfficiency float64 `json:"list_efficiency"`
	// Ready is how many runners were registered and free when the first
	// job was queued, listening or still booting (the quiet spares, min
	// idle runners). ReachableSeconds is the list schedule when every job
	// beyond those waits, besides, for a boot from the first job's
	// queueing (bootBound): the best a scaler that had Ready runners then
	// can do, even one starting any number of runners at once (a booting
	// one counts as if it listened). ReachableEfficiency is Ideal over it:
	// the efficiency such a scaler cannot beat.
	Ready               int     `json:"runners_ready_at_first_job"`
	ReachableSeconds    float64 `json:"reachable_seconds"`
	ReachableEfficiency float64 `json:"reachable_efficiency"`
	// Wait is from a job's queueing to its start on a runner.
	Wait Quantiles `json:"wait_ms"`
	// The scaler's GitHub calls (the runners' own excluded): REST
	// requests, those charged to the rate limit, and the scale-set
	// service's; CallsPerJob is charged REST + scale-set service per job.
	REST          int     `json:"rest"`
	RESTCharged   int     `json:"rest_charged"`
	ScaleSet      int     `json:"scale_set"`
	CallsPerJob   float64 `json:"calls_per_job"`
	PeakRunners   int     `json:"peak_runners"`
	PeakJobs      int     `json:"peak_jobs"`
	RunnersLaunch int     `json:"runners_launched"`
	// PeakRunnerRSSBytes is the most memory the scaler's runner processes
	// held at once (their trees' RSS, sampled every 100 ms).
	PeakRunnerRSSBytes uint64 `json:"peak_runner_rss_bytes"`
	// BootSeconds is the boot the manager measured (0 for the baseline).
	BootSeconds float64 `json:"boot_seconds,omitempty"`
	// RunnerStart is from a job's queueing to the start of the process of
	// the runner that ran it (the manager's runs).
	RunnerStart Quantiles `json:"queue_to_runner_start_ms"`
}

// CompareReport is a side-by-side run: both scalers and the manager's
// figures over the baseline's.
type CompareReport struct {
	Jobs         int     `json:"jobs"`
	Max          int     `json:"max"`
	GapMS        float64 `json:"gap_ms"`
	DayMS        float64 `json:"day_ms,omitempty"`
	RunnerBootMS float64 `json:"runner_boot_ms"`
	Spare        int     `json:"spare"`
	// SpareAuto: the manager's spares were sized by the day (its default);
	// Spare is then the most it could keep.
	SpareAuto     bool          `json:"spare_auto"`
	MinIdle       int           `json:"min_idle"`
	Mode          string        `json:"mode"`
	Webhooks      bool          `json:"webhooks,omitempty"`
	MinDurationMS float64       `json:"min_duration_ms"`
	MaxDurationMS float64       `json:"max_duration_ms"`
	Manager       ScalerResult  `json:"manager"`
	Baseline      ScalerResult  `json:"baseline"`
	Ratios        CompareRatios `json:"ratios_manager_over_baseline"`
}

// CompareRatios are the manager's figures over the baseline's.
type CompareRatios struct {
	Makespan    float64 `json:"makespan"`
	Efficiency  float64 `json:"efficiency"`
	WaitP50     float64 `json:"wait_p50"`
	WaitP95     float64 `json:"wait_p95"`
	CallsPerJob float64 `json:"calls_per_job"`
	PeakMemory  float64 `json:"peak_runner_memory"`
}

// compareJob is one planned job.
type compareJob struct {
	at   time.Duration
	spec fakegithub.JobSpec
}

func (o CompareOptions) plan(label string) []compareJob {
	rng := rand.New(rand.NewPCG(o.Seed, 0xc0a9))
	var day []time.Duration
	if o.Day > 0 {
		day = dayArrivals(rand.New(rand.NewPCG(o.Seed, 0xda7)), o.Jobs, o.Day)
	}
	out := make([]compareJob, 0, o.Jobs)
	for i := range o.Jobs {
		d := o.MinDuration + time.Duration(rng.Int64N(int64(o.MaxDuration-o.MinDuration)+1))
		at := time.Duration(i) * o.Gap
		if day != nil {
			at = day[i]
		}
		out = append(out, compareJob{at: at, spec: fakegithub.JobSpec{
			Repo: Repo, Labels: []string{label}, Name: fmt.Sprintf("job-%02d", i+1),
			Duration: d, MemoryBytes: 8 << 20, CPUMillicores: 20,
		}})
	}
	return out
}

// RunCompare runs the jobs through the manager, then through the baseline,
// and reports both.
func RunCompare(ctx context.Context, opts CompareOptions) (CompareReport, error) {
	opts.setDefaults()
	rep := CompareReport{Jobs: opts.Jobs, Max: opts.Max, GapMS: msOf(opts.Gap), DayMS: msOf(opts.Day), RunnerBootMS: msOf(opts.RunnerBoot),
		Spare: opts.policySpare(), MinIdle: opts.MinIdle, MinDurationMS: msOf(opts.MinDuration), MaxDurationMS: msOf(opts.MaxDuration)}
	rep.Mode = "scale-set"
	if opts.policySpare() == rm.SpareAuto {
		rep.Spare, rep.SpareAuto = rm.AutoSpares(opts.Max), true
	}
	if opts.Classic {
		rep.Mode, rep.Spare, rep.SpareAuto, rep.Webhooks = "classic", 0, false, opts.Webhooks
	}
	var err error
	if rep.Manager, err = compareManager(ctx, opts); err != nil {
		return rep, fmt.Errorf("the manager's run: %w", err)
	}
	if opts.Classic {
		return rep, nil
	}
	if rep.Baseline, err = compareBaseline(ctx, opts); err != nil {
		return rep, fmt.Errorf("the baseline's run: %w", err)
	}
	m, b := rep.Manager, rep.Baseline
	rep.Ratios = CompareRatios{
		Makespan: ratio(m.MakespanSeconds, b.MakespanSeconds), Efficiency: ratio(m.Efficiency, b.Efficiency),
		WaitP50: ratio(m.Wait.P50, b.Wait.P50), WaitP95: ratio(m.Wait.P95, b.Wait.P95),
		CallsPerJob: ratio(m.CallsPerJob, b.CallsPerJob), PeakMemory: ratio(float64(m.PeakRunnerRSSBytes), float64(b.PeakRunnerRSSBytes)),
	}
	return rep, nil
}

func msOf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// fakeOptions are the fake GitHub's options of both runs.
func (o CompareOptions) fakeOptions() []fakegithub.Option {
	return []fakegithub.Option{fakegithub.WithRunnerBootDelay(o.RunnerBoot)}
}

// compareManager runs the jobs through the manager: the daemon's loop,
// journal, native launcher, meters and admission, one scale-set policy of
// Max runners and Spare warm spares.
func compareManager(ctx context.Context, o CompareOptions) (ScalerResult, error) {
	s := &Sim{runDone: make(chan error, 1), refusals: map[string]int{}}
	defer s.Close()
	w := world{TempPrefix: "runner-manager-compare-", RunnerExecutable: o.RunnerExecutable, Name: "compare",
		Logger: o.Logger, HostMemory: 16 << 30, FakeOptions: o.fakeOptions(), Classic: o.Classic, Webhooks: o.Webhooks && o.Classic,
		Policies: []worldPolicy{{Name: "compare", Max: o.Max, Estimate: 256 << 20, Spare: o.policySpare(), MinIdle: min(o.MinIdle, o.Max)}}}
	var pids *pidLauncher
	err := s.setUp(ctx, w, func(dataDir string) daemon.Config {
		native := native.NewLauncher(dataDir, native.WithLogger(o.Logger))
		pids = &pidLauncher{Launcher: native}
		cfg := daemon.Config{
			Launchers: map[rm.Backend]rm.Launcher{rm.DefaultBackend: pids},
			Admission: &reconcile.Admission{Memory: FixedMemory{Total: 16 << 30}, Reserve: 1 << 30, DiskPath: dataDir, MaxSpares: o.MaxSpares},
		}
		cfg.Loop.ScaleDownAfter = 2 * time.Second
		return cfg
	})
	if err != nil {
		return ScalerResult{}, err
	}
	if n, ok := pids.Launcher.(*native.Launcher); ok {
		defer n.Close()
	}
	s.run(ctx)
	if err := s.deliverWebhooks(ctx); err != nil {
		return ScalerResult{}, err
	}
	// Ready: the policy's warm spare (if any) and min idle runners
	// listening, as a daemon that has been up a while has them.
	ready := min(o.MinIdle, o.Max)
	if o.policySpare() != 0 {
		ready++ // one spare while quiet, sized by the day or not
	}
	if err := waitOnline(ctx, s.server, ready); err != nil {
		return ScalerResult{}, err
	}
	label := "compare"
	if o.Classic {
		label = "self-hosted"
	}
	res, err := runPlan(ctx, o, s.server, label, pids.rss)
	res.Scaler = "runner-manager"
	res.RunnerStart = pids.queueToStart(s.host.ID, s.server.Jobs())
	if st := s.d.Status(); len(st.Policies) > 0 {
		res.BootSeconds = st.Policies[0].Boot.Seconds()
	}
	res.RunnersLaunch = pids.launched()
	return res, err
}

// compareBaseline runs the jobs through the baseline scaler.
func compareBaseline(ctx context.Context, o CompareOptions) (ScalerResult, error) {
	token := "ghp_baseline" + rm.NewAttemptID().String()
	server := fakegithub.NewServer(append([]fakegithub.Option{fakegithub.WithToken(token), fakegithub.WithRepo(Repo),
		fakegithub.WithPollTimeout(2 * time.Second), fakegithub.WithLogger(o.Logger)}, o.fakeOptions()...)...)
	defer server.Close()
	dir, err := os.MkdirTemp("", "runner-manager-baseline-")
	if err != nil {
		return ScalerResult{}, err
	}
	defer os.RemoveAll(dir)
	exe := o.RunnerExecutable
	if exe == "" {
		if exe, err = os.Executable(); err != nil {
			return ScalerResult{}, err
		}
	}
	install := filepath.Join(dir, "runner")
	if err := fakegithub.LayoutRunnerDir(install, exe); err != nil {
		return ScalerResult{}, err
	}
	client, err := scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
		GitHubConfigURL: server.URL() + "/" + Repo, PersonalAccessToken: token,
		SystemInfo: scaleset.SystemInfo{System: "runner-manager-bench-baseline"},
	})
	if err != nil {
		return ScalerResult{}, err
	}
	b, err := baseline.Start(ctx, baseline.Config{Client: client, ScaleSet: "compare", MaxRunners: o.Max, MinRunners: min(o.MinIdle, o.Max),
		Listener: filepath.Join(install, "bin", fakegithub.ListenerName()), WorkDir: filepath.Join(dir, "roots"),
		Owner: "bench", Logger: o.Logger})
	if err != nil {
		return ScalerResult{}, err
	}
	if err := waitOnline(ctx, server, min(o.MinIdle, o.Max)); err != nil {
		return ScalerResult{}, errors.Join(err, b.Stop())
	}
	rss := func() (uint64, int) {
		var live []int
		for _, r := range b.Runners() {
			if r.Exited.IsZero() {
				live = append(live, r.PID)
			}
		}
		return sumRSS(live), len(live)
	}
	res, err := runPlan(ctx, o, server, "compare", rss)
	res.Scaler = "baseline (actions/scaleset example)"
	res.RunnersLaunch = len(b.Runners())
	return res, errors.Join(err, b.Stop())
}

// waitOnline waits, up to a minute, for n runners listening.
func waitOnline(ctx context.Context, server *fakegithub.Server, n int) error {
	if n <= 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := server.WaitFor(ctx, func() bool {
		online := 0
		for _, r := range server.Runners() {
			if r.Online {
				online++
			}
		}
		return online >= n
	})
	if err != nil {
		return fmt.Errorf("%d runners did not come online: %w", n, err)
	}
	return nil
}

// runPlan enqueues the plan's jobs at their times, samples the runners'
// memory until every job completed, and measures the run from the fake's
// job records and call counters (taken as deltas: setup excluded). Its
// error says what ended a run short: its own o.Timeout, or ctx's cause.
func runPlan(ctx context.Context, o CompareOptions, server *fakegithub.Server, label string, rss func() (uint64, int)) (ScalerResult, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout,
		fmt.Errorf("%w: the run's timeout of %s passed", context.DeadlineExceeded, o.Timeout))
	defer cancel()
	plan := o.plan(label)
	limit, remaining, _ := server.RateLimit()
	charged0 := limit - remaining
	rest0, ss0 := server.CallsREST(), server.CallsScaleSet()

	var mu sync.Mutex
	var peakRSS uint64
	peakRunners := 0
	sampleCtx, stopSample := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			r, n := rss()
			mu.Lock()
			peakRSS, peakRunners = max(peakRSS, r), max(peakRunners, n)
			mu.Unlock()
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	ready := 0
	for _, r := range server.Runners() {
		if !r.Busy {
			ready++ // listening, or registered and booting
		}
	}
	start := time.Now()
	for _, j := range plan {
		if d := time.Until(start.Add(j.at)); d > 0 {
			select {
			case <-ctx.Done():
			case <-time.After(d):
			}
		}
		server.EnqueueJob(j.spec)
	}
	werr := server.WaitJobsCompleted(ctx)
	if werr != nil && ctx.Err() != nil {
		werr = context.Cause(ctx)
	}
	stopSample()
	<-sampled

	res := ScalerResult{Jobs: len(plan), PeakRunners: peakRunners, PeakRunnerRSSBytes: peakRSS, Ready: ready}
	limit, remaining, _ = server.RateLimit()
	res.RESTCharged = limit - remaining - charged0
	res.REST, res.ScaleSet = server.CallsREST()-rest0, server.CallsScaleSet()-ss0
	jobsResult(&res, server.Jobs(), o.Max, o.RunnerBoot)
	if res.Served > 0 {
		res.CallsPerJob = float64(res.RESTCharged+res.ScaleSet) / float64(res.Served)
	}
	if werr != nil {
		return res, fmt.Errorf("%d of %d jobs served: %w", res.Served, res.Jobs, werr)
	}
	return res, nil
}
