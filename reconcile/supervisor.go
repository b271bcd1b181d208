package reconcile

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// DefaultRefreshEvery is how often the supervisor re-reads the policies.
// An edit made on this host tells the daemon at once (Refresh, over its
// socket); the period only bounds how late an edit made elsewhere (another
// host of a fleet, `policy move`) is seen. At 5 s it was a fifth of an idle
// fleet host's queries.
const DefaultRefreshEvery = 15 * time.Second

// SupervisorConfig is what a Supervisor needs. Store, Host (with an ID),
// Launcher and Targets are required.
type SupervisorConfig struct {
	Store    store.Store
	Host     rm.Host
	Launcher rm.Launcher
	// Launchers are the launchers of other backends (see Config).
	Launchers map[rm.Backend]rm.Launcher
	// Meters may be nil. The supervisor runs their sampling, nudging the
	// loop of each policy whose runner exited.
	Meters rm.Meters
	// Targets makes the registrar and the demand source of a policy's
	// target; the supervisor closes its Demand when the target's loop ends.
	// An error is retried at the next refresh.
	Targets func(ctx context.Context, p rm.Policy) (Target, error)
	// Admission is shared by every loop; nil admits up to each max.
	Admission *Admission
	Now       func() time.Time
	Logger    *slog.Logger
	// AttemptsDir is where this host's runners work (the data directory's
	// attempts/, datadir.Dir.Attempts): the orphan sweep at start looks
	// for runner processes whose working directory is under it. "" looks
	// for none.
	AttemptsDir string
	// Drain: when Run's context ends, remove idle runners and wait for busy
	// ones (bounded by DrainTimeout when set). Without it, idle runners are
	// removed and busy ones left to their jobs, to be re-adopted at the
	// next start (bounded by Loop.StopTimeout).
	Drain        bool
	DrainTimeout time.Duration
	// RefreshEvery is how often policies are re-read (DefaultRefreshEvery);
	// Refresh asks at once.
	RefreshEvery time.Duration
	// SampleEvery, when set, samples the meters at that interval instead of
	// their own (meter.SampleEvery, 2 s): tests with short jobs use it.
	SampleEvery time.Duration
	// Budget reports GitHub's REST budget for Status; may be nil.
	Budget func() rm.Budget
	// Runner reports the installed runner for Status; may be nil.
	Runner func() *status.Runner
	// Loop holds the timeouts, paces and caps of every loop.
	Loop LoopOptions
	// RunnerEnv, OnPass, OnJobStarted and OnJobEnded are given to every
	// loop (see Config).
	RunnerEnv []string
	// Slots runs repositories' attempts warm (Config.Slots); every loop
	// shares it.
	Slots        rm.Slots
	OnPass       func(targetKey string, took time.Duration, err error)
	OnJobStarted func(policy string, s rm.StartSplit)
	OnJobEnded   func(policy, result string, ran time.Duration)
	// Machine is the machine the supervisor runs on (platform.Machine):
	// the host's CPU in Status, this process's identity for the host
	// lease, and the runner processes of AttemptsDir for the orphan sweep at
	// start. nil is a machine that tells nothing: no CPU figure, no
	// orphan found, and a lease a dead daemon of this machine left is
	// taken over only at its expiry.
	Machine rm.Machine
	// Installs are the runners installed in the data directory (see
	// Config.Installs).
	Installs rm.RunnerInstalls
}

// Supervisor runs the loops of a host: one per target of its policies that
// is active (or still has live attempts), started, updated and stopped as
// policies are added, paused, edited or removed in the journal. At start it
// stops runner processes no live attempt owns; each loop's first pass
// re-adopts the live ones. It also runs the meters' sampling, which nudges
// a target's loop when one of its runners exits.
type Supervisor struct {
	cfg     SupervisorConfig
	log     *slog.Logger
	tab     *table
	refresh chan struct{}
	running atomic.Bool

	mu        sync.Mutex
	loops     map[string]*loopRun
	policies  []rm.Policy // owned by the host, at the last refresh
	targetErr map[string]string
	refusals  map[string]int
	started   time.Time
}

