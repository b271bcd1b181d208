package reconcile

import (
	"io"
	"log/slog"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// The defaults of LoopOptions (and of a policy's memory estimate). They
// are the manager's production figures; tests shorten them.
const (
	// DefaultRegisterTimeout bounds one JIT configuration request.
	DefaultRegisterTimeout = 2 * time.Minute
	// DefaultStartTimeout is how long a launched runner may take to be seen
	// online (or to take a job) before it is stopped: Failed(StartTimeout).
	DefaultStartTimeout = 5 * time.Minute
	// DefaultZombieGrace is how long a live runner may miss from GitHub's
	// runner list before it is stopped as a zombie.
	DefaultZombieGrace = 2 * time.Minute
	// DefaultHungGrace is how long a runner process may live on after
	// GitHub said its job completed (a JobCompleted message, a completed
	// job status) before it is stopped as hung after its job. A runner
	// exits within seconds of its job's end; one that does not holds its
	// slot until someone kills it (actions/runner #4703 and #4418,
	// actions/actions-runner-controller #4603).
	DefaultHungGrace = 2 * time.Minute
	// DefaultStopGrace is the time between SIGTERM and SIGKILL.
	DefaultStopGrace = 30 * time.Second
	// DefaultJobWordGrace caps how long an attempt whose runner exited 0
	// with no job known waits for GitHub's word of a job (a JobStarted or
	// JobCompleted event that lags the exit) before it is concluded
	// ExitedIdleWithoutWork. The wait ends sooner, at the first demand
	// figure taken after the exit; the cap, two classic polls, is for a
	// silent source. Its slot is free meanwhile.
	DefaultJobWordGrace = time.Minute
	// DefaultScaleDownAfter is how long a runner must have been idle before
	// a scale-down may remove it, so a demand figure that lags a new job
	// does not churn runners.
	DefaultScaleDownAfter = 10 * time.Second
	// DefaultStopTimeout bounds a stop without drain: removing the idle
	// runners' registrations and stopping their processes.
	DefaultStopTimeout = time.Minute
	// DefaultActiveRequeue is the next pass while anything is live or wanted.
	DefaultActiveRequeue = 3 * time.Second
	// DefaultIdleRequeue is the next pass when nothing is live or wanted.
	DefaultIdleRequeue = 60 * time.Second
	// DefaultRunnerListEvery is how old GitHub's runner list may grow while
	// runners are live; each list costs a request.
	DefaultRunnerListEvery = 30 * time.Second
	// DefaultMaxLaunchesPerPass caps the launches of one pass.
	DefaultMaxLaunchesPerPass = 4
	// DefaultMaxFailedLaunchesPerMinute caps, per policy, the launches that
	// failed in the last minute before launching pauses: no spawn storms.
	DefaultMaxFailedLaunchesPerMinute = 5
	// DefaultBackoffBase and DefaultBackoffMax bound the driver's backoff
	// while passes fail.
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 2 * time.Minute
	// DefaultMemoryEstimate is what a policy's first job is expected to
	// peak at when the policy says nothing and no peak was measured.
	DefaultMemoryEstimate uint64 = 2 << 30
)

// LoopOptions are a loop's timeouts, paces and caps: held by Config (each
// loop's), SupervisorConfig.Loop (every loop of a host) and
// daemon.Config.Loop. A zero value takes the Default figure named; where
// none is named, zero turns the feature off.
type LoopOptions struct {
	// RegisterTimeout bounds one JIT configuration request
	// (DefaultRegisterTimeout).
	RegisterTimeout time.Duration
	// StartTimeout: a runner not seen online by then is stopped
	// (DefaultStartTimeout).
	StartTimeout time.Duration
	// IdleTimeout, when set, stops a runner idle that long.
	IdleTimeout time.Duration
	// ZombieGrace: a live runner missing from GitHub that long is stopped
	// (DefaultZombieGrace).
	ZombieGrace time.Duration
	// HungGrace: a runner alive this long after GitHub said its job
	// completed is stopped (DefaultHungGrace); it concludes CompletedJob,
	// as it ran its job.
	HungGrace time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL (DefaultStopGrace).
	StopGrace time.Duration
	// JobWordGrace caps the wait for GitHub's word of a job after a runner
	// exited 0 with none known (DefaultJobWordGrace).
	JobWordGrace time.Duration
	// ScaleDownAfter: how long a runner must have been idle before a
	// scale-down may remove it (DefaultScaleDownAfter); a negative value
	// lets it go the moment it is seen idle.
	ScaleDownAfter time.Duration
	// ActiveRequeue is the next pass while anything is live or wanted
	// (DefaultActiveRequeue); IdleRequeue when nothing is
	// (DefaultIdleRequeue).
	ActiveRequeue time.Duration
	IdleRequeue   time.Duration
	// RunnerListEvery is how old GitHub's runner list may grow while
	// runners are live (DefaultRunnerListEvery).
	RunnerListEvery time.Duration
	// OrphanListEvery, when set, also lists GitHub's runners that often
	// while the loop is idle (to reap registrations left by something else
	// than this manager); by default an idle loop makes no request.
	OrphanListEvery time.Duration
	// BackoffBase and BackoffMax bound the driver's backoff while passes
	// fail (DefaultBackoffBase, DefaultBackoffMax).
	BackoffBase time.Duration
	BackoffMax  time.Duration

	// MaxLaunchesPerPass caps the launches of one pass
	// (DefaultMaxLaunchesPerPass).
	MaxLaunchesPerPass int
	// MaxFailedLaunchesPerMinute: a policy with that many failed launches
	// in the last minute pauses launching
	// (DefaultMaxFailedLaunchesPerMinute).
	MaxFailedLaunchesPerMinute int

	// SpareRecycleAfter is how long a warm spare may listen without a job
	// before it is replaced (DefaultSpareRecycleAfter).
	SpareRecycleAfter time.Duration

	// StopTimeout bounds a stop without drain (DefaultStopTimeout).
	StopTimeout time.Duration
}

// Config is what a Loop needs. Store, Target, Launcher and Host are
// required; zero durations and caps take the Default figures above.
type Config struct {
	Store store.Store
	// Target is where the loop's runners register and where its demand
	// comes from; both sides are required.
	Target Target
	// Launcher is the launcher of the native backend, and of any backend
	// without an entry in Launchers.
	Launcher rm.Launcher
	// Launchers are the launchers of other backends (container, VM, WSL),
	// by the backend a policy names.
	Launchers map[rm.Backend]rm.Launcher
	// Meters may be nil: no usage on attempts, and expected peaks are the
	// policies' estimates.
	Meters rm.Meters
	Host   rm.Host
	// Policies are the policies the loop serves; they share one target
	// (Target.Key()). The pass re-reads them from the journal, so edits of
	// max, min idle or paused take effect at the next pass.
	Policies []rm.Policy
	// Admission decides every launch; nil admits up to each policy's max.
	// Loops of one host must share one Admission.
	Admission *Admission
	// Now is the clock of every timestamp and deadline (default time.Now).
	// The driver sleeps on real timers.
	Now    func() time.Time
	Logger *slog.Logger
	// Installs are the runners installed in the data directory
	// (runnerpkg.Installs of its runners/): a policy that launches them
	// starts from the newest, a newer one on trial is proven on one
	// attempt first, and a policy held by a refused runner is told its
	// fix. nil: none known (no runner update is proven, and a policy held
	// by a refused runner waits for its edit).
	Installs rm.RunnerInstalls
	// RunnerEnv is added to every runner's environment ("KEY=value").
	RunnerEnv []string
	// Slots, when set, runs the attempts of a repository's policies warm:
	// each in a workspace slot of its repository (docs/warm.md), where the
	// policy is not Cold and its launcher is an rm.WarmLauncher that runs
	// warm. Loops of one host share one.
	Slots rm.Slots

	// LoopOptions are the loop's timeouts, paces and caps.
	LoopOptions

	// Drain: when Run's context ends, remove idle runners and wait for busy
	// ones to finish (bounded by DrainTimeout, if set). Without it, idle
	// and starting runners are removed (registration first) within
	// StopTimeout, and busy ones keep their jobs, to be re-adopted at the
	// next start.
	Drain        bool
	DrainTimeout time.Duration

	// OnRefusal is told of every admission refusal (the supervisor counts
	// them by reason).
	OnRefusal func(policy rm.PolicyID, r Refusal)
	// OnPass, when set, is told of every pass the loop's driver runs: the
	// target's key, how long the pass took and its error (metrics).
	OnPass func(targetKey string, took time.Duration, err error)
	// OnJobStarted, when set, is told of each job a runner of the loop
	// took whose queue time GitHub gave: how its start split (GitHub's
	// part, the manager's, the runner's), by policy name.
	OnJobStarted func(policy string, s rm.StartSplit)
	// OnJobEnded, when set, is told of each job a runner of this host
	// completed whose start and finish GitHub gave: how long it ran
	// (GitHub's runner assignment to its finish, as
	// actions-runner-controller's listener measures it) and its result.
	OnJobEnded func(policy, result string, ran time.Duration)

	// tab is shared by the loops of a supervisor; nil makes a private one.
	tab *table
	// once: the loop runs one pass and watches no demand (RunOnce), so no
	// word of a job can come while it runs, and the next one-shot pass
	// would see each exit anew: an exit is concluded with what the pass
	// knows, as a drain does (a later word corrects it, lateOutcome).
	once bool
}

func (c *Config) setDefaults() {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	c.LoopOptions.setDefaults()
	if c.tab == nil {
		c.tab = newTable()
	}
}

// setDefaults gives each zero figure its Default; a negative
// ScaleDownAfter becomes 0 (a runner may go the moment it is seen idle).
// SpareRecycleAfter keeps its zero: the spares read it with its default.
func (o *LoopOptions) setDefaults() {
	dur := func(d *time.Duration, def time.Duration) {
		if *d <= 0 {
			*d = def
		}
	}
	dur(&o.RegisterTimeout, DefaultRegisterTimeout)
	dur(&o.StartTimeout, DefaultStartTimeout)
	dur(&o.ZombieGrace, DefaultZombieGrace)
	dur(&o.HungGrace, DefaultHungGrace)
	dur(&o.StopGrace, DefaultStopGrace)
	dur(&o.StopTimeout, DefaultStopTimeout)
	dur(&o.JobWordGrace, DefaultJobWordGrace)
	if o.ScaleDownAfter < 0 {
		o.ScaleDownAfter = 0
	} else if o.ScaleDownAfter == 0 {
		o.ScaleDownAfter = DefaultScaleDownAfter
	}
	dur(&o.ActiveRequeue, DefaultActiveRequeue)
	dur(&o.IdleRequeue, DefaultIdleRequeue)
	dur(&o.RunnerListEvery, DefaultRunnerListEvery)
	dur(&o.BackoffBase, DefaultBackoffBase)
	dur(&o.BackoffMax, DefaultBackoffMax)
	if o.MaxLaunchesPerPass <= 0 {
		o.MaxLaunchesPerPass = DefaultMaxLaunchesPerPass
	}
	if o.MaxFailedLaunchesPerMinute <= 0 {
		o.MaxFailedLaunchesPerMinute = DefaultMaxFailedLaunchesPerMinute
	}
}
