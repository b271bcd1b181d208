package runnermanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// LaunchSpec says what a launcher starts for one attempt. It is the whole
// of what the reconcile loop hands a launcher of any backend (native
// process, container, VM, WSL distribution).
type LaunchSpec struct {
	Attempt AttemptID
	// Policy is the policy the attempt runs for, as the pass read it: a
	// backend finds its own settings there.
	Policy Policy
	// RunnerDir is the installed runner (holding bin/Runner.Listener); ""
	// leaves the choice to the launcher (the native one takes the newest
	// installed).
	RunnerDir string
	// JITConfig is passed in the runner's environment, never in argv. A
	// secret: String and LogValue hide it.
	JITConfig string
	// Env is added to the runner's environment ("KEY=value").
	Env []string
}

// String hides the JIT config, so a spec printed by mistake leaks nothing.
func (s LaunchSpec) String() string {
	return fmt.Sprintf("LaunchSpec{attempt %s, policy %q, runner %s, %d env, JIT config redacted}",
		s.Attempt, s.Policy.Name, s.RunnerDir, len(s.Env))
}

// LogValue hides the JIT config from slog.
func (s LaunchSpec) LogValue() slog.Value { return slog.StringValue(s.String()) }

// Process is a runner a launcher started or re-adopted. Whatever the
// backend, it is named by a process of this host: PID and Start are what
// the journal records to re-adopt it after a restart, and the process tree
// under PID is what the meters sample (a container's or a VM's processes
// are host processes too).
type Process interface {
	// PID is the host process whose exit is the runner's end.
	PID() int
	// Start is that process's start stamp: with PID, its identity, so a
	// reused pid is never taken for the runner.
	Start() uint64
	// Done is closed the moment the runner exits.
	Done() <-chan struct{}
	// ExitCode is the listener's exit code once Done is closed; -1 when
	// unknown (an adopted process whose status the OS gives only to its
	// parent).
	ExitCode() int
	// Stop ends the runner and everything it started (a process group, a
	// container, a VM): gently, then by force after grace. It returns once
	// the runner exited or ctx ended.
	Stop(ctx context.Context, grace time.Duration) error
}

// ErrProcessGone: the process named by (pid, start) no longer exists or is
// another process now. A launcher's Adopt returns it (wrapped) for a
// runner that ended while the manager was down.
var ErrProcessGone = errors.New("process is gone")

// ReasonError is an error of a launcher that says which failure reason an
// attempt it failed ends with: a launcher's sentinel made by
// NewReasonError, found in a launch error's chain by LaunchFailureReason.
type ReasonError struct {
	Reason FailureReason
	msg    string
}

// NewReasonError returns a sentinel error that carries reason.
func NewReasonError(reason FailureReason, msg string) *ReasonError {
	return &ReasonError{Reason: reason, msg: msg}
}

func (e *ReasonError) Error() string { return e.msg }

// LaunchFailureReason is the failure reason of an attempt whose launch
// failed with err: the Reason of the first ReasonError in err's chain, else
// LaunchFailed.
func LaunchFailureReason(err error) FailureReason {
	var r *ReasonError
	if errors.As(err, &r) && r.Reason != "" {
		return r.Reason
	}
	return LaunchFailed
}
