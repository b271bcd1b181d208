// Package reconcile owns the autoscaler: Loop, one level-based reconcile
// loop per scale target; the Supervisor that runs the loops of a host's
// policies; and admission (memory, disk, max). It declares what it needs
// of the parts it drives: Launcher, Target and Meters.
package reconcile

import (
	"context"

	rm "github.com/runner-manager/runner-manager"
)

// Launcher starts and ends the runners of one backend, one attempt each.
// platform.NativeLauncher runs them as processes of the host; a
// container, VM or WSL launcher is another implementation of the same four
// methods, given per backend in Config.Launchers: reconcile itself does not
// change for it. A launcher imports this package and the root vocabulary
// (rm.LaunchSpec, rm.Process, rm.ErrProcessGone), nothing else of the
// manager.
//
// The contract, whatever the backend:
//   - Launch prepares the attempt's own root (its _work/ and _diag/, where
//     the JIT configuration writes the runner's credentials) and starts the
//     runner's listener with spec.JITConfig in its environment, never in
//     argv. ctx bounds the preparation only: the runner outlives it.
//   - The returned rm.Process is named by a host process (PID, Start): the
//     journal records it to re-adopt the runner after a restart, and the
//     meters sample the process tree under it (usage is the meters'
//     business, not the launcher's). Done closes at the runner's exit;
//     ExitCode is the listener's code (-1 when unknown); Stop ends the
//     runner and all it started.
//   - Adopt finds a runner launched before a restart by its attempt and
//     (pid, start), or answers rm.ErrProcessGone (wrapped).
//   - RanJob answers whether the runner ran a job, from its own trace (the
//     native launcher reads the Worker log the runner writes per job): local
//     evidence the pass asks for at the runner's exit, before Cleanup. A
//     launcher that cannot know answers false, and the pass waits for
//     GitHub's word on the job.
//   - Cleanup removes the attempt's root; a failed attempt's may be kept
//     a while, for debugging, with its credentials removed.
type Launcher interface {
	// Launch starts the runner of spec.Attempt.
	Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error)
	// Adopt watches a runner started before a restart if (pid, start) is
	// still that runner; rm.ErrProcessGone otherwise.
	Adopt(attempt rm.AttemptID, pid int, start uint64) (rm.Process, error)
	// RanJob reports whether the attempt's runner ran a job, by its own
	// trace; false when the launcher cannot tell, or after Cleanup.
	RanJob(attempt rm.AttemptID) bool
	// Cleanup removes the attempt's root directory; a failed attempt's is
	// kept for a while, for debugging.
	Cleanup(attempt rm.AttemptID, failed bool) error
}

// launcherFor is the launcher of a policy's backend: its entry in
// Launchers, else Launcher (native is the default backend).
func (c *Config) launcherFor(p *rm.Policy) Launcher {
	b := p.Backend
	if b == "" {
		b = rm.BackendNative
	}
	if l, ok := c.Launchers[b]; ok && l != nil {
		return l
	}
	return c.Launcher
}
