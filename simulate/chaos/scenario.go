package chaos

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
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
			Scenario{Name: "update" + suffix, Mode: mode, Jobs: 0, Max: 4,
				RecoveryBound: 5 * time.Second, Drive: updateDrive(d(8*time.Second, 30*time.Second))},
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
	"forgotten-sessions/scale-set", "scale-set-deleted/scale-set", "empty-queue-url/scale-set", "version-refused/scale-set", "update/scale-set"}

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
	if r.SlotsLeftOpen, err = w.slotsLeftOpen(); err != nil {
		return r, fmt.Errorf("measure: %w", err)
	}
	r.RecoverySeconds = w.recoveries()
	attempts, err := w.attempts(sctx)
	if err != nil {
		return r, fmt.Errorf("read the journal: %w", err)
	}
	for _, a := range attempts {
		if a.Slot != "" {
			r.SlotAttempts++
		}
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
