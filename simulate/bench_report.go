package simulate

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"runtime"
	"slices"
	"strconv"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// BenchReport is what a benchmark measured. It marshals to the JSON the
// bench command writes; durations are in milliseconds.
type BenchReport struct {
	Mode string `json:"mode"`
	// ClassicPollMS is classic mode's demand poll interval.
	ClassicPollMS float64 `json:"classic_poll_ms,omitempty"`
	// Webhooks is set when the fake GitHub sent workflow_job webhooks to
	// the daemon (classic mode).
	Webhooks bool   `json:"webhooks,omitempty"`
	Host     string `json:"host"` // GOOS/GOARCH, CPUs
	Seed     uint64 `json:"seed"`
	Policies int    `json:"policies"`
	// SpanSeconds is how long jobs kept arriving; ElapsedSeconds from the
	// first arrival until every job completed and every attempt ended.
	SpanSeconds    float64 `json:"span_seconds"`
	ElapsedSeconds float64 `json:"elapsed_seconds"`

	// Queued jobs, Served (completed, whatever their result), Failed
	// (completed with a failure), Canceled, RanTwice (started more than
	// once: should be 0), DistinctRunners (one per job when ephemeral).
	Queued          int `json:"jobs_queued"`
	Served          int `json:"jobs_served"`
	Failed          int `json:"jobs_failed"`
	Canceled        int `json:"jobs_canceled"`
	RanTwice        int `json:"jobs_started_twice"`
	DistinctRunners int `json:"distinct_runners"`

	// Wait is from a job's queueing to its start on a runner.
	Wait Quantiles `json:"wait_ms"`
	// Recycle is from a runner's exit to the start of the next runner
	// process of its policy, for exits that left a job of the policy
	// waiting with no other runner on its way.
	Recycle Quantiles `json:"recycle_ms"`
	// Launch is the launcher's part of a launch: asked to process started.
	Launch Quantiles `json:"launch_ms"`
	// Where a runner's life goes: RunnerToJob from its process start to
	// its job's start (the fake runner's start-up, session and job
	// assignment), JobRun the job itself, JobToExit from the job's
	// completion to the process exit.
	RunnerToJob Quantiles `json:"runner_to_job_ms"`
	JobRun      Quantiles `json:"job_run_ms"`
	JobToExit   Quantiles `json:"job_to_exit_ms"`

	PerPolicy []BenchPolicy `json:"per_policy"`

	Admission BenchAdmission `json:"admission"`
	Calls     BenchCalls     `json:"github_calls"`
	Daemon    BenchDaemon    `json:"daemon"`

	// JournalBytes is the journal's size on disk (database, WAL and shared
	// memory files) at the end; JournalElsewhere says the journal was a
	// store given to the bench (BenchOptions.Store), not a file.
	JournalBytes     int64 `json:"journal_bytes"`
	JournalElsewhere bool  `json:"journal_elsewhere,omitempty"`
	// Attempts counts the journal's attempts by outcome.
	Attempts map[string]int `json:"attempts"`
	// LiveWhenQueueEmptied is how many attempts were live when the last
	// job completed (spare runners); Stranded how many still were a
	// demand poll and 10 s later (should be 0).
	LiveWhenQueueEmptied int `json:"live_when_queue_emptied"`
	Stranded             int `json:"runners_stranded"`
}

// Quantiles of a set of durations, in milliseconds.
type Quantiles struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func quantiles(ds []time.Duration) Quantiles {
	slices.Sort(ds)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	q := Quantiles{Count: len(ds)}
	if len(ds) > 0 {
		q.P50, q.P95, q.P99 = ms(percentile(ds, 50)), ms(percentile(ds, 95)), ms(percentile(ds, 99))
		q.Max = ms(ds[len(ds)-1])
	}
	return q
}

