package chaos

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github/fakegithub"
)

// Scenario is one named fault and the work it hits.
type Scenario struct {
	// Name is "kill9-scaleset", "storm-5xx/classic" and the like.
	Name string
	Mode rm.Mode
	// Jobs are queued before the fault; each lasts JobDuration.
	Jobs        int
	JobDuration time.Duration
	Max         int
	MinIdle     int
	// RecoveryBound is the goal for the time from a fault's end to the next
	// job started.
	RecoveryBound time.Duration
	// Timeout bounds the whole scenario; Stall gives up on a run where no
	// job started or completed for that long.
	Timeout, Stall time.Duration
	// Drive applies the fault while the jobs run (the daemon is started
	// before it). It records what it measures in r.
	Drive func(ctx context.Context, w *World, r *Result) error
	// Fake are the fake GitHub's options beyond the world's own.
	Fake []fakegithub.Option
	// DaemonEnv is added to the daemon's environment ("KEY=value"): a
	// scenario's own settings, such as a short [daemon] hung_grace.
	DaemonEnv []string
}

// Size says which figures to use: the short form that runs in every `go
// test` or the issue's full figures.
type Size int

// The sizes.
const (
	Short Size = iota
	Full
)

// Scenarios returns every scenario at size. The short form's default set
// is ShortSet.
func Scenarios(size Size) []Scenario {
	f := func(short, full int) int {
		if size == Full {
			return full
		}
		return short
	}
	d := func(short, full time.Duration) time.Duration {
		if size == Full {
			return full
		}
		return short
	}
	var out []Scenario
	for _, mode := range []rm.Mode{rm.ModeScaleSet, rm.ModeClassic} {
		suffix := "/" + modeName(mode)
		kill := Scenario{
			Name: "kill9-" + strings.ReplaceAll(modeName(mode), "-", ""), Mode: mode,
			Jobs: f(30, 200), JobDuration: 2 * time.Second, Max: 4, RecoveryBound: 5 * time.Second,
			Drive: killDrive(f(3, 20)),
		}
		out = append(out, kill,
			Scenario{Name: "storm-5xx" + suffix, Mode: mode, Jobs: f(20, 60), JobDuration: 2 * time.Second, Max: 4,
				RecoveryBound: 5 * time.Second, Drive: stormDrive(d(10*time.Second, 60*time.Second))},
			Scenario{Name: "primary-limit" + suffix, Mode: mode, Jobs: f(12, 30), JobDuration: 2 * time.Second, Max: 4,
				RecoveryBound: 2 * time.Second, Drive: primaryDrive(d(20*time.Second, 60*time.Second))},
			Scenario{Name: "secondary-limit" + suffix, Mode: mode, Jobs: f(12, 30), JobDuration: 2 * time.Second, Max: 4,
				RecoveryBound: 2 * time.Second, Drive: secondaryDrive(d(10*time.Second, 60*time.Second))},
			Scenario{Name: "revoke" + suffix, Mode: mode, Jobs: f(20, 60), JobDuration: 2 * time.Second, Max: 4,
				RecoveryBound: 30 * time.Second, Drive: revokeDrive(d(15*time.Second, 60*time.Second))},
			Scenario{Name: "github-restart" + suffix, Mode: mode, Jobs: f(10, 20), JobDuration: 2 * time.Second, Max: 4,
				RecoveryBound: 30 * time.Second, Drive: restartDrive(f(10, 20))},
			Scenario{Name: "outage" + suffix, Mode: mode, Jobs: f(12, 30), JobDuration: 2 * time.Second, Max: 4,
				RecoveryBound: 30 * time.Second, Drive: outageDrive(d(10*time.Second, 30*time.Second))},
			Scenario{Name: "sigterm-idle" + suffix, Mode: mode, Jobs: 4, JobDuration: time.Second, Max: 4, MinIdle: 2,
				RecoveryBound: 5 * time.Second, Drive: sigtermIdleDrive},
			Scenario{Name: "sigterm-busy" + suffix, Mode: mode, Jobs: 0, Max: 4,
				RecoveryBound: 5 * time.Second, Drive: sigtermBusyDrive(d(8*time.Second, 30*time.Second))},
			Scenario{Name: "hung-runner" + suffix, Mode: mode, Jobs: f(4, 12), JobDuration: time.Second, Max: 2,
				DaemonEnv: []string{"RUNNER_MANAGER_HUNG_GRACE=" + hungGrace.String()},
				Drive:     hungDrive(f(2, 6))},
			Scenario{Name: "version-refused" + suffix, Mode: mode, Jobs: 0, Max: 4,
				RecoveryBound: 30 * time.Second, Drive: refusedDrive(f(8, 30), false)},
			Scenario{Name: "version-refused-bad" + suffix, Mode: mode, Jobs: 0, Max: 4,
				RecoveryBound: 90 * time.Second, Drive: refusedDrive(f(8, 30), true)},
			Scenario{Name: "long-job" + suffix, Mode: mode, Jobs: 4, JobDuration: 2 * time.Second, Max: 4,
				Drive: longJobDrive(5 * time.Minute), Timeout: 10 * time.Minute},
			Scenario{Name: "long-job-30m" + suffix, Mode: mode, Jobs: 4, JobDuration: 2 * time.Second, Max: 4,
				Drive: longJobDrive(30 * time.Minute), Timeout: 40 * time.Minute},
		)
	}
	out = append(out, serviceScenarios(f, d)...)
	for i := range out {
		if out[i].Stall == 0 {
			out[i].Stall = d(30*time.Second, 60*time.Second)
		}
		if out[i].Timeout == 0 {
			out[i].Timeout = d(3*time.Minute, 15*time.Minute)
		}
	}
	return out
}

