package reconcile

import (
	"fmt"

	rm "github.com/runner-manager/runner-manager"
)

// exitFacts is what the pass knows of an attempt whose runner process is
// gone: the journal, GitHub's word, the exit code and the manager's own
// doings. outcomeFor concludes from them alone.
type exitFacts struct {
	// job: a job was started on it (a JobStarted or JobCompleted event
	// named it, the runner list showed it busy, or the journal has it busy
	// or names its job).
	job bool
	// ranJob: the runner left its own trace of a job (a Worker log in its
	// root): it ran one, whether or not GitHub has said so yet. It counts
	// as job.
	ranJob bool
	// jobCompleted: GitHub said its job completed.
	jobCompleted bool
	// exitCode is -1 when unknown (an adopted process, or one found gone).
	exitCode int
	// goneAtAdopt: the process was gone when this manager first looked for
	// it: it ended while the manager was down.
	goneAtAdopt bool
	// listed: GitHub's runner list still holds its registration.
	listed bool
	// stop is why the manager stopped it; deregistered: the manager removed
	// its registration (the runner then exits by itself).
	stop         stopReason
	deregistered bool
	// removedIdle: GitHub removed its registration while its process
	// lived (a lookup found it gone) and the manager had not: GitHub
	// drops idle runners after minutes (actions/runner #4726). Without a
	// job that is an idle end, whatever the runner did next (exit 0 as
	// the real one does, another code, or stay alive, deaf, a zombie).
	removedIdle bool
	// waited: GitHub's word on its job can no longer be on its way: the
	// demand source reported a figure taken after the exit was seen (its
	// job events came with it), or the job-word grace passed, or a drain
	// concludes with what it knows.
	waited bool
}

