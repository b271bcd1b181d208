package store

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Fleet is what the hosts sharing one store know of each other: who they
// are and when each was last seen, and how heavy each job has been on any
// of them. The SQLite journal answers it for its one host, so a single
// host runs the same queries as a fleet.
type Fleet interface {
	// RegisterHost inserts or updates a host's record and stamps its
	// heartbeat with h.SeenAt (the current time if zero). RegisteredAt is
	// set by the first registration and kept after. A host without an id
	// is refused with runnermanager.ErrInvalid.
	RegisterHost(ctx context.Context, h FleetHost) error
	// Heartbeat stamps a host's last-seen time; it never moves it back.
	// ErrNotFound if the host is not registered.
	Heartbeat(ctx context.Context, host rm.HostID, at time.Time) error
	// FleetHosts lists every host with its version and last heartbeat, by
	// name.
	FleetHosts(ctx context.Context) ([]FleetHost, error)

	// RecordJobWeight keeps the usage of a concluded attempt that ran a
	// job; recording one attempt again replaces its weight. An invalid
	// weight is refused with runnermanager.ErrInvalid.
	RecordJobWeight(ctx context.Context, w JobWeight) error
	// Weights sums up the weights matching f in one set of percentiles.
	Weights(ctx context.Context, f WeightFilter) (Weights, error)
	// HeaviestJobs sums up the weights matching f per job, heaviest first
	// (by p90 peak RSS, then by count, then by repository, workflow and
	// name), at most f.Limit of them (0: all).
	HeaviestJobs(ctx context.Context, f WeightFilter) ([]JobWeights, error)
}

// FleetHost is a host as the fleet sees it.
type FleetHost struct {
	rm.Host // SeenAt is its last heartbeat
	// Version is the runner-manager version the host runs.
	Version      string
	RegisteredAt time.Time
}

// Stale reports whether the host's last heartbeat is older than after at
// now (or it never sent one).
func (h FleetHost) Stale(now time.Time, after time.Duration) bool {
	return h.SeenAt.IsZero() || now.Sub(h.SeenAt) > after
}

// JobKey is a job's identity across runs: the repository it ran for, its
// workflow and its name.
type JobKey struct {
	Repository string
	Workflow   string
	Name       string
}

// JobWeight is what one attempt's job weighed.
type JobWeight struct {
	Attempt rm.AttemptID
	Policy  rm.PolicyID
	Host    rm.HostID
	Job     JobKey
	Usage   rm.AttemptUsage
	// Duration is how long the job ran (busy to ended).
	Duration time.Duration
	EndedAt  time.Time
}

// Validate checks a weight before it is written.
func (w JobWeight) Validate() error {
	switch {
	case w.Attempt.IsZero() || w.Policy.IsZero():
		return fmt.Errorf("%w: a job weight needs its attempt and policy", rm.ErrInvalid)
	case w.EndedAt.IsZero():
		return fmt.Errorf("%w: the weight of attempt %s has no end time", rm.ErrInvalid, w.Attempt)
	case w.Duration < 0:
		return fmt.Errorf("%w: the weight of attempt %s has a negative duration %s", rm.ErrInvalid, w.Attempt, w.Duration)
	}
	return nil
}

// WeightOf is the weight of attempt a, run by host for repository; ok is
// false unless a completed a job (an idle exit or a failure says nothing
// of a job's weight).
func WeightOf(a rm.Attempt, host rm.HostID, repository string) (w JobWeight, ok bool) {
	if a.Outcome.Kind != rm.CompletedJob || a.EndedAt.IsZero() {
		return JobWeight{}, false
	}
	from := a.BusyAt
	if from.IsZero() {
		from = a.StartedAt
	}
	var d time.Duration
	if !from.IsZero() && a.EndedAt.After(from) {
		d = a.EndedAt.Sub(from)
	}
	return JobWeight{
		Attempt: a.ID, Policy: a.Policy, Host: host,
		Job:   JobKey{Repository: repository, Workflow: a.Job.Workflow, Name: a.Job.Name},
		Usage: a.Usage, Duration: d, EndedAt: a.EndedAt,
	}, true
}

// WeightFilter selects weights; zero fields do not filter.
type WeightFilter struct {
	Policy rm.PolicyID
	// Job's non-empty fields must match.
	Job JobKey
	// Since bounds EndedAt: Since ≤ EndedAt.
	Since time.Time
	// Newest counts only the newest N weights (by EndedAt) of each group.
	Newest int
	// Limit caps HeaviestJobs' list.
	Limit int
}

// Weights are nearest-rank percentiles of the weights of a set of jobs:
// the p-th percentile of n values is the ⌈p·n⌉-th smallest. (Stores keep
// the uint64 quantities as int64: values from 2⁶³ up, far beyond any
// machine's memory, would sort as negative.)
type Weights struct {
	Count                  int
	PeakRSSP50, PeakRSSP90 uint64
	// CPU in millicores: the average over each job's life, and its busiest
	// interval.
	CPUAvgP50, CPUAvgP90   uint32
	CPUPeakP50, CPUPeakP90 uint32
	DurationP50            time.Duration
	DurationP90            time.Duration
}

// JobWeights are the weights of one job.
type JobWeights struct {
	Job JobKey
	Weights
}

// Percentile is the nearest-rank p-th percentile (0 < p ≤ 1) of sorted, as
// PostgreSQL's percentile_disc computes it; 0 for no values.
func Percentile[T any](sorted []T, p float64) T {
	var zero T
	if len(sorted) == 0 {
		return zero
	}
	k := int(math.Ceil(p * float64(len(sorted))))
	return sorted[min(max(k, 1), len(sorted))-1]
}

// SumWeights computes the percentiles of ws, for a store that cannot in
// its query language.
func SumWeights(ws []JobWeight) Weights {
	n := len(ws)
	rss := make([]uint64, 0, n)
	avg := make([]uint32, 0, n)
	peak := make([]uint32, 0, n)
	dur := make([]time.Duration, 0, n)
	for _, w := range ws {
		rss = append(rss, w.Usage.PeakRSSBytes)
		avg = append(avg, w.Usage.CPUAvgMillicores)
		peak = append(peak, w.Usage.CPUPeakMillicores)
		dur = append(dur, w.Duration)
	}
	slices.Sort(rss)
	slices.Sort(avg)
	slices.Sort(peak)
	slices.Sort(dur)
	return Weights{
		Count:      n,
		PeakRSSP50: Percentile(rss, 0.5), PeakRSSP90: Percentile(rss, 0.9),
		CPUAvgP50: Percentile(avg, 0.5), CPUAvgP90: Percentile(avg, 0.9),
		CPUPeakP50: Percentile(peak, 0.5), CPUPeakP90: Percentile(peak, 0.9),
		DurationP50: Percentile(dur, 0.5), DurationP90: Percentile(dur, 0.9),
	}
}

// SortHeaviest orders per-job weights as HeaviestJobs returns them.
func SortHeaviest(js []JobWeights) {
	slices.SortStableFunc(js, func(a, b JobWeights) int {
		switch {
		case a.PeakRSSP90 != b.PeakRSSP90:
			if a.PeakRSSP90 > b.PeakRSSP90 {
				return -1
			}
			return 1
		case a.Count != b.Count:
			return b.Count - a.Count
		case a.Job.Repository != b.Job.Repository:
			return cmp.Compare(a.Job.Repository, b.Job.Repository)
		case a.Job.Workflow != b.Job.Workflow:
			return cmp.Compare(a.Job.Workflow, b.Job.Workflow)
		}
		return cmp.Compare(a.Job.Name, b.Job.Name)
	})
}
