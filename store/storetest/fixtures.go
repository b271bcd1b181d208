package storetest

import (
	"runtime"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Now is the fixtures' idea of the current time: UTC, without a monotonic
// reading, truncated to the microsecond so that any journal (SQLite keeps
// nanoseconds, PostgreSQL microseconds) gives it back equal.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// HostBuilder builds a Host; NewHost starts one with a new id and the
// running machine's OS and architecture.
type HostBuilder struct{ h rm.Host }

// NewHost starts a host: new id, named after it, 16 GiB, 8 CPUs, this OS.
func NewHost() *HostBuilder {
	id := rm.NewHostID()
	return &HostBuilder{h: rm.Host{
		ID:          id,
		Name:        "host-" + id.String()[:6],
		MemoryBytes: 16 << 30,
		CPUs:        8,
		OS:          runtime.GOOS,
		Arch:        runtime.GOARCH,
		SeenAt:      Now(),
	}}
}

// ID sets the host's id.
func (b *HostBuilder) ID(id rm.HostID) *HostBuilder { b.h.ID = id; return b }

// Name sets the host's name.
func (b *HostBuilder) Name(n string) *HostBuilder { b.h.Name = n; return b }

// Memory sets the host's memory in bytes.
func (b *HostBuilder) Memory(bytes uint64) *HostBuilder { b.h.MemoryBytes = bytes; return b }

// CPUs sets the host's CPU count.
func (b *HostBuilder) CPUs(n int) *HostBuilder { b.h.CPUs = n; return b }

// OS sets the host's operating system and architecture.
func (b *HostBuilder) OS(goos, goarch string) *HostBuilder {
	b.h.OS, b.h.Arch = goos, goarch
	return b
}

// SeenAt sets when the host was last seen.
func (b *HostBuilder) SeenAt(t time.Time) *HostBuilder { b.h.SeenAt = t; return b }

// Build returns the host.
func (b *HostBuilder) Build() rm.Host { return b.h }

// PolicyBuilder builds a Policy the way the seed's fixtures::policy() does:
//
//	storetest.NewPolicy().Repository("acme/repo").Host(h.ID).Autoscale("home", 2).Active().Build()
//
// It builds what it is told, valid or not: the store under test validates.
type PolicyBuilder struct {
	p        rm.Policy
	scaleSet string
	labels   []string
}

// NewPolicy starts a valid policy: new id, a unique name, a new host id,
// repository acme/repo, the default group, a scale set of its own, max 1,
// native, active.
func NewPolicy() *PolicyBuilder {
	id := rm.NewPolicyID()
	now := Now()
	return &PolicyBuilder{p: rm.Policy{
		ID:        id,
		Name:      "policy-" + id.String()[:8],
		Host:      rm.NewHostID(),
		Target:    rm.ScaleTarget{Scope: rm.Scope{Kind: rm.ScopeRepository, Name: "acme/repo"}, RunnerGroup: rm.DefaultRunnerGroup},
		Backend:   rm.BackendNative,
		Max:       1,
		CreatedAt: now,
		UpdatedAt: now,
	}}
}

// ID sets the policy's id.
func (b *PolicyBuilder) ID(id rm.PolicyID) *PolicyBuilder { b.p.ID = id; return b }

// Name sets the policy's name.
func (b *PolicyBuilder) Name(n string) *PolicyBuilder { b.p.Name = n; return b }

// Host sets the host that owns the policy.
func (b *PolicyBuilder) Host(h rm.HostID) *PolicyBuilder { b.p.Host = h; return b }

// Repository targets the repository "owner/repo".
func (b *PolicyBuilder) Repository(ownerRepo string) *PolicyBuilder {
	b.p.Target.Scope = rm.Scope{Kind: rm.ScopeRepository, Name: ownerRepo}
	return b
}

// Org targets an organization.
func (b *PolicyBuilder) Org(login string) *PolicyBuilder {
	b.p.Target.Scope = rm.Scope{Kind: rm.ScopeOrganization, Name: login}
	return b
}

// Enterprise targets an enterprise.
func (b *PolicyBuilder) Enterprise(slug string) *PolicyBuilder {
	b.p.Target.Scope = rm.Scope{Kind: rm.ScopeEnterprise, Name: slug}
	return b
}

// Group sets the runner group.
func (b *PolicyBuilder) Group(g string) *PolicyBuilder { b.p.Target.RunnerGroup = g; return b }

// Autoscale makes a scale-set target named scaleSet, in the default group
// unless Group said otherwise, with at most max runners.
func (b *PolicyBuilder) Autoscale(scaleSet string, max int) *PolicyBuilder {
	b.scaleSet = scaleSet
	b.p.Max = max
	return b
}

// ScaleSet sets the scale set name alone.
func (b *PolicyBuilder) ScaleSet(name string) *PolicyBuilder { b.scaleSet = name; return b }

// Labels makes a classic target with these labels (with a scale set name
// as well, the policy is invalid, as you said).
func (b *PolicyBuilder) Labels(labels ...string) *PolicyBuilder {
	b.labels = append(b.labels, labels...)
	return b
}

// Max sets the most concurrent runners.
func (b *PolicyBuilder) Max(n int) *PolicyBuilder { b.p.Max = n; return b }

// MinIdle sets how many idle runners to keep.
func (b *PolicyBuilder) MinIdle(n int) *PolicyBuilder { b.p.MinIdle = n; return b }

// Spare sets the policy's cap on warm spares.
func (b *PolicyBuilder) Spare(n int) *PolicyBuilder { b.p.Spare = n; return b }

// MemoryEstimate sets the expected peak of a first job, in bytes.
func (b *PolicyBuilder) MemoryEstimate(bytes uint64) *PolicyBuilder {
	b.p.MemoryEstimate = bytes
	return b
}

// MemoryLimit sets each attempt's memory limit, in bytes
// (rm.MemoryLimitFromPeaks: from the expected peak).
func (b *PolicyBuilder) MemoryLimit(bytes uint64) *PolicyBuilder {
	b.p.MemoryLimit = bytes
	return b
}

// RunnerDir sets the installed runner directory.
func (b *PolicyBuilder) RunnerDir(dir string) *PolicyBuilder { b.p.RunnerDir = dir; return b }

// Backend sets the backend.
func (b *PolicyBuilder) Backend(be rm.Backend) *PolicyBuilder { b.p.Backend = be; return b }

// VM makes it a VM policy with settings v.
func (b *PolicyBuilder) VM(v rm.VMSettings) *PolicyBuilder {
	b.p.Backend, b.p.VM = rm.BackendVM, v
	return b
}

// Container makes it a container policy with settings c.
func (b *PolicyBuilder) Container(c rm.ContainerSettings) *PolicyBuilder {
	b.p.Backend, b.p.Container = rm.BackendContainer, c
	return b
}

// Fleet makes it a fleet policy, served by every host (a scale set's
// only: give it one, as NewPolicy does).
func (b *PolicyBuilder) Fleet() *PolicyBuilder { b.p.Fleet = true; return b }

// Active makes the policy active (not paused).
func (b *PolicyBuilder) Active() *PolicyBuilder { b.p.Paused = false; return b }

// Paused pauses the policy.
func (b *PolicyBuilder) Paused() *PolicyBuilder { b.p.Paused = true; return b }

// Monitor makes the policy monitor-only: it watches, starts nothing.
func (b *PolicyBuilder) Monitor() *PolicyBuilder { b.p.Monitor = true; return b }

// CreatedAt sets the creation (and update) time.
func (b *PolicyBuilder) CreatedAt(t time.Time) *PolicyBuilder {
	b.p.CreatedAt, b.p.UpdatedAt = t, t
	return b
}

// Build returns the policy. Without a scale set or labels the target is
// a scale set of its own, "default-" and the start of its id. Labels are
// sorted and deduplicated as runnermanager.NewLabelTarget does, when they
// are valid.
func (b *PolicyBuilder) Build() rm.Policy {
	p := b.p
	t := p.Target
	t.ScaleSet = b.scaleSet
	t.Labels = append([]string(nil), b.labels...)
	if len(t.Labels) == 0 {
		t.Labels = nil
		if t.ScaleSet == "" {
			// One scale set is one policy's (the stores refuse a second).
			t.ScaleSet = "default-" + p.ID.String()[:8]
		}
	}
	if t.ScaleSet == "" {
		if nt, err := rm.NewLabelTarget(t.Scope, t.RunnerGroup, t.Labels); err == nil {
			t = nt
		}
	}
	p.Target = t
	return p
}

// AttemptBuilder builds an Attempt:
//
//	storetest.NewAttempt().Policy(p.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(pid).Build()
//
// Build stamps the times of the states on the way to the attempt's state
// and, for an ended attempt without an outcome, gives one that fits.
type AttemptBuilder struct {
	a    rm.Attempt
	host rm.HostID
}

// NewAttempt starts a pending attempt with a new id, created now. Set its
// policy: an attempt without one is invalid.
func NewAttempt() *AttemptBuilder {
	return &AttemptBuilder{a: rm.Attempt{
		ID:        rm.NewAttemptID(),
		State:     rm.StatePending,
		CreatedAt: Now(),
	}}
}

// ID sets the attempt's id.
func (b *AttemptBuilder) ID(id rm.AttemptID) *AttemptBuilder { b.a.ID = id; return b }

// Policy sets the attempt's policy.
func (b *AttemptBuilder) Policy(p rm.PolicyID) *AttemptBuilder { b.a.Policy = p; return b }

// Host sets the host whose runner name prefix the attempt's name carries.
func (b *AttemptBuilder) Host(h rm.HostID) *AttemptBuilder { b.host = h; return b }

// State sets the attempt's state.
func (b *AttemptBuilder) State(s rm.AttemptState) *AttemptBuilder { b.a.State = s; return b }

// RunnerName sets the runner name (by default the host's prefix and the id).
func (b *AttemptBuilder) RunnerName(n string) *AttemptBuilder { b.a.RunnerName = n; return b }

// GitHubRunnerID sets GitHub's id of the runner.
func (b *AttemptBuilder) GitHubRunnerID(id int64) *AttemptBuilder { b.a.GitHubRunnerID = id; return b }

// ProcessID sets the runner process's pid.
func (b *AttemptBuilder) ProcessID(pid int) *AttemptBuilder { b.a.PID = pid; return b }

// ProcessStart sets the runner process's start stamp.
func (b *AttemptBuilder) ProcessStart(start uint64) *AttemptBuilder {
	b.a.ProcessStart = start
	return b
}

// Job sets the job the attempt ran.
func (b *AttemptBuilder) Job(j rm.Job) *AttemptBuilder { b.a.Job = j; return b }

// Slot sets the workspace slot the attempt runs in.
func (b *AttemptBuilder) Slot(s string) *AttemptBuilder { b.a.Slot = s; return b }

// ExitCode sets the runner process's exit code.
func (b *AttemptBuilder) ExitCode(c int) *AttemptBuilder { b.a.ExitCode = &c; return b }

// Usage sets the metered usage.
func (b *AttemptBuilder) Usage(u rm.AttemptUsage) *AttemptBuilder { b.a.Usage = u; return b }

// Outcome sets the outcome (the state is not changed).
func (b *AttemptBuilder) Outcome(o rm.Outcome) *AttemptBuilder { b.a.Outcome = o; return b }

// LastMessage sets the last note on the attempt.
func (b *AttemptBuilder) LastMessage(m string) *AttemptBuilder { b.a.LastMessage = m; return b }

// CreatedAt sets when the attempt was created; the other stamps follow it.
func (b *AttemptBuilder) CreatedAt(t time.Time) *AttemptBuilder { b.a.CreatedAt = t; return b }

// Build returns the attempt. A finished attempt without an outcome
// completed a job; a failed one failed with ProcessExitedUnexpectedly. The
// states on the way from pending get a time one second after the previous
// one, unless set: registering, starting, idle and busy up to a live state;
// registering, starting, and busy if it completed a job, for an ended one.
func (b *AttemptBuilder) Build() rm.Attempt {
	a := b.a
	if a.RunnerName == "" && !a.ID.IsZero() {
		host := b.host
		if host.IsZero() {
			host = rm.NewHostID()
		}
		a.RunnerName = rm.RunnerName(host, a.ID)
	}
	if a.State.Ended() && a.Outcome.IsZero() {
		if a.State == rm.StateFinished {
			a.Outcome = rm.Outcome{Kind: rm.CompletedJob}
		} else {
			a.Outcome = rm.FailedWith(rm.ProcessExitedUnexpectedly, "exit code 1")
		}
	}
	var path []rm.AttemptState
	switch {
	case a.State.Live() && rankOf(a.State) >= 0:
		path = rm.AttemptStates[1 : rankOf(a.State)+1]
	case a.Outcome.Kind == rm.CompletedJob:
		path = []rm.AttemptState{rm.StateRegistering, rm.StateStarting, rm.StateBusy, a.State}
	case a.State.Ended():
		path = []rm.AttemptState{rm.StateRegistering, rm.StateStarting, a.State}
	}
	last := a.CreatedAt
	for _, s := range path {
		at := stampOf(&a, s)
		if at.IsZero() {
			*at = last.Add(time.Second)
		}
		last = *at
	}
	if a.UpdatedAt.IsZero() {
		a.UpdatedAt = last
	}
	return a
}

// stampOf points at the field holding when a entered s.
func stampOf(a *rm.Attempt, s rm.AttemptState) *time.Time {
	switch s {
	case rm.StateRegistering:
		return &a.RegisterAt
	case rm.StateStarting:
		return &a.StartedAt
	case rm.StateIdle:
		return &a.IdleAt
	case rm.StateBusy:
		return &a.BusyAt
	case rm.StateFinished, rm.StateFailed:
		return &a.EndedAt
	}
	return &a.CreatedAt
}

func rankOf(s rm.AttemptState) int {
	for i, st := range rm.AttemptStates {
		if st == s {
			return i
		}
	}
	return -1
}
