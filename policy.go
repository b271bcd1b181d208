package runnermanager

import (
	"math"
	"regexp"
	"time"
)

// Backend says how a policy's runners are isolated.
type Backend string

// The backends a policy may name. A WSL backend comes later (DESIGN.md
// §11).
const (
	// BackendNative runs the runner as a process of the host.
	BackendNative Backend = "native"
	// BackendContainer runs each attempt in a new container of the
	// policy's image (Policy.Container), on a Docker Engine API (Docker,
	// or Podman's compatible service).
	BackendContainer Backend = "container"
	// BackendVM runs each attempt in a microVM of its own, booted from the
	// policy's image (Policy.VM) on a throwaway overlay of its disk.
	BackendVM Backend = "vm"
)

// Host is one machine running the manager.
type Host struct {
	ID          HostID    `json:"id"`
	Name        string    `json:"name"`
	MemoryBytes uint64    `json:"memory_bytes"`
	CPUs        int       `json:"cpus"`
	OS          string    `json:"os"`   // runtime.GOOS
	Arch        string    `json:"arch"` // runtime.GOARCH
	SeenAt      time.Time `json:"seen_at"`
}

// Policy (a profile) is a target plus how one host serves it.
type Policy struct {
	ID PolicyID
	// Name is unique among policies; users refer to policies by it.
	Name string
	// Host is the host that serves the policy; for a fleet policy, the
	// host that added it (every host of the fleet serves it).
	Host HostID
	// Fleet makes the policy the fleet's: every host sharing the journal
	// serves its scale set, one of them holding the message session at a
	// time and placing each job on a host with room (docs/fleet.md). Max
	// bounds the fleet's jobs at once; each host's admission bounds its
	// share. Only scale-set mode, and only a fleet store (PostgreSQL).
	Fleet  bool
	Target ScaleTarget
	// Backend defaults to DefaultBackend (native); each backend's
	// package checks its settings (BackendKind).
	Backend Backend
	// RunnerDir is the installed runner (a directory with bin/Runner.Listener);
	// "" means the newest runner installed in the data directory.
	RunnerDir string
	MinIdle   int
	Max       int
	// Spare caps the warm spares of a scale-set policy: runners started,
	// connected and idle beyond the jobs in flight, so the next job finds
	// one listening instead of waiting for a runner to boot. The manager
	// keeps about (jobs ending per second) × (measured boot time) + 1 of
	// them, at most Spare, within memory admission; GitHub is still told
	// only max jobs. Classic mode keeps none: an idle registered runner
	// would take any matching job and exceed max. 0 disables; front ends
	// default to DefaultSpare.
	Spare int
	// MemoryEstimate is what a first job is expected to peak at, in bytes,
	// until measured peaks replace it; 0 means the manager's default.
	MemoryEstimate uint64
	// MemoryLimit caps what each attempt may use, where its processes are
	// contained (a native attempt in a cgroup of its own on Linux): the
	// kernel kills a process of an attempt that goes over, and the attempt
	// ends Failed(OOMKilled). 0, the default, sets no limit;
	// MemoryLimitFromPeaks sets it from what admission expects the attempt
	// to peak at; any other value is a fixed limit in bytes, at least
	// MinMemoryLimit. The limit covers swap too.
	MemoryLimit uint64
	// Container is how the container backend runs the attempts; only for
	// a policy of that backend, where its Image is required.
	Container ContainerSettings
	// VM is how the vm backend runs the attempts; only for a policy of
	// that backend, where its Image is required.
	VM VMSettings
	// Cold runs every attempt from nothing: no workspace slot, no kept
	// caches (docs/warm.md). A repository-scoped policy runs warm by
	// default.
	Cold   bool
	Paused bool
	// Monitor makes the policy watch its target's demand (the jobs, their
	// waits, GitHub's budget) without ever starting a runner: its loop
	// runs, its capacity is 0. A paused monitor policy watches nothing.
	Monitor   bool
	CreatedAt time.Time
	UpdatedAt time.Time
	// RemovedAt is when the policy was removed (Store.DeletePolicy): zero
	// while it is in force. A removed policy serves nothing; it is kept
	// for its attempts' history, and its name is free for a new policy.
	RemovedAt time.Time
}

// MemoryLimitFromPeaks as a policy's MemoryLimit limits each attempt to
// twice the peak admission expects of it (its banked peaks, else its
// estimate), at least MinMemoryLimit: room for a job heavier than any seen,
// none for a runaway one.
const MemoryLimitFromPeaks uint64 = 1<<64 - 1

// MinMemoryLimit is the lowest memory limit a policy may set: below it the
// runner's own listener and worker (a .NET program of about 100 MiB) would
// be killed before any job runs.
const MinMemoryLimit uint64 = 256 << 20