// meterStore is the journal as the meters read it: the host's live
// attempts from the loops' cache.
func (s *Supervisor) meterStore() store.Store {
	if c, ok := s.cfg.Store.(*liveCache); ok {
		return cachedView{c}
	}
	return s.cfg.Store
}

// NewSupervisor checks cfg and returns a supervisor.
func NewSupervisor(cfg SupervisorConfig) (*Supervisor, error) {
	switch {
	case cfg.Store == nil:
		return nil, errors.New("reconcile: a supervisor needs a Store")
	case cfg.Host.ID.IsZero():
		return nil, errors.New("reconcile: a supervisor needs its Host (with an ID)")
	case cfg.Launcher == nil:
		return nil, errors.New("reconcile: a supervisor needs a Launcher")
	case cfg.Targets == nil:
		return nil, errors.New("reconcile: a supervisor needs Targets, to reach GitHub")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if cfg.RefreshEvery <= 0 {
		cfg.RefreshEvery = DefaultRefreshEvery
	}
	if cfg.Admission == nil {
		cfg.Admission = &Admission{}
	}
	if cfg.Machine == nil {
		cfg.Machine = noMachine{}
	}
	// The loops' writes and reads of the journal go through one cache of
	// the host's live attempts (livecache.go).
	cfg.Store = newLiveCache(cfg.Store, cfg.Host.ID)
	return &Supervisor{
		cfg:       cfg,
		log:       cfg.Logger,
		tab:       newTable(),
		refresh:   make(chan struct{}, 1),
		loops:     make(map[string]*loopRun),
		targetErr: make(map[string]string),
		refusals:  make(map[string]int),
	}, nil
}

// Refresh asks the supervisor to re-read the policies now (after an edit).
func (s *Supervisor) Refresh() {
	select {
	case s.refresh <- struct{}{}:
	default:
	}
}

// NudgeAll asks every loop for a pass now (the journal is back after an
// outage: passes that failed need not wait for their backoff).
func (s *Supervisor) NudgeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, lr := range s.loops {
		lr.loop.Nudge()
	}
}

// Nudge asks the loop of a target (by ScaleTarget.Key) for a pass now.
func (s *Supervisor) Nudge(targetKey string) {
	s.mu.Lock()
	lr := s.loops[targetKey]
	s.mu.Unlock()
	if lr != nil {
		lr.loop.Nudge()
	}
}

// Run runs the host's loops until ctx ends, then stops them: by default
// idle runners are deregistered and stopped and busy ones keep their jobs
// (the next start re-adopts them); with Drain, busy ones are awaited too.
// It holds the host's lease in the journal meanwhile. It returns nil when
// ctx ends, an error when the journal cannot be written at start or another
// daemon holds the host's lease (a *store.LeaseHeldError naming it), and
// ErrLeaseLost if another daemon took the lease while it ran.
func (s *Supervisor) Run(ctx context.Context) error {
	if !s.running.CompareAndSwap(false, true) {
		return errors.New("reconcile: supervisor is already running")
	}
	defer s.running.Store(false)
	host := s.cfg.Host
	host.SeenAt = s.cfg.Now()
	if err := s.cfg.Store.PutHost(ctx, host); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return fmt.Errorf("record host %s in the journal: %w", host.Name, err)
	}
	lease, err := s.takeLease(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return err
	}
	defer lease.release()
	ctx, lost := context.WithCancelCause(ctx)
	defer lost(nil)
	// The lease is renewed until Run returns, through a drain too.
	leaseCtx, stopLease := context.WithCancel(context.WithoutCancel(ctx))
	var renewing sync.WaitGroup
	renewing.Go(func() { lease.keep(leaseCtx, lost) })
	defer renewing.Wait()
	defer stopLease()
	s.mu.Lock()
	s.started = s.cfg.Now()
	s.mu.Unlock()
	s.sweep(ctx)
	s.sweepRoots(ctx, 0)
	swept := s.cfg.Now()

	// Loops and sampling outlive ctx while they drain.
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	var sampling sync.WaitGroup
	sampling.Go(func() { s.sample(bg) })

	t := time.NewTicker(s.cfg.RefreshEvery)
	defer t.Stop()
	for {
		if err := s.reconcileLoops(ctx, bg); err != nil && ctx.Err() == nil {
			s.log.Warn("policies not re-read; retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			s.stopAll()
			stopBG()
			sampling.Wait()
			if err := context.Cause(ctx); errors.Is(err, ErrLeaseLost) {
				return err
			}
			return nil
		case <-s.refresh:
		case <-t.C:
			if now := s.cfg.Now(); now.Sub(swept) >= rootSweepEvery {
				s.sweepRoots(ctx, rootSweepMinAge)
				swept = now
			}
		}
	}
}

