package reconcile

import rm "github.com/runner-manager/runner-manager"

// runnerDir is the installed runner a policy's attempts start from: its
// own RunnerDir, else "" for the launcher's default (the native launcher
// takes the newest runner installed under <data>/runners/).
func (l *Loop) runnerDir(p rm.Policy) (string, error) {
	return p.RunnerDir, nil
}
