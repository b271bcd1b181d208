package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

// TestOutcomeFor has a case per row of outcomeFor's table.
func TestOutcomeFor(t *testing.T) {
	tests := []struct {
		name   string
		f      exitFacts
		kind   rm.OutcomeKind
		reason rm.FailureReason
		detail string
		wait   bool
	}{
		// stop: start timeout
		{name: "StartTimeout", f: exitFacts{exitCode: -1, stop: stopStartTimeout}, kind: rm.Failed, reason: rm.StartTimeout},
		{name: "StartTimeout143", f: exitFacts{exitCode: 143, stop: stopStartTimeout}, kind: rm.Failed, reason: rm.StartTimeout},
		{name: "StartTimeoutButRanJob", f: exitFacts{exitCode: 0, stop: stopStartTimeout, ranJob: true}, kind: rm.CompletedJob},
		// stop: zombie
		{name: "Zombie", f: exitFacts{exitCode: -1, stop: stopZombie}, kind: rm.Failed, reason: rm.Zombie},
		{name: "ZombieRemovedIdle", f: exitFacts{exitCode: 143, stop: stopZombie, removedIdle: true}, kind: rm.ExitedIdleWithoutWork, detail: "removed idle by GitHub; it stayed alive"},
		{name: "ZombieWithAJobTrace", f: exitFacts{exitCode: 143, stop: stopZombie, removedIdle: true, ranJob: true}, kind: rm.Failed, reason: rm.Zombie},
		{name: "ZombieAfterItsJob", f: exitFacts{exitCode: -1, stop: stopZombie, job: true, jobCompleted: true}, kind: rm.CompletedJob, detail: "zombie"},
		// the manager's and a user's stops: never a runner failure
		{name: "ScaledDown143", f: exitFacts{exitCode: 143, stop: stopScaleDown, deregistered: true}, kind: rm.ExitedIdleWithoutWork, detail: "scaled down (exit code 143"},
		{name: "ScaledDownUnknownCode", f: exitFacts{exitCode: -1, stop: stopScaleDown, deregistered: true}, kind: rm.ExitedIdleWithoutWork, detail: "scaled down"},
		{name: "ScaledDown0", f: exitFacts{exitCode: 0, stop: stopScaleDown}, kind: rm.ExitedIdleWithoutWork, detail: "scaled down"},
		{name: "Drained137", f: exitFacts{exitCode: 137, stop: stopDrain}, kind: rm.ExitedIdleWithoutWork, detail: "drained (exit code 137"},
		{name: "IdleTimeout143", f: exitFacts{exitCode: 143, stop: stopIdleTimeout, deregistered: true}, kind: rm.ExitedIdleWithoutWork, detail: "idle timeout"},
		{name: "UserStopIdle", f: exitFacts{exitCode: -1, stop: stopUser}, kind: rm.ExitedIdleWithoutWork, detail: "stopped by a user"},
		{name: "UserStopIdle143", f: exitFacts{exitCode: 143, stop: stopUser, deregistered: true}, kind: rm.ExitedIdleWithoutWork, detail: "stopped by a user"},
		{name: "DeregisteredExit0", f: exitFacts{exitCode: 0, deregistered: true}, kind: rm.ExitedIdleWithoutWork},
		{name: "DeregisteredExit143", f: exitFacts{exitCode: 143, deregistered: true}, kind: rm.ExitedIdleWithoutWork, detail: "exit code 143"},
		{name: "UserStopDuringJob", f: exitFacts{exitCode: -1, stop: stopUser, job: true}, kind: rm.Failed, reason: rm.Stopped, detail: "by a user during its job"},
		{name: "UserStopDuringJob143", f: exitFacts{exitCode: 143, stop: stopUser, ranJob: true}, kind: rm.Failed, reason: rm.Stopped},
		{name: "UserStopAfterJob", f: exitFacts{exitCode: 143, stop: stopUser, job: true, jobCompleted: true}, kind: rm.CompletedJob, detail: "after its job"},
		{name: "DrainDuringJob", f: exitFacts{exitCode: 143, stop: stopDrain, job: true}, kind: rm.Failed, reason: rm.Stopped, detail: "by the manager (drained)"},
		{name: "ScaledDownAfterJobExit0", f: exitFacts{exitCode: 0, stop: stopScaleDown, ranJob: true}, kind: rm.CompletedJob},
		// gone while the manager was down
		{name: "DownWithJob", f: exitFacts{exitCode: -1, goneAtAdopt: true, job: true}, kind: rm.CompletedJob, detail: "while the manager was down"},
		{name: "DownWorkerLog", f: exitFacts{exitCode: -1, goneAtAdopt: true, ranJob: true}, kind: rm.CompletedJob, detail: "while the manager was down"},
		{name: "DownJobCompleted", f: exitFacts{exitCode: -1, goneAtAdopt: true, job: true, jobCompleted: true, listed: true, waited: true}, kind: rm.CompletedJob},
		{name: "DownWaits", f: exitFacts{exitCode: -1, goneAtAdopt: true}, wait: true},
		{name: "DownListed", f: exitFacts{exitCode: -1, goneAtAdopt: true, waited: true, listed: true}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "while the manager was down"},
		{name: "Lost", f: exitFacts{exitCode: -1, goneAtAdopt: true, waited: true}, kind: rm.Failed, reason: rm.Lost},
		// exit 0 or unknown, with a job
		{name: "JobDone", f: exitFacts{job: true, exitCode: 0}, kind: rm.CompletedJob},
		{name: "JobDoneAdopted", f: exitFacts{job: true, exitCode: -1}, kind: rm.CompletedJob},
		{name: "WorkerLogExit0", f: exitFacts{ranJob: true, exitCode: 0}, kind: rm.CompletedJob},
		{name: "WorkerLogAdopted", f: exitFacts{ranJob: true, exitCode: -1}, kind: rm.CompletedJob},
		// exit ≠ 0, job completed
		{name: "JobCompletedThenCode2", f: exitFacts{job: true, jobCompleted: true, exitCode: 2}, kind: rm.CompletedJob, detail: "exit code 2"},
		// exit ≠ 0, during a job
		{name: "CrashDuringJob", f: exitFacts{job: true, exitCode: 2}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "during its job"},
		{name: "WorkerLogCrash", f: exitFacts{ranJob: true, exitCode: 2}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "during its job"},
		{name: "KilledDuringJob", f: exitFacts{job: true, exitCode: 137}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "exit code 137 during its job"},
		// exit 0 or unknown, nothing known
		{name: "IdleExitWaits", f: exitFacts{exitCode: 0}, wait: true},
		{name: "UnknownExitWaits", f: exitFacts{exitCode: -1}, wait: true},
		{name: "IdleExit", f: exitFacts{exitCode: 0, waited: true}, kind: rm.ExitedIdleWithoutWork, detail: "exited 0 without a job"},
		{name: "IdleExitUnknownCode", f: exitFacts{exitCode: -1, waited: true}, kind: rm.ExitedIdleWithoutWork, detail: "exit code unknown"},
		// removed idle by GitHub, not by the manager
		{name: "RemovedIdleExit0Waits", f: exitFacts{exitCode: 0, removedIdle: true}, wait: true},
		{name: "RemovedIdleExit0", f: exitFacts{exitCode: 0, removedIdle: true, waited: true}, kind: rm.ExitedIdleWithoutWork, detail: "removed idle by GitHub (exit code 0)"},
		{name: "RemovedIdleExit1Waits", f: exitFacts{exitCode: 1, removedIdle: true}, wait: true},
		{name: "RemovedIdleExit1", f: exitFacts{exitCode: 1, removedIdle: true, waited: true}, kind: rm.ExitedIdleWithoutWork, detail: "removed idle by GitHub (exit code 1"},
		{name: "RemovedIdleUnknownCode", f: exitFacts{exitCode: -1, removedIdle: true, waited: true}, kind: rm.ExitedIdleWithoutWork, detail: "removed idle by GitHub (exit code unknown)"},
		{name: "RemovedThenCrashDuringJob", f: exitFacts{exitCode: 2, removedIdle: true, job: true}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "during its job"},
		// exit ≠ 0, no job, not stopped by the manager
		{name: "Refused", f: exitFacts{exitCode: 1}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "exit code 1: the runner refused"},
		{name: "Retryable", f: exitFacts{exitCode: 2}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "retryable"},
		{name: "SelfUpdate", f: exitFacts{exitCode: 3}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "update itself"},
		{name: "SessionConflict", f: exitFacts{exitCode: 5}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "session conflict"},
		{name: "Deprecated", f: exitFacts{exitCode: 7}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "install a newer runner"},
		{name: "SomeoneElsesSIGTERM", f: exitFacts{exitCode: 143}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "exit code 143"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, wait := outcomeFor(tt.f)
			assert.Equal(t, tt.wait, wait)
			if tt.wait {
				return
			}
			assert.Equal(t, tt.kind, o.Kind)
			assert.Equal(t, tt.reason, o.Reason)
			assert.Contains(t, o.Detail, tt.detail)
			a := rm.Attempt{ID: rm.NewAttemptID(), Policy: rm.NewPolicyID(), State: rm.StateBusy}
			if tt.kind != rm.CompletedJob {
				a.State = rm.StateIdle
			}
			_, err := a.Conclude(o, a.CreatedAt)
			assert.NoError(t, err, "a valid conclusion")
		})
	}
}