// BenchPolicy is one policy's figures.
type BenchPolicy struct {
	Name string `json:"name"`
	Max  int    `json:"max"`
	// EstimateBytes is the policy's first-job memory estimate.
	EstimateBytes uint64 `json:"estimate_bytes"`
	Jobs          int    `json:"jobs"`
	// PeakRunners is the most runner processes alive at once (from the
	// launcher's start and exit times); PeakJobs the most of its jobs
	// running at once (from the fake GitHub's records). Both ≤ Max.
	PeakRunners int `json:"peak_runners"`
	PeakJobs    int `json:"peak_jobs"`
	// MinAdmitted is the lowest admitted capacity seen while the policy
	// had demand or runners; CappedSamples how many Status samples showed
	// admission holding it below its max.
	MinAdmitted   int `json:"min_admitted"`
	CappedSamples int `json:"capped_samples"`
}

// BenchAdmission is the host's memory admission as the bench saw it.
type BenchAdmission struct {
	HostMemoryBytes uint64 `json:"host_memory_bytes"`
	ReserveBytes    uint64 `json:"reserve_bytes"`
	// PeakCommittedBytes is the most memory admission counted as committed
	// (Σ max(RSS, expected peak) over live runners) in a Status sample;
	// it stays ≤ host memory − reserve.
	PeakCommittedBytes uint64 `json:"peak_committed_bytes"`
	// Refusals counts refused launches by reason (memory, disk, max).
	Refusals map[string]int `json:"refusals"`
	Samples  int            `json:"status_samples"`
}

// BenchCalls are the manager's GitHub calls.
type BenchCalls struct {
	// REST requests (including free ones: /rate_limit, 304s, token
	// exchanges); RESTCharged those that spend the rate-limit budget.
	REST        int `json:"rest"`
	RESTCharged int `json:"rest_charged"`
	// ScaleSet requests to the scale-set service (admin and message queue).
	ScaleSet          int     `json:"scale_set"`
	RESTPerJob        float64 `json:"rest_per_job"`
	RESTChargedPerJob float64 `json:"rest_charged_per_job"`
	ScaleSetPerJob    float64 `json:"scale_set_per_job"`
	RunnerCallsPerJob float64 `json:"runner_calls_per_job"`
	CallLogTruncated  bool    `json:"call_log_truncated,omitempty"`
	// RESTBudgetLowest is the least the fake's REST budget (GitHub's 5,000
	// an hour) had left during the run; RESTBudgetExhausted says it hit 0.
	RESTBudgetLowest    int  `json:"rest_budget_lowest"`
	RESTBudgetExhausted bool `json:"rest_budget_exhausted"`
	// ByRoute counts the manager's requests (REST and scale-set service)
	// by route; "(304)" marks the REST ones answered Not Modified (free).
	ByRoute map[string]int `json:"by_route"`
}

// BenchDaemon is what the manager's process cost: its own CPU (user +
// system, runner processes excluded) and its peak resident memory. The
// fake GitHub runs in the same process and is included in both; the CPU is
// also split by part, from a CPU profile of the run.
type BenchDaemon struct {
	CPUSeconds float64 `json:"cpu_seconds"`
	// CPUPercentOfOneCore is CPUSeconds over the elapsed time.
	CPUPercentOfOneCore float64 `json:"cpu_percent_of_one_core"`
	// CPUSecondsByPart splits the profiled CPU (sampled 100 times a
	// second, so within about 10 ms a part) by the part of the process
	// that spent it: "manager" (the daemon's goroutines), "fake-github",
	// "bench" (arrivals, sampling) and "runtime" (goroutines without a
	// part: the garbage collector's workers, the scheduler), and
	// "unsampled", the rest of CPUSeconds, which the profile did not see.
	// Absent when another CPU profile of the process was running.
	CPUSecondsByPart map[string]float64 `json:"cpu_seconds_by_part,omitempty"`
	// ManagerCPUSeconds is the manager's own share: its goroutines' CPU
	// plus the runtime's and the unsampled in proportion to the manager's
	// part of the labelled CPU (an estimate: the collector works for whoever
	// allocates). ManagerCPUPercentOfOneCore is it over the elapsed time.
	ManagerCPUSeconds          float64 `json:"manager_cpu_seconds,omitempty"`
	ManagerCPUPercentOfOneCore float64 `json:"manager_cpu_percent_of_one_core,omitempty"`
	// CPUProfileError says why the split is absent or partial.
	CPUProfileError string `json:"cpu_profile_error,omitempty"`
	PeakRSSBytes    uint64 `json:"peak_rss_bytes"`
	// PeakRSSSource says how PeakRSSBytes was read.
	PeakRSSSource string `json:"peak_rss_source"`
}

