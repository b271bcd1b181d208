package chaos

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// The measurements are what the chaos run asserts: each must see what it
// names, or a run could pass on figures that cannot fail.

func TestOutcomes(t *testing.T) {
	ended := func(name string, o rm.Outcome) rm.Attempt {
		return rm.Attempt{ID: rm.NewAttemptID(), RunnerName: name, State: rm.StateFinished, Outcome: o}
	}
	jobs := []fakegithub.JobRecord{
		{ID: 1, Status: "completed", Starts: 1, RunnerName: "ran-a"},
		{ID: 2, Status: "completed", Starts: 1, RunnerName: "ran-b"},
		{ID: 3, Status: "queued"},
	}
	attempts := []rm.Attempt{
		ended("ran-a", rm.Outcome{Kind: rm.CompletedJob}),                  // agrees
		ended("idle-c", rm.Outcome{Kind: rm.ExitedIdleWithoutWork}),        // agrees
		ended("ran-b", rm.FailedWith(rm.Lost, "gone")),                     // ran a job, says lost
		ended("idle-d", rm.Outcome{Kind: rm.CompletedJob}),                 // ran none, says completed
		{ID: rm.NewAttemptID(), RunnerName: "live-e", State: rm.StateIdle}, // live: not judged
	}
	byKind, mism := outcomes(attempts, jobs)
	assert.Len(t, mism, 2)
	assert.Contains(t, mism[0]+mism[1], "the fake ran job 2 on ran-b")
	assert.Contains(t, mism[0]+mism[1], "the fake ran no job on idle-d")
	assert.Equal(t, map[string]int{"completed_job": 2, "exited_idle": 1, "failed(lost)": 1, "live": 1}, byKind)
}

func TestCheck(t *testing.T) {
	clean := Result{Jobs: 10, Served: 10, ChargedWhileLimited: -1, RecoverySeconds: []float64{1.5}, RecoveryBound: 5}
	clean.check()
	assert.Empty(t, clean.Missed)

	for name, r := range map[string]Result{
		"unserved":  {Jobs: 10, Served: 9},
		"twice":     {Jobs: 1, Served: 1, RunTwice: 1},
		"regs":      {RegistrationsLeft: 1},
		"procs":     {ProcessesLeft: 1},
		"dirs":      {AttemptDirsLeft: 1},
		"live":      {LiveWithoutProcess: 1},
		"mismatch":  {OutcomeMismatches: 1},
		"secret":    {SecretsSeen: 1},
		"crash":     {DaemonCrashes: 1},
		"charged":   {ChargedWhileLimited: 2, ChargedAllowed: 1},
		"slow":      {RecoverySeconds: []float64{6}, RecoveryBound: 5},
		"never":     {RecoverySeconds: []float64{-1}, RecoveryBound: 5},
		"idle kept": {AfterStop: &StopFigures{IdleRegistrations: 1}},
		"proc kept": {AfterStop: &StopFigures{Processes: 3, JobsRunning: 2}},
	} {
		t.Run(name, func(t *testing.T) {
			if r.ChargedAllowed == 0 && r.ChargedWhileLimited == 0 {
				r.ChargedWhileLimited = -1
			}
			r.check()
			assert.Len(t, r.Missed, 1, "%+v", r)
		})
	}
	t.Run("lost to the fault", func(t *testing.T) {
		r := Result{Jobs: 10, Served: 8, LostToFault: 2, ChargedWhileLimited: -1}
		r.check()
		assert.Empty(t, r.Missed)
	})
}

func TestRecoveries(t *testing.T) {
	fake := githubtest.NewTestServer(t)
	w := &World{Fake: fake, label: "chaos"}
	w.Enqueue(1, time.Second)
	w.markFaultEnd() // a job is queued: no probe
	assert.Len(t, fake.Jobs(), 1)
	assert.Equal(t, []float64{-1}, w.recoveries(), "no job started after the fault's end")
}

func TestCheckCountsCredentialsFound(t *testing.T) {
	r := Result{Jobs: 1, Served: 1, CredentialsFound: 2, CredentialsSearched: &Searched{Credentials: 9, Files: 3}}
	r.check()
	assert.Equal(t, []string{"2 credentials found in logs, CLI output or kept files"}, r.Missed)
	blind := Result{Jobs: 1, Served: 1, SparesKept: 1, CredentialsSearched: &Searched{Credentials: 9, Files: 3}}
	blind.check()
	assert.Equal(t, []string{"the credential search found nothing in the roots of 1 live spares, which hold their runners' credentials: it cannot see"}, blind.Missed)
	empty := Result{Jobs: 1, Served: 1, CredentialsSearched: &Searched{}}
	empty.check()
	assert.Equal(t, []string{"the credential search had 0 credentials and 0 files to search: it proves nothing"}, empty.Missed)
	assert.Contains(t, Table([]Result{r}), "| 0 | 0 | 2 | 0 |", "the table shows the figure between secrets seen and crashes")
}
