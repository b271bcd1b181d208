package launchertest

import (
	"os"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// Harness is what the suite needs of a backend.
type Harness struct {
	// New returns a launcher keeping its attempts under dataDir and
	// arranges for it to be closed when the test ends. The suite calls it
	// again with the same dataDir for the launcher after a restart, in the
	// test's process or in a child of it that the suite kills with
	// SIGKILL: so it builds nothing (an image, a runner): Prepare does.
	New func(t *testing.T, dataDir string) rm.Launcher
	// Prepare returns what a launch spec of this backend names besides
	// its attempt (its Policy, its RunnerDir, Env), building what those
	// name (the fake runner, an image) in the test's own process. The
	// suite fills in Attempt and JITConfig, and adds to Env. Nil: a zero
	// spec.
	Prepare func(t *testing.T) rm.LaunchSpec
	// Remains names what l still holds of attempt a besides its runner's
	// process (its root directory, its container, its group); nil when
	// nothing. The suite asks it after Cleanup. Nil: only what the
	// contract lets the suite see is checked (the process, RanJob,
	// Roots, GroupUsage).
	Remains func(t *testing.T, l rm.Launcher, a rm.AttemptID) []string
	// JobsOnHost says that a job's processes are this host's and outlive
	// their runner until Cleanup (the native launcher): Leftovers then
	// requires seeing them before Cleanup, not only their absence after.
	JobsOnHost bool
	// Boot is how long a runner may take from its launch to its first
	// poll of GitHub; default 30 s (a VM under software CPU takes more).
	Boot time.Duration
	// Only, when set, runs these subtests alone, the others skipped
	// saying so: a backend whose runners are slow to boot runs those
	// that matter.
	Only []string
}

// The suite's subtests, by name (for Harness.Only).
const (
	// Launch: the runner runs as (PID, Start) while its job does, its
	// exit is seen (Done, ExitCode 0), and RanJob says it ran the job.
	Launch = "Launch"
	// IdleExit: a runner whose registration is removed while it is idle
	// exits 0 by itself, and RanJob says it ran none.
	IdleExit = "IdleExit"
	// Stop: Process.Stop ends an idle runner and returns once it exited.
	Stop = "Stop"
	// Cleanup: Cleanup leaves nothing of an ended attempt, twice and for
	// an attempt never launched too.
	Cleanup = "Cleanup"
	// Leftovers: what a job leaves running is gone after Cleanup, where
	// the launcher contains its attempts (MemoryContainer, GroupMeter).
	Leftovers = "Leftovers"
	// Metering: the process tree under PID holds a job's memory; a
	// GroupMeter's group and a MemoryContainer's word see it too.
	Metering = "Metering"
	// MemoryLimit: a MemoryContainer's limit holds, and the OOM kill of a
	// job over it is reported.
	MemoryLimit = "MemoryLimit"
	// Restart: after a kill -9 of the launcher's process, a new launcher
	// over the same data directory removes and sweeps what no live
	// attempt owns, says a runner that ended meanwhile gone, adopts the
	// live one by (PID, Start) and sees its exit.
	Restart = "Restart"
)

// Run is the conformance suite of rm.Launcher: every backend passes it.
// Subtests run one after the other, each with a fake GitHub, a data
// directory and runners of its own.
func Run(t *testing.T, h Harness) {
	require.NotNil(t, h.New, "Harness.New")
	if h.Boot <= 0 {
		h.Boot = 30 * time.Second
	}
	tests := []struct {
		name string
		fn   func(t *testing.T, w *world)
	}{
		{Launch, testLaunch},
		{IdleExit, testIdleExit},
		{Stop, testStop},
		{Cleanup, testCleanup},
		{Leftovers, testLeftovers},
		{Metering, testMetering},
		{MemoryLimit, testMemoryLimit},
		{Restart, testRestart},
	}
	order, inChild := os.LookupEnv(childEnv)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if inChild {
				if tt.name != Restart {
					t.Skip("the launcher's process that Restart kills runs Restart alone")
				}
				runChild(t, h, order)
				return
			}
			if len(h.Only) > 0 && !slices.Contains(h.Only, tt.name) {
				t.Skipf("not run for this backend: it runs %v (Harness.Only)", h.Only)
			}
			tt.fn(t, newWorld(t, h))
		})
	}
}