// ShortSet names the scenarios of the short form.
var ShortSet = []string{"kill9-scaleset", "kill9-classic", "storm-5xx/scale-set", "sigterm-busy/scale-set", "revoke/scale-set",
	"forgotten-sessions/scale-set", "scale-set-deleted/scale-set", "empty-queue-url/scale-set", "version-refused/scale-set"}

// FullSet names the scenarios of the full form: all but the 30-minute job,
// which runs only when named.
func FullSet() []string {
	var out []string
	for _, s := range Scenarios(Full) {
		if !strings.HasPrefix(s.Name, "long-job-30m") {
			out = append(out, s.Name)
		}
	}
	return out
}

// Select returns the scenarios whose names are in names, or start with one
// of them followed by "/" ("storm-5xx" selects both modes), in their order.
func Select(all []Scenario, names []string) ([]Scenario, error) {
	var out []Scenario
	for _, n := range names {
		found := false
		for _, s := range all {
			if (s.Name == n || strings.HasPrefix(s.Name, n+"/")) && !slices.ContainsFunc(out, func(o Scenario) bool { return o.Name == s.Name }) {
				out = append(out, s)
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("no chaos scenario %q: the names are %s", n, strings.Join(scenarioNames(all), ", "))
		}
	}
	return out, nil
}

func scenarioNames(all []Scenario) []string {
	out := make([]string, 0, len(all))
	for _, s := range all {
		out = append(out, s.Name)
	}
	return out
}

func modeName(m rm.Mode) string { return m.String() }

// Run runs one scenario in env and returns its figures. An error means the
// harness itself failed (a build, the CLI refusing the setup); a daemon that
// misbehaves shows in the Result's Missed list.
func Run(ctx context.Context, env Env, sc Scenario) (Result, error) {
	began := time.Now()
	r := Result{Scenario: sc.Name, Mode: modeName(sc.Mode), ChargedWhileLimited: -1, RecoveryBound: sc.RecoveryBound.Seconds()}
	ctx, cancel := context.WithTimeout(ctx, sc.Timeout)
	defer cancel()
	w, err := newWorld(ctx, env, strings.ReplaceAll(sc.Name, "/", "-"), sc.Mode, sc.Max, sc.MinIdle, sc.Fake...)
	if err != nil {
		return r, err
	}
	defer w.Close()
	w.stall = sc.Stall
	w.extraEnv = sc.DaemonEnv
	if err := w.StartDaemon(); err != nil {
		return r, err
	}
	if sc.Jobs > 0 {
		w.Enqueue(sc.Jobs, sc.JobDuration)
	}
	if sc.Drive != nil {
		if err := sc.Drive(ctx, w, &r); err != nil {
			r.note("fault: %v", err)
		}
	}
	if err := w.waitJobs(ctx, sc.Stall, max(time.Until(began.Add(sc.Timeout))-90*time.Second, 10*time.Second)); err != nil {
		r.note("waiting for the jobs: %v", err)
	}
	// Settle: a slot is free once its process is gone, and the journal
	// concludes soon after; give the daemon 30 s to be clean but for its
	// warm spares (the final SIGTERM must remove those).
	sctx, scancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer scancel()
	running, spares, err := w.settle(sctx, 30*time.Second)
	r.SparesKept = spares
	if err != nil {
		return r, fmt.Errorf("measure: %w", err)
	}
	if spares > 0 {
		if r.SpareCredentialsSeen, err = w.spareCredentials(sctx); err != nil {
			return r, fmt.Errorf("measure: %w", err)
		}
	}
	if err := w.Stop(30 * time.Second); err != nil {
		r.note("final stop: %v", err)
	}
	stopped, err := w.leftovers(sctx)
	if err != nil {
		return r, fmt.Errorf("measure: %w", err)
	}
	w.sampler.stop()
	w.look(&r)
	leaks, searched, err := w.credentialLeaks()
	if err != nil {
		return r, fmt.Errorf("measure: %w", err)
	}
	r.CredentialsFound, r.CredentialsSearched = len(leaks), &searched
	for _, l := range leaks[:min(len(leaks), 10)] {
		r.CredentialLeaks = append(r.CredentialLeaks, l.String())
	}
	jobs := w.Fake.Jobs()
	c := countJobs(jobs)
	r.Jobs, r.Served, r.RunTwice = c.total, c.served, c.twice
	r.RegistrationsLeft = max(running.regs, stopped.regs)
	r.ProcessesLeft = max(running.procs, stopped.procs)
	r.AttemptDirsLeft = max(running.dirs, stopped.dirs)
	r.FailedRootsKept = stopped.failedRoots
	r.LiveWithoutProcess = max(running.liveGone, stopped.liveGone)
	r.RecoverySeconds = w.recoveries()
	attempts, err := w.attempts(sctx)
	if err != nil {
		return r, fmt.Errorf("read the journal: %w", err)
	}
	var mism []string
	r.Outcomes, mism = outcomes(attempts, jobs)
	r.OutcomeMismatches = len(mism)
	r.MismatchDetail = mism[:min(len(mism), 10)]
	r.MaxRunners, r.SecretsSeen, r.SecretNames, r.DaemonCrashes = w.sampler.figures()
	r.Seconds = math.Round(time.Since(began).Seconds())
	r.check()
	if len(r.Missed) > 0 {
		r.note("daemon log: %s", w.LogPath)
	}
	return r, nil
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// waitCompleted waits until n jobs completed and, if busy, one runs.
func (w *World) waitCompleted(ctx context.Context, n int, busy bool) error {
	return w.waitProgress(ctx, w.stall, 3*time.Minute, func(c jobCounts) bool {
		return c.completed >= n && (!busy || c.running > 0 || c.completed == c.total)
	})
}

// killDrive kills the daemon -9 kills times, spread over the jobs, each
// time while a job runs, and restarts it at once (as a service manager
// would, a beat later).
func killDrive(kills int) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		total := countJobs(w.Fake.Jobs()).total
		for k := 1; k <= kills; k++ {
			if err := w.waitCompleted(ctx, k*total/(kills+1), true); err != nil {
				return fmt.Errorf("before kill %d: %w", k, err)
			}
			if err := w.Kill9(); err != nil {
				return err
			}
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return err
			}
			if err := w.StartDaemon(); err != nil {
				return err
			}
			w.markFaultEnd()
		}
		return nil
	}
}

