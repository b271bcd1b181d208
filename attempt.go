package runnermanager

import (
	"encoding/json"
	"time"
)

// AttemptState is where an attempt is in its life:
//
//	pending → registering → starting → idle → busy → finished | failed
//
// An attempt is "live" until finished or failed.
type AttemptState string

// The attempt states.
const (
	// StatePending: the journal row exists; nothing was asked of GitHub yet.
	StatePending AttemptState = "pending"
	// StateRegistering: a JIT config is being requested.
	StateRegistering AttemptState = "registering"
	// StateStarting: the runner process was launched and has not yet been
	// seen online at GitHub.
	StateStarting AttemptState = "starting"
	// StateIdle: GitHub lists the runner online, without a job.
	StateIdle AttemptState = "idle"
	// StateBusy: the runner took a job.
	StateBusy AttemptState = "busy"
	// StateFinished: ended normally (Outcome CompletedJob or ExitedIdleWithoutWork).
	StateFinished AttemptState = "finished"
	// StateFailed: ended with Outcome Failed.
	StateFailed AttemptState = "failed"
)

// AttemptStates lists every state in life order.
var AttemptStates = []AttemptState{StatePending, StateRegistering, StateStarting, StateIdle, StateBusy, StateFinished, StateFailed}

// transitions is the one table of allowed moves. A runner can take a job and
// even finish it between two passes, so starting may skip idle and busy.
var transitions = map[AttemptState][]AttemptState{
	StatePending:     {StateRegistering, StateFailed},
	StateRegistering: {StateStarting, StateFailed},
	StateStarting:    {StateIdle, StateBusy, StateFinished, StateFailed},
	StateIdle:        {StateBusy, StateFinished, StateFailed},
	StateBusy:        {StateFinished, StateFailed},
}

// ParseAttemptState parses a state name.
func ParseAttemptState(s string) (AttemptState, error) {
	for _, st := range AttemptStates {
		if string(st) == s {
			return st, nil
		}
	}
	return "", invalidf("state %q is not one of pending, registering, starting, idle, busy, finished, failed", s)
}

// CanMoveTo reports whether the table allows from → to. Staying in a state
// is always allowed (a row updated with other fields).
func (s AttemptState) CanMoveTo(to AttemptState) bool {
	if s == to {
		return true
	}
	for _, next := range transitions[s] {
		if next == to {
			return true
		}
	}
	return false
}

// Ended reports whether the state is terminal.
func (s AttemptState) Ended() bool { return s == StateFinished || s == StateFailed }

// Live reports whether the attempt still holds (or may hold) a slot.
func (s AttemptState) Live() bool { return s != "" && !s.Ended() }

// OutcomeKind classifies how an attempt ended.
type OutcomeKind string

// The outcome kinds. The zero value is "not ended".
const (
	// CompletedJob: the runner finished a job, whatever the job's own result.
	CompletedJob OutcomeKind = "completed_job"
	// ExitedIdleWithoutWork: the runner never got a job (scaled down, timed
	// out idle, dropped by GitHub while idle).
	ExitedIdleWithoutWork OutcomeKind = "exited_idle"
	// Failed: the runner failed; Outcome.Reason says how.
	Failed OutcomeKind = "failed"
)

// FailureReason says why an attempt failed.
type FailureReason string

