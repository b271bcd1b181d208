package chaos

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/warm"
)

// proc is a runner process found by the scan.
type proc struct {
	PID     int
	Exe     string
	Attempt string   // its RUNNER_MANAGER_ATTEMPT, "" if none
	Secrets []string // the daemon's secrets its environment holds, by name
}

// secrets are the values of the daemon's environment no runner may hold,
// by the variable that holds them.
func (w *World) secrets() map[string]string {
	return map[string]string{tokenEnv: w.token, "CHAOS_UNRELATED_SECRET": unrelatedSecret}
}

// Result is one scenario's figures. Counts of things left are taken once
// the run settled, with the daemon running (less the warm spares its
// policy keeps listening on purpose: SparesKept) and again after its
// final SIGTERM, which must remove them too; the larger is kept.
type Result struct {
	Scenario string `json:"scenario"`
	Mode     string `json:"mode"`
	// Jobs is how many jobs the fake queued; Served how many succeeded.
	Jobs   int `json:"jobs"`
	Served int `json:"served"`
	// LostToFault: jobs the fault itself failed (running when GitHub
	// restarted and forgot their runners), not counted against the manager.
	LostToFault int `json:"lost_to_fault,omitempty"`
	RunTwice    int `json:"run_twice"`
	// RegistrationsLeft: runner registrations the fake still holds.
	RegistrationsLeft int `json:"registrations_left"`
	// ProcessesLeft: runner processes still alive.
	ProcessesLeft int `json:"processes_left"`
	// AttemptDirsLeft: <data>/attempts/* but .spare and .failed.
	AttemptDirsLeft int `json:"attempt_dirs_left"`
	// SparesKept: idle runners (registration, process, directory) the
	// daemon kept listening once the run settled, as its policy's warm
	// spares ask; not counted as left while it runs (at most the policy's
	// spare), counted after the final SIGTERM.
	SparesKept int `json:"spares_kept"`
	// FailedRootsKept: <data>/attempts/.failed/* (kept on purpose for a
	// day; reported, not a leak).
	FailedRootsKept int `json:"failed_roots_kept"`
	// LiveWithoutProcess: journal attempts live whose process is gone.
	LiveWithoutProcess int `json:"live_without_process"`
	// SlotsLeftOpen: workspace slots whose record still names an attempt
	// once the daemon stopped (docs/warm.md): a lease never given back.
	// SlotAttempts: the journal's attempts that name the slot they ran in.
	SlotsLeftOpen int `json:"slots_left_open"`
	SlotAttempts  int `json:"slot_attempts"`
	// ChargedWhileLimited: charged REST calls the fake received while a
	// rate limit held (-1: no limit in this scenario). ChargedAllowed is the
	// goal's bound for it.
	ChargedWhileLimited int `json:"charged_while_limited"`
	ChargedAllowed      int `json:"charged_allowed"`
	// RecoverySeconds: per fault end, seconds to the next job started (-1:
	// none started). RecoveryBound is the goal.
	RecoverySeconds []float64 `json:"recovery_seconds"`
	RecoveryBound   float64   `json:"recovery_bound_seconds"`
	// OutcomeMismatches: ended attempts whose journal outcome (completed_job
	// or not) disagrees with whether the fake saw a job run on the runner.
	OutcomeMismatches int            `json:"outcome_mismatches"`
	MismatchDetail    []string       `json:"mismatch_detail,omitempty"`
	Outcomes          map[string]int `json:"outcomes"`
	// AfterStop: what a SIGTERM left while the daemon was down (sigterm-*).
	AfterStop *StopFigures `json:"after_stop,omitempty"`
	// SecretsSeen: runner processes whose environment held a value of the
	// daemon's environment outside the allow-list (its token, an unrelated
	// secret), sampled every second.
	SecretsSeen int      `json:"secrets_seen"`
	SecretNames []string `json:"secret_names,omitempty"`
	// CredentialsFound: places in the daemon's log, the CLI's output or any
	// file of the world's home (config, journal and WAL, attempt roots and
	// logs, state) holding the first 16 characters of a credential the
	// fake handed out or accepted, searched after the final SIGTERM.
	// CredentialLeaks names up to 10 (kind and first four characters).
	CredentialsFound    int       `json:"credentials_found"`
	CredentialLeaks     []string  `json:"credential_leaks,omitempty"`
	CredentialsSearched *Searched `json:"credentials_searched,omitempty"`
	// SpareCredentialsSeen: the search's control, run while the daemon
	// keeps its warm spares: places in their roots holding the runners'
	// own credentials, as they must while a runner lives (at least one
	// when a spare was kept, or the search cannot see).
	SpareCredentialsSeen int `json:"spare_credentials_seen"`
	// MaxRunners: the most runner processes alive at once (sampled).
	MaxRunners int `json:"max_runners"`
	// DaemonCrashes: times the daemon exited on its own (restarted each
	// time, as a service manager would).
	DaemonCrashes int      `json:"daemon_crashes"`
	Seconds       float64  `json:"seconds"`
	Notes         []string `json:"notes,omitempty"`
	// Missed lists the goals missed, one sentence each.
	Missed []string `json:"missed,omitempty"`
}