// stormDrive answers 500 on every route of the fake for d, once jobs run.
func stormDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		w.logf("storm: 500 on every route for %s", d)
		w.Fake.Fault(fakegithub.FaultAll, fakegithub.Fault{Status: http.StatusInternalServerError})
		err := sleep(ctx, d)
		w.Fake.ClearFaults()
		w.markFaultEnd()
		return err
	}
}

// chargedBetween counts the charged REST calls the fake answered in
// [from, to): every REST call but /rate_limit.
func chargedBetween(w *World, from, to time.Time) int {
	n := 0
	for _, c := range w.Fake.CallLog() {
		if c.Kind == fakegithub.KindREST && c.Route != fakegithub.RouteRateLimit && !c.At.Before(from) && c.At.Before(to) {
			n++
		}
	}
	return n
}

// primaryDrive spends the REST budget (as another user of the token
// would) so a primary limit holds until a reset window from now, queues
// jobs during it, and restores a full budget at the reset.
func primaryDrive(window time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, false); err != nil {
			return err
		}
		w.Fake.SetRateLimitWindow(window)
		w.Fake.SetRateLimit(1)
		if err := w.spendREST(ctx); err != nil {
			return err
		}
		_, remaining, reset := w.Fake.RateLimit()
		if remaining != 0 {
			return fmt.Errorf("the budget is %d after spending it", remaining)
		}
		from := time.Now()
		w.logf("primary limit until %s", reset.Format("15:04:05"))
		if err := sleep(ctx, time.Until(reset)/2); err != nil {
			return err
		}
		w.Enqueue(4, 2*time.Second)
		// The full budget is in place just before the reset, as GitHub's
		// is at it: set at the reset itself, a request arriving in the
		// same instant would open a new window of the spent budget, and
		// its 403 would carry a reset a whole window later.
		if err := sleep(ctx, time.Until(reset)-200*time.Millisecond); err != nil {
			return err
		}
		w.Fake.SetRateLimitWindow(time.Hour)
		w.Fake.SetRateLimit(5000)
		if err := sleep(ctx, time.Until(reset)); err != nil {
			return err
		}
		w.markFaultEnd()
		r.ChargedWhileLimited = w.Fake.ChargedCallsWhileLimited()
		if n := chargedBetween(w, from, reset); n != r.ChargedWhileLimited {
			r.note("charged REST calls in the call log while the limit held: %d (the fake's count: %d)", n, r.ChargedWhileLimited)
		}
		r.ChargedAllowed = int(math.Ceil(reset.Sub(from).Minutes()))
		return nil
	}
}