// PeakMemoryLimit is the one rule for a memory limit drawn from peaks:
// twice what admission expects an attempt to peak at, at least
// MinMemoryLimit. Every backend that limits from peaks uses it, so that a
// policy's attempts are held to the same figure whichever runs them. It
// is 0 (no limit) when nothing is expected or twice expected overflows:
// such a figure is beyond any host.
func PeakMemoryLimit(expected uint64) uint64 {
	if expected == 0 || expected > math.MaxUint64/2 {
		return 0
	}
	return max(2*expected, MinMemoryLimit)
}

// MemoryLimitFor is the memory limit of each attempt of p, given the peak
// admission expects of it (read only for MemoryLimitFromPeaks): 0 for
// none, p's fixed MemoryLimit, or PeakMemoryLimit(expected).
func (p Policy) MemoryLimitFor(expected uint64) uint64 {
	if p.MemoryLimit == MemoryLimitFromPeaks {
		return PeakMemoryLimit(expected)
	}
	return p.MemoryLimit
}

// SpareAuto is the Policy.Spare of spares sized by the day: the manager
// keeps as many warm spares as its measured job ends and boot time call
// for (one while the policy is quiet), at most AutoSpares(Max), within
// memory admission and the host's bound on spares.
const SpareAuto = -1

// DefaultSpare is the Spare of a policy made by a front end unless told
// otherwise: sized by the day. A fixed number stays for those who want it.
const DefaultSpare = SpareAuto

// MaxAutoSpares bounds a policy's spares sized by the day: with the
// policy's max, AutoSpares.
const MaxAutoSpares = 8

// AutoSpares is the most warm spares a policy of max sized by the day
// keeps: twice as many as it runs jobs at once, at most MaxAutoSpares. In
// a backlog each job's end must find its replacement listening, and
// while one boots (8–14 s for the official runner) more jobs end: short
// jobs of a busy day end faster than a boot.
func AutoSpares(max int) int { return min(2*max, MaxAutoSpares) }

// MaxSpare bounds Policy.Spare: spares beyond it would hold memory and
// registrations for jobs GitHub cannot send faster.
const MaxSpare = 64

var policyName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$`)

// IsOwnedBy reports whether host serves this policy: its own host, or
// any host for a fleet policy.
func (p Policy) IsOwnedBy(host HostID) bool { return !host.IsZero() && (p.Fleet || p.Host == host) }

// Active reports whether the policy starts runners: not paused, not
// monitor-only.
func (p Policy) Active() bool { return !p.Paused && !p.Monitor }

// Watched reports whether the policy's target is observed: it is active
// or monitor-only, and not paused.
func (p Policy) Watched() bool { return !p.Paused }

// Spares is the most warm spares the policy keeps: Spare in scale-set
// mode (AutoSpares(Max) when sized by the day), none in classic mode
// (whatever Spare holds).
func (p Policy) Spares() int {
	switch {
	case p.Target.Mode() == ModeClassic:
		return 0
	case p.Spare == SpareAuto:
		return AutoSpares(p.Max)
	}
	return p.Spare
}

// SparesAuto reports whether the policy's spares are sized by the day.
func (p Policy) SparesAuto() bool { return p.Spare == SpareAuto }

// Validate checks what every policy must hold, whatever its backend,
// before anything is written. Its backend and that backend's settings are
// the backend's to check: ValidateWith, where policies are made.
func (p Policy) Validate() error { return p.validate(nil) }

// validate makes the checks in order, backend (when not nil) in its place.
func (p Policy) validate(backend func() error) error {
	if !policyName.MatchString(p.Name) {
		return invalidf("policy name %q must be 1-63 letters, digits, '.', '-' or '_', starting with a letter or digit", p.Name)
	}
	if p.Host.IsZero() {
		return invalidf("policy %q has no host", p.Name)
	}
	if err := p.Target.Validate(); err != nil {
		return invalidIn(err, "policy %q", p.Name)
	}
	if backend != nil {
		if err := backend(); err != nil {
			return err
		}
	}
	if p.Max < 1 {
		return invalidf("policy %q: max %d must be at least 1", p.Name, p.Max)
	}
	if p.MinIdle < 0 {
		return invalidf("policy %q: min idle %d must not be negative", p.Name, p.MinIdle)
	}
	if p.Max < p.MinIdle {
		return invalidf("policy %q: max %d is below min idle %d", p.Name, p.Max, p.MinIdle)
	}
	if p.MemoryLimit != 0 && p.MemoryLimit != MemoryLimitFromPeaks && p.MemoryLimit < MinMemoryLimit {
		return invalidf("policy %q: memory limit %d bytes is below the least a runner needs, %d bytes (256 MiB); set 0 for no limit", p.Name, p.MemoryLimit, MinMemoryLimit)
	}
	if p.Fleet && p.Target.Mode() != ModeScaleSet {
		return invalidf("policy %q: a fleet policy serves a scale set (--scale-set): classic mode's runners take any matching job, so hosts cannot share its jobs out", p.Name)
	}
	if p.Spare < SpareAuto || p.Spare > MaxSpare {
		return invalidf("policy %q: spare %d must be auto (%d: sized by the day) or between 0 (no warm spares) and %d", p.Name, p.Spare, SpareAuto, MaxSpare)
	}
	return nil
}