// stopAll ends every loop (each drains first with Drain) and closes their
// targets.
func (s *Supervisor) stopAll() {
	s.mu.Lock()
	loops := slices.Collect(maps.Values(s.loops))
	s.mu.Unlock()
	if s.cfg.Drain {
		s.log.Info("draining the host's runners", "loops", len(loops))
	}
	for _, lr := range loops {
		lr.cancel()
	}
	for _, lr := range loops {
		<-lr.done
	}
}

// sample runs the meters: their own loop, or every SampleEvery.
func (s *Supervisor) sample(ctx context.Context) {
	m := s.cfg.Meters
	if m == nil {
		return
	}
	if s.cfg.SampleEvery <= 0 {
		m.Run(ctx, s.meterStore(), s.cfg.Host.ID, nil, s.nudgePolicy)
		return
	}
	t := time.NewTicker(s.cfg.SampleEvery)
	defer t.Stop()
	for {
		for _, p := range m.SampleOnce(s.meterStore(), s.cfg.Host.ID) {
			s.nudgePolicy(p)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// nudgePolicy nudges the loop that serves policy id, as the last refresh
// of the policies has it.
func (s *Supervisor) nudgePolicy(id rm.PolicyID) {
	s.mu.Lock()
	var key string
	for _, p := range s.policies {
		if p.ID == id {
			key = p.Target.Key()
			break
		}
	}
	lr := s.loops[key]
	s.mu.Unlock()
	if lr != nil {
		lr.loop.Nudge()
	}
}

// Status is a snapshot of the host's figures: memory and disk as admission
// last saw them, each policy's counts, demand and last refusal, the live
// attempts, GitHub's budget and the refusals counted since start.
func (s *Supervisor) Status() status.Status {
	st := status.Status{At: s.cfg.Now(), Host: s.cfg.Host, Memory: s.cfg.Admission.Status(), Refusals: map[string]int{}}
	if v, ok := s.cfg.Machine.CPUPercent(); ok {
		st.HostCPUPercent = &v
	}
	if s.cfg.Budget != nil {
		st.Budget = s.cfg.Budget()
	}
	if s.cfg.Runner != nil {
		st.Runner = s.cfg.Runner()
	}
	s.mu.Lock()
	maps.Copy(st.Refusals, s.refusals)
	keys := slices.Sorted(maps.Keys(s.loops))
	loops := make([]*loopRun, 0, len(keys))
	for _, k := range keys {
		loops = append(loops, s.loops[k])
	}
	policies := slices.Clone(s.policies)
	targetErr := maps.Clone(s.targetErr)
	s.mu.Unlock()
	shown := make(map[rm.PolicyID]bool)
	for _, lr := range loops {
		snap := lr.loop.snapshot()
		for _, ps := range snap.policies {
			shown[ps.ID] = true
			st.Policies = append(st.Policies, ps)
		}
		st.Attempts = append(st.Attempts, snap.attempts...)
		for _, j := range snap.jobs {
			// An unmatched job is told by every loop of its scope: once.
			if j.State == status.JobUnmatched && slices.ContainsFunc(st.Jobs, func(o status.Job) bool { return o.State == status.JobUnmatched && o.ID == j.ID }) {
				continue
			}
			st.Jobs = append(st.Jobs, j)
		}
	}
	status.SortJobs(st.Jobs)
	for _, p := range policies {
		if shown[p.ID] {
			continue
		}
		ps := status.PolicyOf(p)
		ps.LastError = targetErr[p.Target.Key()]
		st.Policies = append(st.Policies, ps)
	}
	slices.SortFunc(st.Policies, func(a, b status.Policy) int { return cmp.Compare(a.Name, b.Name) })
	if m := s.cfg.Meters; m != nil {
		for i := range st.Attempts {
			if u, ok := m.Peek(st.Attempts[i].ID); ok {
				st.Attempts[i].PeakRSSBytes = max(st.Attempts[i].PeakRSSBytes, u.PeakRSSBytes)
				st.Attempts[i].CPUMillicores = u.CPUAvgMillicores
				st.Attempts[i].UsageSource = u.Source
			}
		}
	}
	return st
}

// StopAttempt stops a live attempt's runner (its registration removed
// first, even while it runs a job) and returns once the attempt is
// concluded, or ctx ends. An attempt that already ended is left as is.
func (s *Supervisor) StopAttempt(ctx context.Context, id rm.AttemptID) error {
	a, err := s.cfg.Store.Attempt(ctx, id)
	if err != nil {
		return fmt.Errorf("stop attempt %s: %w", id, err)
	}
	if !a.Live() {
		return nil
	}
	p, err := s.cfg.Store.Policy(ctx, a.Policy)
	if err != nil {
		return fmt.Errorf("stop attempt %s: its policy: %w", id, err)
	}
	if !p.IsOwnedBy(s.cfg.Host.ID) {
		return fmt.Errorf("stop attempt %s: its policy %s is served by host %s, not this one: stop it there", id, p.Name, p.Host)
	}
	s.mu.Lock()
	lr := s.loops[p.Target.Key()]
	s.mu.Unlock()
	if lr == nil {
		return fmt.Errorf("stop attempt %s: no loop serves policy %s on this host; is the manager running its policies?", id, p.Name)
	}
	select {
	case <-lr.loop.StopAttempt(id):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("stop attempt %s: %w", id, ctx.Err())
	}
}

// RunOnce runs one pass of the loop of every wanted target (for `run
// --once`): it concludes, reaps and keeps min idle; demand is not watched,
// so it launches for min idle only, and a runner found gone is concluded
// by what the pass knows (GitHub's runner list, the runner's own trace),
// without waiting for a word of its job that only a watch brings. Runners
// it launches keep running after it returns. It must not run beside a
// running supervisor of the same host.
func (s *Supervisor) RunOnce(ctx context.Context) error {
	host := s.cfg.Host
	host.SeenAt = s.cfg.Now()
	if err := s.cfg.Store.PutHost(ctx, host); err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started
		}
		return fmt.Errorf("record host %s in the journal: %w", host.Name, err)
	}
	lease, err := s.takeLease(ctx)
	if err != nil {
		return err
	}
	defer lease.release()
	leaseCtx, stopLease := context.WithCancel(ctx)
	var renewing sync.WaitGroup
	renewing.Go(func() { lease.keep(leaseCtx, func(error) {}) })
	defer renewing.Wait()
	defer stopLease()
	s.sweep(ctx)
	s.sweepRoots(ctx, 0)
	gs, wanted, err := s.groups(ctx)
	if err != nil {
		return err
	}
	var errs []error
	for _, g := range gs {
		if !wanted[g.key] {
			continue
		}
		target, err := s.cfg.Targets(ctx, g.policies[0])
		if err != nil {
			errs = append(errs, fmt.Errorf("connect to GitHub for %s: %w", g.policies[0].Target, err))
			continue
		}
		cfg := s.loopConfig(target, g.policies)
		cfg.once = true
		loop, err := NewLoop(cfg)
		if err == nil {
			_, err = loop.Reconcile(ctx)
			loop.Close()
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", g.policies[0].Target, err))
		}
		if err := target.Demand.Close(ctx); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", g.policies[0].Target, err))
		}
	}
	return errors.Join(errs...)
}