// spendREST makes one charged REST call with the world's token.
func (w *World) spendREST(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, w.Fake.APIURL()+"repos/"+Repo+"/actions/runners", nil)
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+w.token)
	resp, err := w.Fake.Client().Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("spending the budget: %s", resp.Status)
	}
	return nil
}

// secondaryDrive arms a secondary limit with retry-after d: the next
// charged REST call trips it, and calls before d elapsed are violations.
func secondaryDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, false); err != nil {
			return err
		}
		armed := time.Now()
		w.Fake.SecondaryLimit(d, 1)
		w.Enqueue(4, 2*time.Second)
		// The limit trips at the daemon's next charged call.
		var tripped time.Time
		tctx, cancel := context.WithTimeout(ctx, 60*time.Second)
		defer cancel()
		_ = w.Fake.WaitFor(tctx, func() bool {
			for _, c := range w.Fake.CallLog() {
				if c.Kind == fakegithub.KindREST && c.Status == http.StatusForbidden && !c.At.Before(armed) {
					tripped = c.At
					return true
				}
			}
			return false
		})
		if tripped.IsZero() {
			r.note("the secondary limit never tripped: no charged REST call within 60 s")
			w.markFaultEnd()
			return nil
		}
		if err := sleep(ctx, time.Until(tripped.Add(d))); err != nil {
			return err
		}
		w.markFaultEnd()
		r.ChargedWhileLimited = w.Fake.ChargedCallsWhileLimited()
		r.ChargedAllowed = 0
		return nil
	}
}

