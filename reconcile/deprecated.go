package reconcile

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// ExitVersionDeprecated is the listener's exit code for a runner version
// GitHub no longer accepts (with
// ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1, which the launchers
// set).
const ExitVersionDeprecated = 7

// deprecations remembers, per policy, when its runner last exited 7: the
// policy launches nothing more until a runner newer than that is there
// (installed after it, or the policy changed after it), instead of failing
// launch after launch with the same runner.
type deprecations struct {
	mu    sync.Mutex
	since map[rm.PolicyID]time.Time
}

// saw notes the failed attempts of a policy a pass read; it returns when
// the policy's runner last exited 7 (zero: never, as far as it knows).
func (d *deprecations) saw(pol rm.PolicyID, failed []rm.Attempt) time.Time {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.since == nil {
		d.since = make(map[rm.PolicyID]time.Time)
	}
	t := d.since[pol]
	for _, a := range failed {
		if a.ExitCode != nil && *a.ExitCode == ExitVersionDeprecated && a.EndedAt.After(t) {
			t = a.EndedAt
		}
	}
	if !t.IsZero() {
		d.since[pol] = t
	}
	return t
}

func (d *deprecations) forget(pol rm.PolicyID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.since, pol)
}

// deprecatedHold reports whether pol's launches are held because its
// runner exited 7 at since and nothing newer is there yet, with the
// policy's note naming the fix.
func (p *pass) deprecatedHold(pol *rm.Policy, since time.Time) (string, bool) {
	if since.IsZero() {
		return "", false
	}
	if pol.UpdatedAt.After(since) || p.runnerInstalledAt(pol).After(since) {
		p.l.deprecated.forget(pol.ID)
		if p.l.deprecatedLog.set(pol.ID, false) {
			p.l.log.Info("a newer runner is there: launches resume", "policy", pol.Name)
		}
		return "", false
	}
	fix := "install a newer runner with `runner-manager runner install --latest`; launches resume once it is installed"
	switch {
	case pol.Backend == rm.BackendContainer:
		fix = "give the policy a newer runner image (`runner-manager policy edit " + pol.Name + " --image …`); launches resume then"
	case pol.RunnerDir != "":
		fix = "update the runner in " + pol.RunnerDir + ", or install one with `runner-manager runner install --latest` and point the policy at it; launches resume once the policy or its runner changes"
	}
	note := fmt.Sprintf("runner version deprecated (exit code 7 at %s): %s", since.Local().Format(time.TimeOnly), fix)
	if p.l.deprecatedLog.set(pol.ID, true) {
		p.l.log.Warn("launches paused: GitHub no longer accepts this runner version", "policy", pol.Name, "fix", fix)
	}
	return note, true
}

// runnerInstalledAt is when the runner pol launches was put in place: the
// modification time of its directory (the newest install under
// <data>/runners for a policy without one); zero when unknown.
func (p *pass) runnerInstalledAt(pol *rm.Policy) time.Time {
	dir := pol.RunnerDir
	if dir == "" {
		if p.l.cfg.DataDir == "" {
			return time.Time{}
		}
		newest, err := platform.NewestRunner(filepath.Join(p.l.cfg.DataDir, "runners"))
		if err != nil {
			return time.Time{}
		}
		dir = newest
	}
	info, err := os.Stat(dir)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}