// WriteJSON writes the report, indented, to path.
func (r BenchReport) WriteJSON(path string) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// Report reads the figures of the run so far.
func (b *Bench) Report(ctx context.Context) (BenchReport, error) {
	r := b.reportHead()
	jobs := b.server.Jobs()
	sum, err := b.Summary(ctx)
	if err != nil {
		return r, err
	}
	r.Served, r.Failed, r.Canceled, r.RanTwice, r.DistinctRunners = sum.Served, sum.Failed, sum.Canceled, sum.RanTwice, sum.DistinctRunners
	r.Attempts = sum.Outcomes

	jobsOf, waits := b.jobsByPolicy(jobs)
	r.Wait = quantiles(waits)
	launches := b.launcher.snapshot()
	launchesOf, launchDurs, err := b.launchesByPolicy(ctx, launches)
	if err != nil {
		return r, err
	}
	r.Launch = quantiles(launchDurs)
	r.RunnerToJob, r.JobRun, r.JobToExit = b.runnerLives(jobs, launches)
	var recycles []time.Duration
	for i := range b.policies {
		recycles = append(recycles, recycleTimes(b.host.ID, jobsOf[i], launchesOf[i])...)
	}
	r.Recycle = quantiles(recycles)

	b.mu.Lock()
	for i, p := range b.policies {
		bp := BenchPolicy{Name: p.Name, Max: p.Max, EstimateBytes: p.MemoryEstimate, Jobs: len(jobsOf[i]),
			MinAdmitted: b.minAdmitted[p.ID], CappedSamples: b.capped[p.ID]}
		bp.PeakRunners = peakOverlap(launchesOf[i], func(l launchTimes) (time.Time, time.Time) { return l.started, l.ended })
		bp.PeakJobs = peakOverlap(jobsOf[i], func(j fakegithub.JobRecord) (time.Time, time.Time) { return j.StartedAt, j.CompletedAt })
		r.PerPolicy = append(r.PerPolicy, bp)
	}
	r.Admission = BenchAdmission{HostMemoryBytes: b.opts.HostMemory, ReserveBytes: b.opts.Reserve,
		PeakCommittedBytes: b.peakCommit, Refusals: b.d.Status().Refusals, Samples: b.samples}
	b.mu.Unlock()
	if r.Admission.Refusals == nil {
		r.Admission.Refusals = map[string]int{}
	}

	r.Calls = b.calls(max(r.Served, 1))
	if b.opts.Store == nil {
		r.JournalBytes = fileSizes(datadir.New(b.dataDir).Journal(), "", "-wal", "-shm")
	}
	return r, nil
}

