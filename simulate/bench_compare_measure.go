package simulate

import (
	"context"
	"slices"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// What a side-by-side run (RunCompare) measures of each scaler: the job
// figures from the fake GitHub's record, the bound a list schedule gives,
// and, through pidLauncher, when each runner started and what the live
// runners hold in memory.

// jobsResult fills the job figures: served, makespan, ideal, efficiency,
// the bounds (queue order; with res.Ready runners free at the first job
// and a runner's boot), waits, the most jobs in flight.
func jobsResult(res *ScalerResult, jobs []fakegithub.JobRecord, maxN int, boot time.Duration) {
	var first, last time.Time
	var sum time.Duration
	var waits []time.Duration
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, j := range jobs {
		if first.IsZero() || j.QueuedAt.Before(first) {
			first = j.QueuedAt
		}
		if j.Status != "completed" || j.StartedAt.IsZero() {
			continue
		}
		res.Served++
		last = maxTime(last, j.CompletedAt)
		sum += j.CompletedAt.Sub(j.StartedAt)
		waits = append(waits, j.StartedAt.Sub(j.QueuedAt))
		edges = append(edges, edge{j.StartedAt, 1}, edge{j.CompletedAt, -1})
	}
	res.Wait = quantiles(waits)
	if res.Served == 0 {
		return
	}
	res.MakespanSeconds = last.Sub(first).Seconds()
	res.IdealSeconds = sum.Seconds() / float64(maxN)
	res.Efficiency = ratio(res.IdealSeconds, res.MakespanSeconds)
	res.ListSeconds = listSchedule(jobs, maxN).Seconds()
	res.ListEfficiency = ratio(res.ListSeconds, res.MakespanSeconds)
	res.ReachableSeconds = bootBound(jobs, maxN, res.Ready, boot).Seconds()
	res.ReachableEfficiency = ratio(res.IdealSeconds, res.ReachableSeconds)
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	cur := 0
	for _, e := range edges {
		cur += e.d
		res.PeakJobs = max(res.PeakJobs, cur)
	}
}

// listSchedule is the makespan of the served jobs, in queue order, on maxN
// runners that take a job the instant it is queued or a runner frees.
func listSchedule(jobs []fakegithub.JobRecord, maxN int) time.Duration {
	return bootBound(jobs, maxN, len(jobs), 0)
}

// bootBound is the makespan of the served jobs, in queue order, at most
// maxN at once, when only the first ready of them may start the instant
// they are queued and every later one waits, besides, for a boot from the
// first job's queueing: the best a scaler can do that had ready runners
// listening (or booting: counted as listening) when the first job came
// and, seeing it at once, started any number of runners then, each
// listening a boot later. It bounds every scaler alike that had no more
// than ready runners then, whatever it does after.
func bootBound(jobs []fakegithub.JobRecord, maxN, ready int, boot time.Duration) time.Duration {
	var served []fakegithub.JobRecord
	for _, j := range jobs {
		if j.Status == "completed" && !j.StartedAt.IsZero() {
			served = append(served, j)
		}
	}
	if len(served) == 0 || maxN < 1 {
		return 0
	}
	slices.SortStableFunc(served, func(a, b fakegithub.JobRecord) int { return a.QueuedAt.Compare(b.QueuedAt) })
	t0 := served[0].QueuedAt
	free := make([]time.Duration, maxN) // when each runner frees, after t0
	var end time.Duration
	for k, j := range served {
		i := slices.Index(free, slices.Min(free))
		start := max(free[i], j.QueuedAt.Sub(t0))
		if k >= ready {
			start = max(start, boot)
		}
		free[i] = start + j.CompletedAt.Sub(j.StartedAt)
		end = max(end, free[i])
	}
	return end
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// sumRSS is the RSS of the process trees of pids.
func sumRSS(pids []int) uint64 {
	if len(pids) == 0 {
		return 0
	}
	var total uint64
	for _, u := range platform.SampleTrees(pids) {
		total += u.RSSBytes
	}
	return total
}

// pidLauncher is a launcher that keeps the runner processes it started,
// for their memory.
type pidLauncher struct {
	rm.Launcher
	mu      sync.Mutex
	procs   []rm.Process
	started map[rm.AttemptID]time.Time
}

func (l *pidLauncher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	p, err := l.Launcher.Launch(ctx, spec)
	if err == nil {
		l.mu.Lock()
		l.procs = append(l.procs, p)
		if l.started == nil {
			l.started = map[rm.AttemptID]time.Time{}
		}
		l.started[spec.Attempt] = time.Now()
		l.mu.Unlock()
	}
	return p, err
}

// queueToStart is, per served job, from its queueing to the start of
// the process of the runner that ran it.
func (l *pidLauncher) queueToStart(host rm.HostID, jobs []fakegithub.JobRecord) Quantiles {
	l.mu.Lock()
	defer l.mu.Unlock()
	byName := map[string]time.Time{}
	for id, at := range l.started {
		byName[rm.RunnerName(host, id)] = at
	}
	var ds []time.Duration
	for _, j := range jobs {
		if at, ok := byName[j.RunnerName]; ok && j.Status == "completed" {
			ds = append(ds, max(at.Sub(j.QueuedAt), 0))
		}
	}
	return quantiles(ds)
}

// RanJob passes the wrapped launcher's evidence on (see timedLauncher).
func (l *pidLauncher) RanJob(a rm.AttemptID) bool {
	ev, ok := l.Launcher.(interface{ RanJob(rm.AttemptID) bool })
	return ok && ev.RanJob(a)
}

func (l *pidLauncher) launched() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.procs)
}

// rss is the live runners' memory and count.
func (l *pidLauncher) rss() (uint64, int) {
	l.mu.Lock()
	var live []int
	for _, p := range l.procs {
		select {
		case <-p.Done():
		default:
			live = append(live, p.PID())
		}
	}
	l.mu.Unlock()
	return sumRSS(live), len(live)
}