// The manager's own stops and GitHub's failures never pause launches.
func TestFailingReasons(t *testing.T) {
	for _, r := range []rm.FailureReason{rm.RegistrationFailed, rm.LaunchFailed, rm.StartTimeout, rm.ProcessExitedUnexpectedly, rm.Zombie} {
		assert.True(t, failingReasons[r], "%s counts", r)
	}
	for _, r := range []rm.FailureReason{rm.GitHubUnavailable, rm.Lost, rm.Stopped} {
		assert.False(t, failingReasons[r], "%s does not count", r)
	}
	for _, stop := range []stopReason{stopScaleDown, stopDrain, stopIdleTimeout, stopUser} {
		for _, code := range []int{-1, 0, 1, 2, 137, 143} {
			o, wait := outcomeFor(exitFacts{exitCode: code, stop: stop, deregistered: true})
			assert.False(t, wait)
			assert.Equal(t, rm.ExitedIdleWithoutWork, o.Kind, "%s, exit %d: %s", stop, code, o)
		}
	}
}

// TestLateOutcome: GitHub's word that a runner ran a job, come after its
// attempt was concluded, corrects an idle, lost or failed conclusion.
func TestLateOutcome(t *testing.T) {
	code := func(c int) *int { return &c }
	ended := func(o rm.Outcome, exit *int) rm.Attempt {
		return rm.Attempt{Outcome: o, ExitCode: exit}
	}
	idle := rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "exited 0 without a job"}
	tests := []struct {
		name    string
		a       rm.Attempt
		kind    rm.JobEventKind
		correct bool
	}{
		{"IdleStarted", ended(idle, code(0)), rm.JobStarted, true},
		{"IdleCompleted", ended(idle, code(0)), rm.JobCompleted, true},
		{"IdleUnknownCode", ended(idle, nil), rm.JobStarted, true},
		{"ScaledDown143Started", ended(rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "scaled down"}, code(143)), rm.JobStarted, false},
		{"ScaledDown143Completed", ended(rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "scaled down"}, code(143)), rm.JobCompleted, true},
		{"LostStarted", ended(rm.FailedWith(rm.Lost, ""), nil), rm.JobStarted, true},
		{"LostCompleted", ended(rm.FailedWith(rm.Lost, ""), nil), rm.JobCompleted, true},
		{"CrashStarted", ended(rm.FailedWith(rm.ProcessExitedUnexpectedly, ""), code(2)), rm.JobStarted, false},
		{"CrashCompleted", ended(rm.FailedWith(rm.ProcessExitedUnexpectedly, ""), code(2)), rm.JobCompleted, true},
		{"StartTimeoutCompleted", ended(rm.FailedWith(rm.StartTimeout, ""), nil), rm.JobCompleted, true},
		{"ZombieCompleted", ended(rm.FailedWith(rm.Zombie, ""), nil), rm.JobCompleted, true},
		{"StoppedCompleted", ended(rm.FailedWith(rm.Stopped, ""), nil), rm.JobCompleted, false},
		{"RegistrationFailed", ended(rm.FailedWith(rm.RegistrationFailed, ""), nil), rm.JobCompleted, false},
		{"AlreadyCompleted", ended(rm.Outcome{Kind: rm.CompletedJob}, code(0)), rm.JobCompleted, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, ok := lateOutcome(tt.a, rm.JobEvent{Kind: tt.kind, JobID: "5"})
			assert.Equal(t, tt.correct, ok)
			if ok {
				assert.Equal(t, rm.CompletedJob, o.Kind)
				assert.Contains(t, o.Detail, "ran job 5")
			}
		})
	}
}