// reportHead is the report's figures of the run as a whole: mode, host,
// span and this process's CPU and memory.
func (b *Bench) reportHead() BenchReport {
	elapsed := time.Since(b.started)
	cpu := processCPU() - b.cpuStart
	rss, rssSrc := peakRSS()
	mode, poll := "scale-set", 0.0
	if b.opts.Classic {
		mode, poll = "classic", float64(b.opts.ClassicPoll.Milliseconds())
	}
	d := BenchDaemon{CPUSeconds: cpu.Seconds(), CPUPercentOfOneCore: 100 * cpu.Seconds() / elapsed.Seconds(),
		PeakRSSBytes: rss, PeakRSSSource: rssSrc}
	parts, err := b.cpuSplit()
	if err != nil {
		d.CPUProfileError = err.Error()
	}
	if len(parts) > 0 {
		parts = maps.Clone(parts)
		addUnsampled(parts, d.CPUSeconds)
		d.CPUSecondsByPart = parts
		d.ManagerCPUSeconds = managerShare(parts)
		d.ManagerCPUPercentOfOneCore = 100 * d.ManagerCPUSeconds / elapsed.Seconds()
	}
	return BenchReport{ClassicPollMS: poll, Webhooks: b.opts.Classic && b.opts.Webhooks,
		Mode: mode, Host: runtime.GOOS + "/" + runtime.GOARCH + ", " + strconv.Itoa(runtime.NumCPU()) + " CPUs",
		Seed: b.opts.Seed, Policies: len(b.policies),
		SpanSeconds: b.opts.Span.Seconds(), ElapsedSeconds: elapsed.Seconds(),
		Queued:   len(b.plan),
		Attempts: map[string]int{},
		Daemon:   d, JournalElsewhere: b.opts.Store != nil,
	}
}

// jobsByPolicy sorts the jobs by the policy their label names, and gives
// every started job's wait.
func (b *Bench) jobsByPolicy(jobs []fakegithub.JobRecord) ([][]fakegithub.JobRecord, []time.Duration) {
	labelOf := map[string]int{}
	for i, p := range b.policies {
		if b.opts.Classic {
			labelOf[p.Name] = i
		} else {
			labelOf[p.Target.ScaleSet] = i
		}
	}
	var waits []time.Duration
	jobsOf := make([][]fakegithub.JobRecord, len(b.policies))
	for _, j := range jobs {
		if !j.StartedAt.IsZero() {
			waits = append(waits, j.StartedAt.Sub(j.QueuedAt))
		}
		for _, l := range j.Labels {
			if i, ok := labelOf[l]; ok {
				jobsOf[i] = append(jobsOf[i], j)
				break
			}
		}
	}
	return jobsOf, waits
}

// launchesByPolicy sorts the launches by their attempt's policy, and gives
// every launch's duration.
func (b *Bench) launchesByPolicy(ctx context.Context, launches []launchTimes) ([][]launchTimes, []time.Duration, error) {
	attemptPolicy := map[rm.AttemptID]int{}
	for i, p := range b.policies {
		as, err := b.store.Attempts(ctx, store.AttemptFilter{Policy: p.ID})
		if err != nil {
			return nil, nil, err
		}
		for _, a := range as {
			attemptPolicy[a.ID] = i
		}
	}
	launchesOf := make([][]launchTimes, len(b.policies))
	var durs []time.Duration
	for _, lt := range launches {
		durs = append(durs, lt.started.Sub(lt.asked))
		if i, ok := attemptPolicy[lt.attempt]; ok {
			launchesOf[i] = append(launchesOf[i], lt)
		}
	}
	return launchesOf, durs, nil
}

// runnerLives are where runners' lives went: from the process start to
// its job's start, the job, and from the job's end to the exit.
func (b *Bench) runnerLives(jobs []fakegithub.JobRecord, launches []launchTimes) (toJob, run, toExit Quantiles) {
	byRunner := make(map[string]fakegithub.JobRecord, len(jobs))
	for _, j := range jobs {
		if j.RunnerName != "" {
			byRunner[j.RunnerName] = j
		}
	}
	var tj, rn, te []time.Duration
	for _, lt := range launches {
		j, ok := byRunner[rm.RunnerName(b.host.ID, lt.attempt)]
		if !ok || j.StartedAt.IsZero() || j.CompletedAt.IsZero() || lt.ended.IsZero() {
			continue
		}
		tj = append(tj, j.StartedAt.Sub(lt.started))
		rn = append(rn, j.CompletedAt.Sub(j.StartedAt))
		te = append(te, lt.ended.Sub(j.CompletedAt))
	}
	return quantiles(tj), quantiles(rn), quantiles(te)
}

