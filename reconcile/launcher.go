// Package reconcile owns the autoscaler: Loop, one level-based reconcile
// loop per scale target; the Supervisor that runs the loops of a host's
// policies; and admission (memory, disk, max).
package reconcile

import (
	"context"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// Launcher starts runner processes, one root directory per attempt. The
// native launcher is platform.NativeLauncher; container, VM and WSL ones can
// come later.
type Launcher interface {
	// Launch prepares the attempt's root directory from spec.RunnerDir and
	// starts the runner's listener with the JIT config in its environment.
	Launch(ctx context.Context, spec platform.LaunchSpec) (platform.Process, error)
	// Adopt watches a runner started before a restart if (pid, start) is
	// still that process; platform.ErrProcessGone otherwise.
	Adopt(attempt rm.AttemptID, pid int, start uint64) (platform.Process, error)
	// Cleanup removes the attempt's root directory; a failed attempt's is
	// kept for a while, for debugging.
	Cleanup(attempt rm.AttemptID, failed bool) error
}

// jobEvidence is what a launcher may know of an attempt beyond its exit:
// whether its runner ran a job, from the runner's own trace (the native
// launcher reads the Worker log the runner writes for each job). The pass
// asks before Cleanup; launchers without it leave the pass to GitHub's word.
type jobEvidence interface {
	RanJob(attempt rm.AttemptID) bool
}

var _ jobEvidence = (*platform.NativeLauncher)(nil)