// StopFigures is what a SIGTERM left, the daemon down.
type StopFigures struct {
	IdleRegistrations int `json:"idle_registrations"`
	BusyRegistrations int `json:"busy_registrations"`
	Processes         int `json:"processes"`
	JobsRunning       int `json:"jobs_running"`
}

func (r *Result) note(format string, args ...any) {
	r.Notes = append(r.Notes, fmt.Sprintf(format, args...))
}

// MaxRecovery is the slowest recovery (-1 if one never happened, 0 if the
// scenario has no fault end).
func (r Result) MaxRecovery() float64 {
	m := 0.0
	for _, s := range r.RecoverySeconds {
		if s < 0 {
			return -1
		}
		m = math.Max(m, s)
	}
	return m
}

// check fills Missed from the figures and the goals.
func (r *Result) check() {
	miss := func(format string, args ...any) { r.Missed = append(r.Missed, fmt.Sprintf(format, args...)) }
	if r.Served < r.Jobs-r.LostToFault {
		miss("%d of %d jobs served (%d lost to the fault itself)", r.Served, r.Jobs, r.LostToFault)
	}
	if r.RunTwice > 0 {
		miss("%d jobs run twice", r.RunTwice)
	}
	for _, c := range []struct {
		n    int
		what string
	}{
		{r.RegistrationsLeft, "registrations left"}, {r.ProcessesLeft, "runner processes left"},
		{r.AttemptDirsLeft, "attempt directories left"}, {r.LiveWithoutProcess, "journal attempts live without a process"},
		{r.OutcomeMismatches, "outcome mismatches"}, {r.SecretsSeen, "runner processes holding a daemon secret"},
		{r.CredentialsFound, "credentials found in logs, CLI output or kept files"},
		{r.DaemonCrashes, "daemon crashes"}, {r.SlotsLeftOpen, "workspace slots left open"},
	} {
		if c.n > 0 {
			miss("%d %s", c.n, c.what)
		}
	}
	if s := r.CredentialsSearched; s != nil && (s.Credentials == 0 || s.Files == 0) {
		miss("the credential search had %d credentials and %d files to search: it proves nothing", s.Credentials, s.Files)
	}
	if r.SparesKept > 0 && r.SpareCredentialsSeen == 0 {
		miss("the credential search found nothing in the roots of %d live spares, which hold their runners' credentials: it cannot see", r.SparesKept)
	}
	if s := r.CredentialsSearched; s != nil && s.Redacted > 0 {
		r.note("the log redactor caught %d credentials on their way out (a leak the code must not attempt)", s.Redacted)
	}
	if r.ChargedWhileLimited > r.ChargedAllowed && r.ChargedWhileLimited >= 0 {
		miss("%d charged REST calls while a limit held (at most %d)", r.ChargedWhileLimited, r.ChargedAllowed)
	}
	for i, s := range r.RecoverySeconds {
		switch {
		case s < 0:
			miss("no job started after fault end #%d", i+1)
		case s > r.RecoveryBound:
			miss("next job %.1f s after fault end #%d (bound %.0f s)", s, i+1, r.RecoveryBound)
		}
	}
	if a := r.AfterStop; a != nil {
		if a.IdleRegistrations > 0 {
			miss("SIGTERM left %d idle registrations", a.IdleRegistrations)
		}
		if idle := a.Processes - a.JobsRunning; idle > 0 {
			miss("SIGTERM left %d runner processes beyond the %d busy ones", idle, a.JobsRunning)
		}
	}
}

// jobCounts sums the fake's jobs by status.
type jobCounts struct{ queued, running, completed, served, twice, total int }

func countJobs(jobs []fakegithub.JobRecord) jobCounts {
	var c jobCounts
	for _, j := range jobs {
		c.total++
		switch j.Status {
		case "queued":
			c.queued++
		case "in_progress":
			c.running++
		case "completed":
			c.completed++
			if j.Result == fakegithub.ResultSucceeded {
				c.served++
			}
		}
		if j.Starts > 1 {
			c.twice++
		}
	}
	return c
}

// errStalled: the run made no progress for too long.
var errStalled = errors.New("no job started or completed")