// calls counts the manager's GitHub calls per served job.
func (b *Bench) calls(served int) BenchCalls {
	c := BenchCalls{REST: b.server.CallsREST(), ScaleSet: b.server.CallsScaleSet(), ByRoute: map[string]int{}}
	log := b.server.CallLog()
	c.CallLogTruncated = len(log) >= 100_000
	for _, call := range log {
		if call.Kind == fakegithub.KindREST || call.Kind == fakegithub.KindScaleSet {
			route := call.Route
			if call.Status == 304 {
				route += " (304)"
			}
			c.ByRoute[route]++
		}
		if call.Kind != fakegithub.KindREST || call.Status == 304 || call.Status == 0 {
			continue
		}
		if call.Route == fakegithub.RouteRateLimit || call.Route == fakegithub.RouteAccessToken {
			continue
		}
		c.RESTCharged++
	}
	f := float64(served)
	c.RESTPerJob, c.RESTChargedPerJob, c.ScaleSetPerJob = float64(c.REST)/f, float64(c.RESTCharged)/f, float64(c.ScaleSet)/f
	c.RunnerCallsPerJob = float64(b.server.CallsRunner()) / f
	return c
}

// recycleTimes measures, for one policy, each runner exit that left work
// waiting (a job of the policy queued and not started, more such jobs than
// runners already on their way), the time to the start of the next runner
// process the manager asked for after the exit. Launches are matched to
// exits in order, each used once.
func recycleTimes(host rm.HostID, jobs []fakegithub.JobRecord, launches []launchTimes) []time.Duration {
	slices.SortFunc(launches, func(a, b launchTimes) int { return a.asked.Compare(b.asked) })
	jobStart := map[string]time.Time{} // runner name → its job's start
	for _, j := range jobs {
		if j.RunnerName != "" && !j.StartedAt.IsZero() {
			jobStart[j.RunnerName] = j.StartedAt
		}
	}
	var exits []launchTimes
	for _, l := range launches {
		if !l.ended.IsZero() {
			exits = append(exits, l)
		}
	}
	slices.SortFunc(exits, func(a, b launchTimes) int { return a.ended.Compare(b.ended) })
	used := make([]bool, len(launches))
	var out []time.Duration
	for _, e := range exits {
		t := e.ended
		waiting := 0
		for _, j := range jobs {
			if !j.QueuedAt.After(t) && (j.StartedAt.IsZero() || j.StartedAt.After(t)) {
				waiting++
			}
		}
		coming := 0 // runners started before t, alive after it, whose job had not started by t
		for _, l := range launches {
			if !l.asked.Before(t) || (!l.ended.IsZero() && !l.ended.After(t)) {
				continue
			}
			if s, ok := jobStart[rm.RunnerName(host, l.attempt)]; !ok || s.After(t) {
				coming++
			}
		}
		if waiting <= coming {
			continue
		}
		for i, l := range launches {
			if used[i] || l.asked.Before(t) {
				continue
			}
			used[i] = true
			out = append(out, l.started.Sub(t))
			break
		}
	}
	return out
}

// peakOverlap is the most intervals open at once; an interval with no end
// is open to the end.
func peakOverlap[T any](xs []T, span func(T) (time.Time, time.Time)) int {
	type edge struct {
		at time.Time
		d  int
	}
	var edges []edge
	for _, x := range xs {
		from, to := span(x)
		if from.IsZero() {
			continue
		}
		edges = append(edges, edge{from, 1})
		if !to.IsZero() {
			edges = append(edges, edge{to, -1})
		}
	}
	slices.SortFunc(edges, func(a, b edge) int {
		if c := a.at.Compare(b.at); c != 0 {
			return c
		}
		return a.d - b.d
	})
	cur, peak := 0, 0
	for _, e := range edges {
		cur += e.d
		peak = max(peak, cur)
	}
	return peak
}

func fileSizes(base string, suffixes ...string) int64 {
	var n int64
	for _, s := range suffixes {
		if fi, err := os.Stat(base + s); err == nil {
			n += fi.Size()
		}
	}
	return n
}
