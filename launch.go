package runnermanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// Launcher starts and ends the runners of one backend, one attempt each.
// The native launcher (backend/native) runs them as processes of the
// host, the container one (backend/container) in containers; a VM or WSL
// launcher is another implementation of the same four methods, registered
// per backend: the reconcile loop does not change for it. A launcher needs
// this package alone; what it can do beyond the four methods it says by
// the optional interfaces below (MemoryContainer, GroupMeter, RootLister,
// LeftoverRemover, JobHookReader), which the supervisor, the meters and
// the daemon ask for.
//
// The contract, whatever the backend:
//   - Launch prepares the attempt's own root (its _work/ and _diag/, where
//     the JIT configuration writes the runner's credentials) and starts the
//     runner's listener with spec.JITConfig in its environment, never in
//     argv. ctx bounds the preparation only: the runner outlives it.
//   - The returned Process is named by a host process (PID, Start): the
//     journal records it to re-adopt the runner after a restart, and the
//     meters sample the process tree under it, or the attempt's group
//     where the launcher is a GroupMeter (usage is the meters' business,
//     not the launcher's). Done closes at the runner's exit;
//     ExitCode is the listener's code (-1 when unknown); Stop ends the
//     runner and all it started.
//   - Adopt finds a runner launched before a restart by its attempt and
//     (pid, start), or answers ErrProcessGone (wrapped).
//   - RanJob answers whether the runner ran a job, from its own trace (the
//     native launcher reads the Worker log the runner writes per job): local
//     evidence the pass asks for at the runner's exit, before Cleanup. A
//     launcher that cannot know answers false, and the pass waits for
//     GitHub's word on the job.
//   - Cleanup removes the attempt's root; a failed attempt's may be kept
//     a while, for debugging, with its credentials removed.
type Launcher interface {
	// Launch starts the runner of spec.Attempt.
	Launch(ctx context.Context, spec LaunchSpec) (Process, error)
	// Adopt watches a runner started before a restart if (pid, start) is
	// still that runner; ErrProcessGone otherwise.
	Adopt(attempt AttemptID, pid int, start uint64) (Process, error)
	// RanJob reports whether the attempt's runner ran a job, by its own
	// trace; false when the launcher cannot tell, or after Cleanup.
	RanJob(attempt AttemptID) bool
	// Cleanup removes the attempt's root directory; a failed attempt's is
	// kept for a while, for debugging.
	Cleanup(attempt AttemptID, failed bool) error
}

// MemoryContainer is a Launcher that holds each attempt's memory in a
// group of its own (the native launcher, in a cgroup; the container
// launcher, in its container). The loop sets the limit of an attempt whose
// policy has one before its launch, and reads the kernel's word on the
// attempt's memory when it ends, before Cleanup: processes the OOM killer
// ended make the attempt Failed(OOMKilled), and the meters bank its limit
// as a peak.
type MemoryContainer interface {
	// SetMemoryLimit limits the memory of the attempt about to launch;
	// an error when the launcher cannot here (no memory controller), and
	// the attempt runs unlimited.
	SetMemoryLimit(attempt AttemptID, bytes uint64) error
	// GroupMemory is the kernel's word on the attempt's memory; false for
	// an attempt without a group, or not this launcher's.
	GroupMemory(attempt AttemptID) (GroupMemory, bool)
}

// GroupMemory is what the kernel says of an attempt's memory at its end.
type GroupMemory struct {
	// PeakBytes is the high-water mark of the group's charge (file cache
	// included); 0 where the kernel keeps none.
	PeakBytes uint64
	// LimitBytes is the group's memory limit; 0 for none.
	LimitBytes uint64
	// OOMKills is how many processes the kernel killed for going over it.
	OOMKills uint64
}

// GroupMeter is a Launcher that runs each attempt in a group of its own
// (a cgroup: the native launcher's runner, the vm launcher's QEMU) whose
// usage the meters read instead of walking the process tree under the
// attempt's Process: O(1) per attempt where the process table costs
// O(processes), and every process of the attempt counted, those that left
// the tree (setsid, a double fork, a VM's relays) included. An attempt
// without a group is metered from its process tree. A GroupMeter that is
// also a MemoryContainer is asked for an ended attempt's GroupMemory too.
type GroupMeter interface {
	// GroupUsage reads what the attempt's group uses now; false when it
	// has none, or is not this launcher's.
	GroupUsage(attempt AttemptID) (GroupUsage, bool)
	// RunnerRunning says whether the attempt's process (pid, start) still
	// runs, from the launcher's own exit notification; known is false for
	// one the launcher does not watch (the meters ask the process table).
	RunnerRunning(attempt AttemptID, pid int, start uint64) (running, known bool)
	// CgroupsInUse says where the groups are, for the meters' log at
	// start; "" when the launcher runs its attempts without.
	CgroupsInUse() string
}

// GroupUsage is what an attempt's group uses at one look.
type GroupUsage struct {
	// MemoryBytes is the group's memory in use: its anonymous memory and
	// file pages (tmpfs and shared memory included) less the file cache
	// the kernel can drop at once (inactive file pages), what kubelet calls
	// the working set, without the kernel's own allocations. Where the
	// group has no memory controller it is the sum of its processes'
	// resident sets.
	MemoryBytes uint64
	// CPUTime is the user + system time of every process that ran in the
	// group, exited ones included.
	CPUTime time.Duration
}

// RootLister is a Launcher that can list the attempts it holds a root
// directory for. The supervisor sweeps them: a root whose attempt is not
// live in the journal (concluded, or unknown to it) is left by a crash
// between the conclusion and its Cleanup, and is cleaned then. Launchers
// without it leave such roots to `doctor --fix`.
type RootLister interface {
	Roots() ([]AttemptID, error)
}

// LeftoverRemover is a Launcher that can find what it left of attempts
// the journal does not hold live (a crash between a container's creation
// and its journal record, a lost Cleanup) and remove it. The daemon asks
// it once a run, at start, when a policy of the host uses its backend,
// after reading the journal's live attempts; the loops re-adopt those.
type LeftoverRemover interface {
	RemoveLeftovers(ctx context.Context, live func(AttemptID) bool) error
}

// JobHookReader is a Launcher whose runners record, through the official
// runner's job-started hook, the job they run as the runner saw it (its
// workflow ref, its id in the workflow, its run id): the native launcher
// with the job report on. The job's own code runs as the hook's user and
// can write that record, so the pass fills from it only what GitHub's
// word left empty, never over it. Ask before Cleanup: false once the
// attempt's root is gone, or when no hook ran.
type JobHookReader interface {
	HookJob(attempt AttemptID) (Job, bool)
}

// WarmLauncher is a Launcher that can run an attempt in a workspace slot
// (LaunchSpec.Warm): RunsWarm says whether it can here (the vm launcher
// needs a tool to make a slot's disk).
type WarmLauncher interface {
	Launcher
	RunsWarm() bool
}

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
	// Warm is the workspace slot the attempt runs in; nil runs it cold,
	// in a work folder of its own that goes with its root. A launcher that
	// cannot use a slot refuses a spec with one (the engine gives one only
	// to a WarmLauncher that says it can).
	Warm *WarmSlot
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
// under PID is what the meters sample where the attempt has no group of a
// GroupMeter (a container's or a VM's processes are host processes too).
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