// waitJobs waits until every job of the fake completed, or no job ran,
// started or completed for stall, or timeout passed.
func (w *World) waitJobs(ctx context.Context, stall, timeout time.Duration) error {
	return w.waitProgress(ctx, stall, timeout, func(c jobCounts) bool { return c.completed == c.total })
}

// waitProgress waits for cond over the job counts, bounded as waitJobs.
func (w *World) waitProgress(ctx context.Context, stall, timeout time.Duration, cond func(jobCounts) bool) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last, lastAt := "", time.Now()
	var c jobCounts
	err := w.Fake.WaitFor(ctx, func() bool {
		jobs := w.Fake.Jobs()
		c = countJobs(jobs)
		starts := 0
		for _, j := range jobs {
			starts += j.Starts
		}
		// A job running is not a stall (a long job shows no progress for
		// minutes) while it may still be running: one that has run longer
		// than the longest job queued plus the stall is stuck (its runner
		// died with GitHub's word on it lost, say).
		if sig := fmt.Sprint(starts, c.completed, c.total); sig != last || w.mayStillRun(jobs, stall) {
			last, lastAt = sig, time.Now()
		}
		if time.Since(lastAt) > stall {
			cancel()
		}
		return cond(c)
	})
	if err != nil {
		if time.Since(lastAt) > stall {
			err = fmt.Errorf("%w for %s", errStalled, stall)
		}
		return fmt.Errorf("%w (jobs: %d queued, %d running, %d completed of %d)", err, c.queued, c.running, c.completed, c.total)
	}
	return nil
}

// mayStillRun reports whether a running job started recently enough to
// be running still.
func (w *World) mayStillRun(jobs []fakegithub.JobRecord, slack time.Duration) bool {
	w.mu.Lock()
	longest := w.longestJob
	w.mu.Unlock()
	for _, j := range jobs {
		if j.Status == "in_progress" && time.Since(j.StartedAt) < longest+slack {
			return true
		}
	}
	return false
}

// leftovers is what the world holds beyond its jobs.
type leftovers struct {
	regs, idleRegs, procs, dirs, failedRoots, live, liveGone int
}

func (l leftovers) clean() bool {
	return l.regs == 0 && l.procs == 0 && l.dirs == 0 && l.live == 0
}

// lessSpares is l less up to spares idle runners the daemon keeps on
// purpose (each a registration, a process, a directory and a live
// attempt), and how many it took off.
func (l leftovers) lessSpares(spares int) (leftovers, int) {
	n := min(spares, l.idleRegs, l.procs, l.dirs, l.live)
	if n <= 0 {
		return l, 0
	}
	l.regs -= n
	l.idleRegs -= n
	l.procs -= n
	l.dirs -= n
	l.live -= n
	return l, n
}

func (w *World) leftovers(ctx context.Context) (leftovers, error) {
	var l leftovers
	for _, r := range w.Fake.Runners() {
		l.regs++
		if !r.Busy {
			l.idleRegs++
		}
	}
	procs, err := scanProcs(w)
	if err != nil {
		return l, err
	}
	l.procs = len(procs)
	d := datadir.New(w.DataDir)
	entries, err := os.ReadDir(d.Attempts())
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return l, err
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			l.dirs++
		}
	}
	failed, _ := os.ReadDir(d.FailedAttempts())
	l.failedRoots = len(failed)
	attempts, err := w.attempts(ctx)
	if err != nil {
		return l, err
	}
	for _, a := range attempts {
		if !a.Live() {
			continue
		}
		l.live++
		if a.PID == 0 || !platform.Alive(a.PID, a.ProcessStart) {
			l.liveGone++
		}
	}
	return l, nil
}

// attempts reads the journal beside the daemon (WAL lets it).
func (w *World) attempts(ctx context.Context) ([]rm.Attempt, error) {
	path := datadir.New(w.DataDir).Journal()
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	st, err := sqlite.Open(path)
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Attempts(ctx, store.AttemptFilter{})
}

