package reconcile

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

func TestOutcomeFor(t *testing.T) {
	tests := []struct {
		name   string
		f      exitFacts
		kind   rm.OutcomeKind
		reason rm.FailureReason
		detail string
		wait   bool
	}{
		{name: "JobDone", f: exitFacts{job: true, exitCode: 0}, kind: rm.CompletedJob},
		{name: "JobDoneAdopted", f: exitFacts{job: true, exitCode: -1}, kind: rm.CompletedJob},
		{name: "JobCompletedThenCode2", f: exitFacts{job: true, jobCompleted: true, exitCode: 2}, kind: rm.CompletedJob, detail: "exit code 2"},
		{name: "CrashDuringJob", f: exitFacts{job: true, exitCode: 2}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "during its job"},
		{name: "IdleExitWaits", f: exitFacts{exitCode: 0}, wait: true},
		{name: "WorkerLogExit0", f: exitFacts{ranJob: true, exitCode: 0}, kind: rm.CompletedJob},
		{name: "WorkerLogAdopted", f: exitFacts{ranJob: true, exitCode: -1}, kind: rm.CompletedJob},
		{name: "WorkerLogCrash", f: exitFacts{ranJob: true, exitCode: 2}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "during its job"},
		{name: "WorkerLogDown", f: exitFacts{ranJob: true, exitCode: -1, goneAtAdopt: true}, kind: rm.CompletedJob, detail: "while the manager was down"},
		{name: "IdleExit", f: exitFacts{exitCode: 0, waited: true}, kind: rm.ExitedIdleWithoutWork, detail: "exited 0 without a job"},
		{name: "IdleExitUnknownCode", f: exitFacts{exitCode: -1, waited: true}, kind: rm.ExitedIdleWithoutWork, detail: "exit code unknown"},
		{name: "Deregistered", f: exitFacts{exitCode: 0, deregistered: true}, kind: rm.ExitedIdleWithoutWork},
		{name: "ScaledDown", f: exitFacts{exitCode: -1, stop: stopScaleDown, deregistered: true}, kind: rm.ExitedIdleWithoutWork, detail: "scaled down"},
		{name: "Drained", f: exitFacts{exitCode: 0, stop: stopDrain}, kind: rm.ExitedIdleWithoutWork, detail: "drained"},
		{name: "Refused", f: exitFacts{exitCode: 1}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "exit code 1: the runner refused"},
		{name: "Deprecated", f: exitFacts{exitCode: 7}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "install a newer runner"},
		{name: "SelfUpdate", f: exitFacts{exitCode: 3}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "update itself"},
		{name: "StartTimeout", f: exitFacts{exitCode: -1, stop: stopStartTimeout}, kind: rm.Failed, reason: rm.StartTimeout},
		{name: "Zombie", f: exitFacts{exitCode: -1, stop: stopZombie}, kind: rm.Failed, reason: rm.Zombie},
		{name: "ZombieAfterItsJob", f: exitFacts{exitCode: -1, stop: stopZombie, job: true, jobCompleted: true}, kind: rm.CompletedJob, detail: "zombie"},
		{name: "UserStopIdle", f: exitFacts{exitCode: -1, stop: stopUser}, kind: rm.ExitedIdleWithoutWork, detail: "stopped by a user"},
		{name: "UserStopDuringJob", f: exitFacts{exitCode: -1, stop: stopUser, job: true}, kind: rm.Failed, reason: rm.Stopped},
		{name: "UserStopAfterJob", f: exitFacts{exitCode: 0, stop: stopUser, job: true, jobCompleted: true}, kind: rm.CompletedJob},
		{name: "DownWithJob", f: exitFacts{exitCode: -1, goneAtAdopt: true, job: true}, kind: rm.CompletedJob, detail: "while the manager was down"},
		{name: "DownWaits", f: exitFacts{exitCode: -1, goneAtAdopt: true}, wait: true},
		{name: "DownListed", f: exitFacts{exitCode: -1, goneAtAdopt: true, waited: true, listed: true}, kind: rm.Failed, reason: rm.ProcessExitedUnexpectedly, detail: "while the manager was down"},
		{name: "Lost", f: exitFacts{exitCode: -1, goneAtAdopt: true, waited: true}, kind: rm.Failed, reason: rm.Lost},
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
