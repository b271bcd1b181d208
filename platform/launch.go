package platform

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// LaunchSpec says what to start for one attempt.
type LaunchSpec struct {
	Attempt rm.AttemptID
	// RunnerDir is the installed runner (holding bin/Runner.Listener).
	RunnerDir string
	// JITConfig is passed in the environment, never in argv. A secret.
	JITConfig string
	// Env is added to the runner's environment ("KEY=value").
	Env []string
}

// Process is a runner process started or adopted by a launcher.
type Process interface {
	PID() int
	// Start is the process's start stamp (see StartTime): with PID, its
	// identity.
	Start() uint64
	// Done is closed the moment the process exits.
	Done() <-chan struct{}
	// ExitCode is valid once Done is closed; -1 when unknown (an adopted
	// process whose status the OS does not give to a non-parent).
	ExitCode() int
	// Stop sends SIGTERM to the process group, SIGKILL after grace, and
	// returns once it exited or ctx ends.
	Stop(ctx context.Context, grace time.Duration) error
}

// ErrProcessGone: the process named by (pid, start) no longer exists or is
// another process now.
var ErrProcessGone = errors.New("process is gone")

// String hides the JIT config, so a spec printed by mistake leaks nothing.
func (s LaunchSpec) String() string {
	return fmt.Sprintf("LaunchSpec{attempt %s, runner %s, %d env, JIT config redacted}", s.Attempt, s.RunnerDir, len(s.Env))
}

// LogValue hides the JIT config from slog.
func (s LaunchSpec) LogValue() slog.Value { return slog.StringValue(s.String()) }
