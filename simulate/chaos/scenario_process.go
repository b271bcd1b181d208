package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

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
