// Package fleetweights keeps the fleet's memory of job weights: it wraps a
// host's attempt meters so that every concluded attempt that ran a job has
// its usage recorded in the store's weights table (store.Fleet), with its
// job's identity, policy and host, and so that admission expects a new
// attempt of a policy to peak at what the whole fleet measured for that
// policy, not only this host.
//
// It is a wrapper, not part of the meters or of reconcile: the meters
// sample this host's processes and keep its peaks file; the loops tell the
// meters how each attempt ended (Ended) once the conclusion is in the
// journal, and ask them what a new attempt is expected to peak at
// (ExpectedPeak). Both questions pass through here, so neither the meters
// nor the reconcile pass know of the fleet.
//
// Recording reads the concluded attempt and its policy back from the
// journal (two reads) and writes its weight (one write), within
// DefaultTimeout; a failure is logged and never undoes the conclusion,
// which is already written. GitHub's later word on an attempt
// (the job named, an outcome corrected) calls Ended again, and recording
// one attempt again replaces its weight.
//
// Expected peaks: the fleet's weights of the policy's newest
// meter.PeaksKept jobs, their 90th percentile peak RSS plus 10 % headroom,
// the rule the meters apply to the banked peaks (the percentile follows
// most jobs without letting one outlier hold a slot for good). While the
// fleet has no weight of the policy the wrapped meters answer (the banked
// peaks, else the policy's estimate). Each policy's figures are read at
// most once per RefreshEvery (5 minutes), and again after this host ends a
// job of it, so a pass adds no query.
package fleetweights

import (
	"context"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/store"
)

// DefaultRefreshEvery is how old a policy's fleet figures may grow before
// admission reads them again. A policy is owned by one host, so its
// weights change by that host's own jobs, which refresh its figures at
// once (Ended); another host's word comes only from before the policy
// moved. With 10 policies it is 2 reads a minute, busy or idle.
const DefaultRefreshEvery = 5 * time.Minute

// DefaultTimeout bounds each read and write of the store.
const DefaultTimeout = 5 * time.Second

// Options configure Wrap; zero fields take the defaults.
type Options struct {
	// Admit makes ExpectedPeak answer from the fleet's weights. Without it
	// the weights are only recorded, and the wrapped meters answer: a
	// single host's peaks file stays its source.
	Admit bool
	// RefreshEvery: DefaultRefreshEvery.
	RefreshEvery time.Duration
	// Newest is how many of a policy's newest weights count: meter.PeaksKept.
	Newest int
	// Timeout bounds each store call: DefaultTimeout.
	Timeout time.Duration
	Logger  *slog.Logger
	// Now is the clock of the refreshes (default time.Now).
	Now func() time.Time
}

// FleetMeters are meters whose ended jobs are recorded as the fleet's job
// weights and whose expected peaks come from them.
type FleetMeters struct {
	rm.Meters
	st    store.Store
	fleet store.Fleet
	host  rm.HostID
	o     Options

	mu    sync.Mutex
	peaks map[rm.PolicyID]cached
}

var _ rm.Meters = (*FleetMeters)(nil)

type cached struct {
	w  store.Weights
	at time.Time
}