// The failure reasons.
const (
	RegistrationFailed        FailureReason = "registration_failed"
	LaunchFailed              FailureReason = "launch_failed"
	StartTimeout              FailureReason = "start_timeout"
	ProcessExitedUnexpectedly FailureReason = "process_exited_unexpectedly"
	// Lost: gone while the manager was down, and GitHub has no trace.
	Lost FailureReason = "lost"
	// Zombie: alive, but GitHub no longer lists its registration.
	Zombie FailureReason = "zombie"
	// Stopped: stopped by a user (or by the manager) while it ran a job.
	Stopped FailureReason = "stopped"
	// GitHubUnavailable: GitHub failed to register the runner (a 5xx, the
	// network, a rate limit, refused credentials). It says nothing of the
	// runner or the next launch: the loop backs off instead of counting it
	// against the launch budget.
	GitHubUnavailable FailureReason = "github_unavailable"
	// OOMKilled: the kernel killed a process of the attempt at its memory
	// limit (the policy's MemoryLimit). Its job was too heavy for the
	// limit, not the runner broken: it does not pause launches, and its
	// peak counts among the policy's peaks, so the next expected peak
	// (and a limit set from it) grows.
	OOMKilled FailureReason = "oom_killed"
	// ImageMissing: the backend lacks the policy's image (a container
	// image not on the engine, pulls off) and the launch could not start.
	ImageMissing FailureReason = "image_missing"
	// ImagePullFailed: the backend could not fetch the policy's image (an
	// unknown image, a registry unreachable, no credentials).
	ImagePullFailed FailureReason = "image_pull_failed"
	// BackendUnavailable: the backend itself did not answer the launch (a
	// container engine down, its socket refused).
	BackendUnavailable FailureReason = "backend_unavailable"
)

// Outcome is how an attempt ended. The zero value means it has not.
type Outcome struct {
	Kind   OutcomeKind
	Reason FailureReason // set only when Kind is Failed
	// Detail is a human explanation ("exit code 1", "runner dir missing").
	Detail string
}

// FailedWith returns a Failed outcome.
func FailedWith(reason FailureReason, detail string) Outcome {
	return Outcome{Kind: Failed, Reason: reason, Detail: detail}
}

// IsZero reports whether there is no outcome yet.
func (o Outcome) IsZero() bool { return o.Kind == "" }

func (o Outcome) String() string {
	s := string(o.Kind)
	if o.Kind == Failed && o.Reason != "" {
		s += "(" + string(o.Reason) + ")"
	}
	if o.Detail != "" {
		s += ": " + o.Detail
	}
	return s
}

// AttemptUsage is what an attempt's process tree used, from the meters.
type AttemptUsage struct {
	PeakRSSBytes      uint64
	CPUAvgMillicores  uint32
	CPUPeakMillicores uint32
	Samples           uint32
	// Source says where the figures came from: UsageFromCgroup (the
	// attempt's own cgroup: every process it started, wherever it went) or
	// UsageFromProcessTree (the runner's process tree in the process table:
	// a process that left the tree is not counted); "" when never sampled.
	Source string
}

// The sources of an attempt's usage (AttemptUsage.Source).
const (
	UsageFromCgroup      = "cgroup"
	UsageFromProcessTree = "process_tree"
)

// Job is the GitHub job an attempt ran, once known.
//
// GitHub names a job two ways, and they are kept apart. ID is the id the
// job's source gave: in scale-set mode the service's jobId, an opaque string
// (a UUID on github.com, a decimal number on some servers; actions/scaleset
// v0.4.0 types.go: JobMessageBase.JobID string), or, from a server whose
// messages carry no jobId, the message's runnerRequestId in decimal; in
// classic mode the REST job number in decimal. Compare IDs as strings,
// never parse one. Number is the REST job number (the jobs API, webhooks,
// classic mode), 0 when not known, as it is in scale-set mode, whose
// messages do not carry it. The zero Job is "no job known yet" (Known).
type Job struct {
	ID       string
	Number   int64
	RunID    int64
	Workflow string // workflow ref or name
	Name     string // display name
	// QueuedAt is when GitHub queued the job, AssignedAt when it assigned
	// it to the scale set (zero in classic mode, and when not told): with
	// the attempt's IdleAt and BusyAt, they split the job's start into
	// GitHub's part, the manager's and the runner's (Attempt.StartSplit).
	QueuedAt   time.Time
	AssignedAt time.Time
}

// Known reports whether the attempt's job has been named.
func (j Job) Known() bool { return j.ID != "" }

// Label is how people know the job: its display name, else its id; ""
// before one is known.
func (j Job) Label() string {
	if j.Name != "" {
		return j.Name
	}
	return j.ID
}