// revokeDrive revokes the credentials for d, then restores them.
func revokeDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		w.Fake.RevokeCredentials()
		w.logf("credentials revoked for %s", d)
		err := sleep(ctx, d)
		w.Fake.RestoreCredentials()
		w.markFaultEnd()
		return err
	}
}

// restartDrive restarts the GitHub side (it forgets scale sets, sessions,
// tokens and registrations) once jobs run, then queues more jobs.
func restartDrive(more int) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		// Jobs a runner had started fail with the restart, by GitHub's
		// doing: they are not counted against the manager.
		running := countJobs(w.Fake.Jobs()).running
		w.Fake.Restart()
		r.LostToFault += running
		w.logf("GitHub restarted (%d jobs running failed with it)", running)
		w.Enqueue(more, 2*time.Second)
		w.markFaultEnd()
		return nil
	}
}

// outageDrive refuses connections for d (the fake stops listening on its
// address), then listens again.
func outageDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.waitCompleted(ctx, 1, true); err != nil {
			return err
		}
		w.Fake.StopListening()
		w.logf("outage for %s", d)
		err := sleep(ctx, d)
		if rerr := w.Fake.ResumeListening(); rerr != nil {
			return fmt.Errorf("the fake could not listen again: %w", rerr)
		}
		w.markFaultEnd()
		return err
	}
}

// stopFigures is what the world holds while the daemon is down.
func (w *World) stopFigures() (*StopFigures, error) {
	f := &StopFigures{}
	for _, rr := range w.Fake.Runners() {
		if rr.Busy {
			f.BusyRegistrations++
		} else {
			f.IdleRegistrations++
		}
	}
	procs, err := scanProcs(w)
	if err != nil {
		return nil, err
	}
	f.Processes = len(procs)
	f.JobsRunning = countJobs(w.Fake.Jobs()).running
	return f, nil
}

// sigtermIdleDrive stops the daemon with SIGTERM while min-idle runners
// wait, counts what is left, and restarts it with min idle 0.
func sigtermIdleDrive(ctx context.Context, w *World, r *Result) error {
	if err := w.waitJobs(ctx, w.stall, 2*time.Minute); err != nil {
		return err
	}
	// The min-idle runners, online and waiting.
	ictx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	if err := w.Fake.WaitFor(ictx, func() bool {
		idle := 0
		for _, rr := range w.Fake.Runners() {
			if rr.Online && !rr.Busy {
				idle++
			}
		}
		return idle >= 2
	}); err != nil {
		return fmt.Errorf("no 2 idle runners online: %w", err)
	}
	if err := w.Stop(60 * time.Second); err != nil {
		r.note("stop: %v", err)
	}
	var err error
	if r.AfterStop, err = w.stopFigures(); err != nil {
		return err
	}
	if _, err := w.CLI(ctx, "policy", "edit", "chaos", "--min-idle", "0"); err != nil {
		return err
	}
	if err := w.StartDaemon(); err != nil {
		return err
	}
	w.Enqueue(4, time.Second)
	w.markFaultEnd()
	return nil
}