// outcomeFor concludes an attempt from facts, or says to wait: an exit that
// looks idle might still have run a job whose word has not arrived yet. A
// job is known from GitHub's word, the journal, or the runner's own trace
// (ranJob). The manager's own stops come before the exit code: a runner
// that exits 143 after the manager's SIGTERM did not fail.
//
//	stop: start timeout, no job          → Failed(StartTimeout)
//	stop: zombie                         → CompletedJob if its job completed; ExitedIdleWithoutWork
//	                                       without a job (GitHub removed it idle); else Failed(Zombie)
//	stop: hung after its job ended       → CompletedJob (GitHub said its job completed)
//	stop: user, scale-down, drain, idle timeout, shutdown, or deregistered by the manager:
//	  no job                             → ExitedIdleWithoutWork, whatever the exit code
//	  job completed, or exit 0           → CompletedJob
//	  during a job                       → Failed(Stopped)
//	gone while the manager was down      → CompletedJob with a job; else wait for the word,
//	                                       then Failed(ProcessExitedUnexpectedly) if GitHub
//	                                       still lists it, else Failed(Lost)
//	exit 0 or unknown, with a job        → CompletedJob
//	exit ≠ 0, job completed              → CompletedJob (the code is in the detail)
//	exit ≠ 0, during a job               → Failed(ProcessExitedUnexpectedly); CompletedJob if
//	                                       GitHub says later the job completed (lateOutcome)
//	exit 0 or unknown, nothing known     → wait for the word; then ExitedIdleWithoutWork
//	exit ≠ 0, no job, removed by GitHub  → wait for the word; then ExitedIdleWithoutWork
//	exit ≠ 0, no job                     → Failed(ProcessExitedUnexpectedly) with the code's meaning
func outcomeFor(f exitFacts) (o rm.Outcome, wait bool) {
	f.job = f.job || f.ranJob
	stop := f.stop
	if stop == stopNone && f.deregistered {
		stop = stopScaleDown
	}
	switch stop {
	case stopStartTimeout:
		if !f.job {
			return rm.FailedWith(rm.StartTimeout, "not seen online in time; stopped"), false
		}
	case stopZombie:
		if f.jobCompleted {
			return rm.Outcome{Kind: rm.CompletedJob, Detail: "hung after its job (zombie); stopped"}, false
		}
		if f.removedIdle && !f.job {
			return rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: removedIdleDetail + "; it stayed alive, deaf (zombie), and was stopped"}, false
		}
		return rm.FailedWith(rm.Zombie, "alive but GitHub no longer lists its registration; stopped"), false
	case stopHung:
		return rm.Outcome{Kind: rm.CompletedJob, Detail: "stopped: hung after its job ended"}, false
	case stopUser, stopScaleDown, stopDrain, stopIdleTimeout, stopShutdown, stopSpareRecycled, stopSpareYielded:
		by := "by the manager (" + string(stop) + ")"
		if stop == stopUser {
			by = "by a user"
		}
		switch {
		case !f.job:
			return rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: stoppedDetail(stop, f.exitCode)}, false
		case f.jobCompleted || f.exitCode == 0:
			return rm.Outcome{Kind: rm.CompletedJob, Detail: "stopped " + by + " after its job"}, false
		default:
			return rm.FailedWith(rm.Stopped, "stopped "+by+" during its job"), false
		}
	}
	if f.goneAtAdopt {
		switch {
		case f.job:
			return rm.Outcome{Kind: rm.CompletedJob, Detail: "ended while the manager was down"}, false
		case !f.waited:
			return rm.Outcome{}, true
		case f.listed:
			return rm.FailedWith(rm.ProcessExitedUnexpectedly, "exited while the manager was down (exit code unknown)"), false
		default:
			return rm.FailedWith(rm.Lost, "gone while the manager was down; GitHub has no trace of it"), false
		}
	}
	clean := f.exitCode == 0 || f.exitCode < 0
	switch {
	case f.job && (clean || f.jobCompleted):
		o := rm.Outcome{Kind: rm.CompletedJob}
		if !clean {
			o.Detail = exitMeaning(f.exitCode)
		}
		return o, false
	case f.job:
		return rm.FailedWith(rm.ProcessExitedUnexpectedly, exitMeaning(f.exitCode)+" during its job"), false
	case !clean && !f.removedIdle:
		return rm.FailedWith(rm.ProcessExitedUnexpectedly, exitMeaning(f.exitCode)), false
	case !f.waited:
		return rm.Outcome{}, true
	case f.removedIdle:
		code := "exit code unknown"
		if f.exitCode >= 0 {
			code = exitMeaning(f.exitCode)
		}
		return rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: removedIdleDetail + " (" + code + ")"}, false
	case f.exitCode < 0:
		return rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "exited without a job (exit code unknown)"}, false
	default:
		return rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "exited 0 without a job"}, false
	}
}

// removedIdleDetail names the end of a runner GitHub removed while it
// listened without a job: no failure of the runner's nor the manager's.
const removedIdleDetail = "removed idle by GitHub"

// stoppedDetail explains an idle exit the manager caused: why it stopped
// the runner and, when known, the code it exited with (143 or 137 after a
// SIGTERM or SIGKILL, which say nothing against the runner).
func stoppedDetail(why stopReason, code int) string {
	if code > 0 {
		return fmt.Sprintf("%s (exit code %d after the manager's stop)", why, code)
	}
	return string(why)
}

// exitMeaning explains a Runner.Listener exit code (DESIGN.md §7).
func exitMeaning(code int) string {
	switch code {
	case 0:
		return "exit code 0"
	case 1:
		return "exit code 1: the runner refused its configuration (unknown runner, bad config or credentials)"
	case 2:
		return "exit code 2: retryable runner error"
	case 3, 4:
		return fmt.Sprintf("exit code %d: the runner tried to update itself; updates are the manager's (install a newer runner)", code)
	case 5:
		return "exit code 5: session conflict (another listener uses this runner)"
	case 7:
		return "exit code 7: this runner version is deprecated; install a newer runner (runner-manager runner install)"
	}
	return fmt.Sprintf("exit code %d", code)
}
