//go:build !linux

package reconcile

import (
	"errors"
	"time"
)

// findRunnerProcesses finds nothing here: only Linux exposes other
// processes' environments cheaply. A runner orphaned by a crash between its
// launch and the journal write of its pid stops by itself once the next
// pass removes its registration.
func findRunnerProcesses(string) ([]RunnerProcess, error) { return nil, nil }

func stopGroupAfter(int, time.Duration) error {
	return errors.New("stopping a process group is not supported on this system")
}
