//go:build unix && !linux

package native

import (
	"errors"
	"syscall"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// reapUncontained stops what an attempt left behind where there are no
// cgroups and no cheap look at other processes' environments (macOS):
// the rest of its runner's process group, SIGTERM, up to grace, SIGKILL. A
// process that left the group (setsid, a daemon) is not found.
func reapUncontained(a rm.AttemptID, runner procIdent, grace time.Duration) ([]platform.Leftover, error) {
	if runner.pid <= 1 {
		return nil, nil
	}
	if st, err := platform.StartTime(runner.pid); err == nil && st != runner.start {
		return nil, nil // its pid leads another process's group now
	}
	if !groupExists(runner.pid) {
		return nil, nil
	}
	left := []platform.Leftover{{PID: runner.pid, Command: "process group"}}
	_ = terminateGroup(runner.pid)
	deadline := time.Now().Add(grace)
	for groupExists(runner.pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	for range 100 {
		if !groupExists(runner.pid) {
			return left, nil
		}
		_ = killGroup(runner.pid)
		time.Sleep(10 * time.Millisecond)
	}
	return left, errors.New("the runner's process group outlived SIGKILL")
}

// groupExists reports whether a process group has members.
func groupExists(pgid int) bool {
	err := syscall.Kill(-pgid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
