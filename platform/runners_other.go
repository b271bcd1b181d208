//go:build !linux

package platform

import (
	"errors"
	"fmt"
	"runtime"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// RunnerProcesses needs the environments of other processes, which only
// Linux exposes cheaply (/proc/<pid>/environ): elsewhere it returns an
// error wrapping errors.ErrUnsupported. A runner orphaned by a crash between
// its launch and the journal write of its pid stops by itself there once
// the next pass removes its registration.
func RunnerProcesses(string) ([]rm.RunnerProcess, error) {
	return nil, fmt.Errorf("looking for runner processes on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}

// StopRunnerProcess is Linux only, as RunnerProcesses is.
func StopRunnerProcess(rm.RunnerProcess, time.Duration) error {
	return fmt.Errorf("stopping a runner's process group on %s: %w", runtime.GOOS, errors.ErrUnsupported)
}
