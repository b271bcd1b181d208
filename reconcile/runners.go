package reconcile

import rm "github.com/runner-manager/runner-manager"

// runnerDir is the installed runner a policy's attempts start from: its
// own RunnerDir, else "" for the launcher's default (the native launcher
// takes the newest runner installed under <data>/runners/), or the runner
// on trial when attempt a is to prove it (trialRunner).
func (l *Loop) runnerDir(p rm.Policy, a rm.AttemptID) (string, error) {
	if dir := l.trialRunner(p, a); dir != "" {
		return dir, nil
	}
	return p.RunnerDir, nil
}