// jobJSON is Job's JSON form, the one the command line's --json and a
// daemon's status share (docs/json.md): number is null when not known.
type jobJSON struct {
	ID         string     `json:"id"`
	Number     *int64     `json:"number"`
	RunID      int64      `json:"run_id"`
	Workflow   string     `json:"workflow"`
	Name       string     `json:"name"`
	QueuedAt   *time.Time `json:"queued_at"`
	AssignedAt *time.Time `json:"assigned_at"`
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}

// MarshalJSON writes the job as docs/json.md says: number null when not
// known (scale-set mode).
func (j Job) MarshalJSON() ([]byte, error) {
	out := jobJSON{ID: j.ID, RunID: j.RunID, Workflow: j.Workflow, Name: j.Name,
		QueuedAt: timeOrNil(j.QueuedAt), AssignedAt: timeOrNil(j.AssignedAt)}
	if j.Number != 0 {
		out.Number = &j.Number
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (j *Job) UnmarshalJSON(b []byte) error {
	var in jobJSON
	if err := json.Unmarshal(b, &in); err != nil {
		return err
	}
	*j = Job{ID: in.ID, RunID: in.RunID, Workflow: in.Workflow, Name: in.Name}
	if in.Number != nil {
		j.Number = *in.Number
	}
	if in.QueuedAt != nil {
		j.QueuedAt = *in.QueuedAt
	}
	if in.AssignedAt != nil {
		j.AssignedAt = *in.AssignedAt
	}
	return nil
}

// Attempt is one ephemeral runner's life, from the journal row written before
// any side effect to its conclusion.
type Attempt struct {
	ID     AttemptID
	Policy PolicyID
	State  AttemptState
	// RunnerName is unique per scope; it carries the manager's name prefix.
	RunnerName     string
	GitHubRunnerID int64
	// PID and ProcessStart identify the runner process; a PID alone may be
	// reused. ProcessStart is the platform's opaque start stamp.
	PID          int
	ProcessStart uint64
	Job          Job
	// ExitCode of the runner process, once it exited; nil before.
	ExitCode *int
	Usage    AttemptUsage
	Outcome  Outcome
	// Slot names the workspace slot the attempt ran in ("owner/name#n",
	// WarmSlot.String); "" for a cold attempt.
	Slot string

	CreatedAt   time.Time // pending
	RegisterAt  time.Time // registering
	StartedAt   time.Time // starting: the process was launched
	IdleAt      time.Time
	BusyAt      time.Time
	EndedAt     time.Time
	UpdatedAt   time.Time
	LastMessage string // the last thing the manager noted (a refusal, an error)
}

// Validate checks an attempt's fields agree with its state.
func (a Attempt) Validate() error {
	if a.ID.IsZero() {
		return invalidf("attempt has no id")
	}
	if a.Policy.IsZero() {
		return invalidf("attempt %s has no policy", a.ID)
	}
	if _, err := ParseAttemptState(string(a.State)); err != nil {
		return invalidIn(err, "attempt %s", a.ID)
	}
	switch a.State {
	case StateFinished:
		if a.Outcome.Kind != CompletedJob && a.Outcome.Kind != ExitedIdleWithoutWork {
			return invalidf("attempt %s is finished with outcome %q (want completed_job or exited_idle)", a.ID, a.Outcome.Kind)
		}
	case StateFailed:
		if a.Outcome.Kind != Failed || a.Outcome.Reason == "" {
			return invalidf("attempt %s failed without a failure reason", a.ID)
		}
	default:
		if !a.Outcome.IsZero() {
			return invalidf("attempt %s is %s but has outcome %s", a.ID, a.State, a.Outcome)
		}
	}
	return nil
}

// Live reports whether the attempt has not ended.
func (a Attempt) Live() bool { return a.State.Live() }

// StateAt returns when the attempt entered state s (zero if it has not).
// An ended attempt entered one end state: EndedAt is the time of the one it
// is in, and the other is zero.
func (a Attempt) StateAt(s AttemptState) time.Time {
	switch s {
	case StatePending:
		return a.CreatedAt
	case StateRegistering:
		return a.RegisterAt
	case StateStarting:
		return a.StartedAt
	case StateIdle:
		return a.IdleAt
	case StateBusy:
		return a.BusyAt
	case StateFinished, StateFailed:
		if a.State == s {
			return a.EndedAt
		}
	}
	return time.Time{}
}

// MoveTo returns the attempt moved to state s at now, stamping the time of
// the state; it refuses a move the transition table forbids.
func (a Attempt) MoveTo(s AttemptState, now time.Time) (Attempt, error) {
	if !a.State.CanMoveTo(s) {
		return a, invalidf("attempt %s cannot move from %s to %s", a.ID, a.State, s)
	}
	if a.State == s {
		return a, nil
	}
	a.State = s
	switch s {
	case StateRegistering:
		a.RegisterAt = now
	case StateStarting:
		a.StartedAt = now
	case StateIdle:
		a.IdleAt = now
	case StateBusy:
		a.BusyAt = now
	case StateFinished, StateFailed:
		a.EndedAt = now
	}
	a.UpdatedAt = now
	return a, nil
}

// Conclude ends the attempt with outcome o at now: finished for a completed
// job or an idle exit, failed for a failure.
func (a Attempt) Conclude(o Outcome, now time.Time) (Attempt, error) {
	to := StateFinished
	if o.Kind == Failed {
		to = StateFailed
	}
	b, err := a.MoveTo(to, now)
	if err != nil {
		return a, err
	}
	b.Outcome = o
	return b, b.Validate()
}

// RunnerNamePrefix is the prefix of every runner name this host registers,
// "rm-" and the first 8 characters of its ID: registrations and processes
// carrying it are this host's, whatever the journal says.
func RunnerNamePrefix(host HostID) string { return "rm-" + host.String()[:8] + "-" }

// RunnerName is the runner name of attempt a on host: 38 characters.
func RunnerName(host HostID, a AttemptID) string { return RunnerNamePrefix(host) + a.String() }

// StartSplit is how an attempt's job came to start, in three parts: what
// a person asks when a job waited. GitHub's timestamps (the job's queue
// and assignment) meet the host's (the runner listening, taking the job),
// so a skewed clock moves time between the parts; each part is at least 0.
type StartSplit struct {
	// Assign is GitHub's part: the job queued until GitHub assigned it to
	// the scale set (0 where GitHub tells no assignment: classic mode).
	Assign time.Duration
	// Ready is the manager's part: from the assignment (else the queueing)
	// until the runner listened: its launch and boot; 0 for a warm spare
	// that listened before.
	Ready time.Duration
	// Take is the runner's part: from listening (or the assignment, if
	// later) until it took the job.
	Take time.Duration
}

// Total is the job's wait, queued to taken.
func (s StartSplit) Total() time.Duration { return s.Assign + s.Ready + s.Take }

// Startup is the wait from the assignment to the runner taking the job
// (from the queueing where GitHub tells no assignment): what
// actions-runner-controller's listener reports as the job's startup
// duration (cmd/ghalistener/metrics/metrics.go: runnerAssignTime −
// scaleSetAssignTime).
func (s StartSplit) Startup() time.Duration { return s.Ready + s.Take }

// StartSplit splits the start of the attempt's job; ok is false until the
// attempt took a job whose queue time GitHub gave.
func (a Attempt) StartSplit() (s StartSplit, ok bool) {
	queued, assigned, took := a.Job.QueuedAt, a.Job.AssignedAt, a.BusyAt
	if queued.IsZero() || took.IsZero() {
		return StartSplit{}, false
	}
	base := queued
	if !assigned.IsZero() {
		s.Assign = max(0, assigned.Sub(queued))
		base = assigned
	}
	listening := a.IdleAt
	if listening.IsZero() || listening.After(took) {
		listening = took // never seen idle: it listened and took the job at once
	}
	s.Ready = max(0, listening.Sub(base))
	from := listening
	if base.After(from) {
		from = base
	}
	s.Take = max(0, took.Sub(from))
	return s, true
}