// settle waits up to d for the world to hold nothing beyond its ended
// jobs and the policy's warm spares (checked every second) and returns
// what it holds then beyond the spares, and how many spares it kept.
func (w *World) settle(ctx context.Context, d time.Duration) (leftovers, int, error) {
	deadline := time.Now().Add(d)
	for {
		all, err := w.leftovers(ctx)
		l, spares := all.lessSpares(w.spares)
		if err != nil || l.clean() || time.Now().After(deadline) {
			return l, spares, err
		}
		select {
		case <-ctx.Done():
			return l, spares, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// markFaultEnd notes that a fault ended now (or the daemon restarted) and
// makes sure a job is queued, so the time to the next job started measures
// the manager, not an empty queue.
func (w *World) markFaultEnd() {
	now := time.Now()
	w.mu.Lock()
	w.faultEnds = append(w.faultEnds, now)
	w.mu.Unlock()
	if countJobs(w.Fake.Jobs()).queued == 0 {
		w.Enqueue(1, time.Second)
		w.logf("fault end: queued a probe job")
	} else {
		w.logf("fault end")
	}
}

// recoveries returns, per fault end, the seconds to the next job started
// after it (-1 for none).
func (w *World) recoveries() []float64 {
	w.mu.Lock()
	ends := append([]time.Time(nil), w.faultEnds...)
	w.mu.Unlock()
	jobs := w.Fake.Jobs()
	out := make([]float64, 0, len(ends))
	for _, end := range ends {
		best := time.Duration(-1)
		for _, j := range jobs {
			if d := j.StartedAt.Sub(end); !j.StartedAt.IsZero() && d >= 0 && (best < 0 || d < best) {
				best = d
			}
		}
		if best < 0 {
			out = append(out, -1)
		} else {
			out = append(out, math.Round(best.Seconds()*10)/10)
		}
	}
	return out
}

// outcomes compares every ended attempt's outcome with the fake's jobs:
// completed_job exactly when a job ran on the attempt's runner.
func outcomes(attempts []rm.Attempt, jobs []fakegithub.JobRecord) (byKind map[string]int, mismatches []string) {
	ran := map[string]int64{}
	for _, j := range jobs {
		// The fake names a job's last runner only: a job started twice
		// (counted apart) names its second.
		if j.Starts > 0 && j.RunnerName != "" {
			ran[j.RunnerName] = j.ID
		}
	}
	byKind = map[string]int{}
	for _, a := range attempts {
		if a.Live() {
			byKind["live"]++
			continue
		}
		k := string(a.Outcome.Kind)
		if a.Outcome.Kind == rm.Failed {
			k += "(" + string(a.Outcome.Reason) + ")"
		}
		byKind[k]++
		job, ranJob := ran[a.RunnerName]
		switch completed := a.Outcome.Kind == rm.CompletedJob; {
		case completed && !ranJob:
			mismatches = append(mismatches, fmt.Sprintf("attempt %s: journal completed_job, the fake ran no job on %s", a.ID, a.RunnerName))
		case !completed && ranJob:
			mismatches = append(mismatches, fmt.Sprintf("attempt %s: journal %s, the fake ran job %d on %s", a.ID, a.Outcome, job, a.RunnerName))
		}
	}
	sort.Strings(mismatches)
	return byKind, mismatches
}

// sampler watches the world every second: the most runner processes at
// once, runners holding a secret, and daemon crashes (restarted, as a
// service manager would).
type sampler struct {
	w       *World
	done    chan struct{}
	wg      sync.WaitGroup
	mu      sync.Mutex
	max     int
	leaked  map[int]bool
	names   map[string]bool // the secrets seen
	crashes int
}

func newSampler(w *World) *sampler {
	s := &sampler{w: w, done: make(chan struct{}), leaked: map[int]bool{}, names: map[string]bool{}}
	s.wg.Add(1)
	go s.run()
	return s
}

func (s *sampler) run() {
	defer s.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-s.done:
			return
		case <-t.C:
		}
		procs, _ := scanProcs(s.w)
		s.mu.Lock()
		s.max = max(s.max, len(procs))
		for _, p := range procs {
			for _, n := range p.Secrets {
				s.leaked[p.PID] = true
				s.names[n] = true
			}
		}
		s.mu.Unlock()
		if s.w.crashed() {
			s.mu.Lock()
			s.crashes++
			s.mu.Unlock()
			s.w.logf("the daemon exited on its own: restarting it\n%s", s.w.LogTail(20))
			_ = s.w.StartDaemon()
		}
	}
}

func (s *sampler) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
	s.wg.Wait()
}

func (s *sampler) figures() (maxRunners, secrets int, names []string, crashes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.max, len(s.leaked), slices.Sorted(maps.Keys(s.names)), s.crashes
}

// crashed reports (once) that the daemon child exited without being told.
func (w *World) crashed() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.daemon == nil {
		return false
	}
	select {
	case <-w.exited:
		w.daemon = nil
		return true
	default:
		return false
	}
}

// slotsLeftOpen counts the workspace slots whose record names an attempt
// that never gave it back.
func (w *World) slotsLeftOpen() (int, error) {
	list, err := warm.NewPool(datadir.New(w.DataDir)).List()
	n := 0
	for _, s := range list {
		if s.Open != "" {
			n++
		}
	}
	return n, err
}