// Wrap returns inner recording the job weights of host's attempts in st,
// and, with o.Admit, expecting peaks from them. A store that is no
// store.Fleet (both of the project's are) leaves inner as it is.
func Wrap(inner rm.Meters, st store.Store, host rm.HostID, o Options) rm.Meters {
	fleet, ok := st.(store.Fleet)
	if !ok || inner == nil {
		return inner
	}
	if o.RefreshEvery <= 0 {
		o.RefreshEvery = DefaultRefreshEvery
	}
	if o.Newest <= 0 {
		o.Newest = meter.PeaksKept
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &FleetMeters{Meters: inner, st: st, fleet: fleet, host: host, o: o,
		peaks: map[rm.PolicyID]cached{}}
}

// Ended tells the wrapped meters, then records the attempt's weight when
// it completed a job.
func (f *FleetMeters) Ended(a rm.AttemptID, o rm.Outcome) {
	f.Meters.Ended(a, o)
	if o.Kind != rm.CompletedJob {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.o.Timeout)
	defer cancel()
	if err := f.record(ctx, a); err != nil {
		f.o.Logger.Warn("the weight of a job could not be recorded for the fleet", "attempt", a.String(), "err", err)
	}
}

func (f *FleetMeters) record(ctx context.Context, id rm.AttemptID) error {
	a, err := f.st.Attempt(ctx, id)
	if err != nil {
		return err
	}
	if a.Usage.PeakRSSBytes == 0 {
		// Never sampled: its weight would say nothing of memory and drag
		// the percentiles down.
		f.o.Logger.Debug("a job's weight is not recorded: its usage was never sampled", "attempt", id.String())
		return nil
	}
	w, ok := store.WeightOf(a, f.host, f.repository(ctx, a))
	if !ok {
		return nil // GitHub's word or a force changed it since: not a job
	}
	if err := f.fleet.RecordJobWeight(ctx, w); err != nil {
		return err
	}
	f.mu.Lock()
	delete(f.peaks, a.Policy) // read again at the next admission
	f.mu.Unlock()
	return nil
}

// repository is the repository attempt a's job ran for (RepositoryOf its
// policy, as the journal has it now).
func (f *FleetMeters) repository(ctx context.Context, a rm.Attempt) string {
	p, err := f.st.Policy(ctx, a.Policy)
	if err != nil {
		p = rm.Policy{} // removed since: the workflow ref may still tell
	}
	return RepositoryOf(p, a.Job)
}

// RepositoryOf is the repository a job of p ran for: p's when p serves one
// repository, else the one the job's workflow ref names, else "".
func RepositoryOf(p rm.Policy, j rm.Job) string {
	if p.Target.Scope.Kind == rm.ScopeRepository {
		return p.Target.Scope.Name
	}
	owner, rest, ok := strings.Cut(j.Workflow, "/")
	if !ok {
		return ""
	}
	repo, path, ok := strings.Cut(rest, "/")
	if !ok || owner == "" || repo == "" || !strings.HasPrefix(path, ".github/") {
		return ""
	}
	return owner + "/" + repo
}

// ExpectedPeak is, with Options.Admit, the 90th percentile of the peaks
// of the fleet's newest jobs of p plus 10 % headroom; else, or while the
// fleet has none, the wrapped meters' answer.
func (f *FleetMeters) ExpectedPeak(p rm.PolicyID, estimate uint64) uint64 {
	if !f.o.Admit {
		return f.Meters.ExpectedPeak(p, estimate)
	}
	w := f.Weights(p)
	if w.Count == 0 || w.PeakRSSP90 == 0 {
		return f.Meters.ExpectedPeak(p, estimate)
	}
	v := w.PeakRSSP90
	if s := v + v/10; s >= v {
		return s
	}
	return math.MaxUint64
}

// Weights are the fleet's figures of policy p's newest jobs, as last read
// (at most RefreshEvery ago, or since this host ended a job of p). A read
// that fails is logged and the figures last read are kept (none: Count 0)
// until the next refresh.
func (f *FleetMeters) Weights(p rm.PolicyID) store.Weights {
	now := f.o.Now()
	f.mu.Lock()
	c, ok := f.peaks[p]
	f.mu.Unlock()
	if ok && now.Sub(c.at) < f.o.RefreshEvery && !now.Before(c.at) {
		return c.w
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.o.Timeout)
	defer cancel()
	w, err := f.fleet.Weights(ctx, store.WeightFilter{Policy: p, Newest: f.o.Newest})
	if err != nil {
		f.o.Logger.Warn("the fleet's job weights could not be read: admission uses those last read", "policy", p.String(), "err", err)
		w = c.w
	}
	f.mu.Lock()
	f.peaks[p] = cached{w: w, at: now}
	f.mu.Unlock()
	return w
}