// sigtermBusyDrive stops the daemon with SIGTERM while four runners are
// busy with jobs of length d, lets the jobs finish while it is down, and
// restarts it, more jobs waiting.
func sigtermBusyDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		w.Enqueue(4, d)
		if err := w.waitProgress(ctx, w.stall, 2*time.Minute, func(c jobCounts) bool { return c.running >= 4 }); err != nil {
			return fmt.Errorf("waiting for 4 busy runners: %w", err)
		}
		w.Enqueue(8, 2*time.Second)
		if err := w.Stop(60 * time.Second); err != nil {
			r.note("stop: %v", err)
		}
		var err error
		if r.AfterStop, err = w.stopFigures(); err != nil {
			return err
		}
		// The busy runners finish their jobs with the daemon down.
		if err := w.waitProgress(ctx, d+30*time.Second, d+60*time.Second, func(c jobCounts) bool { return c.completed >= 4 }); err != nil {
			r.note("the busy runners' jobs, the daemon down: %v", err)
		}
		if err := w.StartDaemon(); err != nil {
			return err
		}
		w.markFaultEnd()
		return nil
	}
}

// longJobDrive queues one job of length d beside the short ones.
func longJobDrive(d time.Duration) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		w.Enqueue(1, d)
		return nil
	}
}

// hungGrace is the hung-runner scenarios' [daemon] hung_grace.
const hungGrace = 5 * time.Second

// hungDrive queues n jobs whose runners hang after them: each reports its
// job's end (the fake says the job completed) and lives on. The daemon
// must stop each one hungGrace after the end (within a few seconds more),
// conclude it completed_job with the reason, and serve the other jobs in
// the slots they held. It records, per hung runner, the seconds from its
// job's end to its attempt's end.
func hungDrive(n int) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		hung := map[int64]bool{}
		for range n {
			hung[w.Fake.EnqueueJob(fakegithub.JobSpec{Repo: Repo, Labels: []string{w.label}, Duration: time.Second,
				MemoryBytes: 4 << 20, HangAfter: true})] = true
		}
		ended := func(c jobCounts) bool { return c.completed == c.total }
		if err := w.waitProgress(ctx, w.stall, 3*time.Minute, ended); err != nil {
			return fmt.Errorf("waiting for the jobs: %w", err)
		}
		// Every job is done at GitHub; the hung runners' attempts end a
		// grace after theirs.
		var as []rm.Attempt
		deadline := time.Now().Add(hungGrace + 30*time.Second)
		for {
			var err error
			if as, err = w.attempts(ctx); err != nil {
				return err
			}
			live := 0
			for _, a := range as {
				if a.Live() {
					live++
				}
			}
			if live == 0 || time.Now().After(deadline) {
				break
			}
			if err := sleep(ctx, 200*time.Millisecond); err != nil {
				return err
			}
		}
		byRunner := map[string]rm.Attempt{}
		for _, a := range as {
			byRunner[a.RunnerName] = a
		}
		var after []string
		for _, j := range w.Fake.Jobs() {
			if !hung[j.ID] {
				continue
			}
			a, ok := byRunner[j.RunnerName]
			switch {
			case !ok || a.Live():
				r.Missed = append(r.Missed, fmt.Sprintf("the hung runner of job %d was not stopped", j.ID))
				continue
			case a.Outcome.Kind != rm.CompletedJob || a.Outcome.Detail != "stopped: hung after its job ended":
				r.Missed = append(r.Missed, fmt.Sprintf("the hung runner of job %d concluded %s", j.ID, a.Outcome))
			}
			d := a.EndedAt.Sub(j.CompletedAt)
			after = append(after, fmt.Sprintf("%.1f", d.Seconds()))
			if d < hungGrace || d > hungGrace+15*time.Second {
				r.Missed = append(r.Missed, fmt.Sprintf("the hung runner of job %d was stopped %.1f s after its job (grace %s)", j.ID, d.Seconds(), hungGrace))
			}
		}
		r.note("hung runners stopped after their job's end (s, grace %s): %s", hungGrace, strings.Join(after, ", "))
		return nil
	}
}
