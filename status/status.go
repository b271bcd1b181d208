// Package status owns the read model: the plain data a running manager
// shows of itself (a host's memory, its policies, their runner attempts and
// jobs, why jobs wait, the fleet) and the builders that read the same
// figures from the journal when no daemon answers. The engine (reconcile)
// fills it; the CLI, the TUI, the metrics and the socket API read it
// without linking the engine. Every type marshals to JSON (docs/json.md).
package status

import (
	"context"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// Status is a snapshot of a supervisor's live figures, for `status`, the TUI
// and metrics. It is plain data and marshals to JSON.
type Status struct {
	At     time.Time `json:"at"`
	Host   rm.Host   `json:"host"`
	Memory Memory    `json:"memory"`
	// HostCPUPercent is how busy the host's CPUs were over the last
	// seconds, 0 to 100 of all of them; nil where the system does not tell
	// (not Linux) or before a second look.
	HostCPUPercent *float64  `json:"host_cpu_percent"`
	Policies       []Policy  `json:"policies"`
	Attempts       []Attempt `json:"attempts"`
	// Jobs are the jobs the host knows of that wait for a runner or run
	// on one (the jobs view), running first, then waiting, oldest first.
	// Jobs GitHub counts but does not name are in each policy's Waiting
	// only.
	Jobs []Job `json:"jobs"`
	// Budget is the GitHub REST budget as last seen.
	Budget rm.Budget `json:"budget"`
	// Refusals counts admission refusals by reason (RefusedMemory …)
	// since start.
	Refusals map[string]int `json:"refusals"`
	// Fleet is every host sharing the store, when the status was read
	// with the store at hand (FleetOf); nil otherwise.
	Fleet *Fleet `json:"fleet"`
	// Runner is the runner installed for policies without a runner
	// directory, and its update; nil when the daemon does not manage one.
	Runner *Runner `json:"runner"`
	// Registrations are GitHub's runner lists of the scopes this host's
	// classic policies serve, as the daemon last read them (ScopeRunners),
	// by scope; nil in figures read from the journal.
	Registrations []ScopeRunners `json:"registrations"`
	// Manager is the process that answers: its pid, since when it runs,
	// its version and data directory; nil in figures read from the
	// journal with no daemon running.
	Manager *Manager `json:"manager"`
	// Warm is the host's workspace slots; nil when warm jobs are off.
	Warm *Warm `json:"warm"`
}

// The reasons admission refuses a launch: the keys of Status.Refusals.
const (
	RefusedMemory = "memory"
	RefusedDisk   = "disk"
	RefusedMax    = "max"
	// RefusedSpares refuses a warm spare at the host's bound on spares
	// (reconcile.Admission.MaxSpares); a job's launch never meets it.
	RefusedSpares = "spares"
	// RefusedMaxJobs refuses at the host's bound on jobs at once, all
	// policies together (reconcile.Admission.MaxJobs, [host] max_jobs).
	RefusedMaxJobs = "max_jobs"
)

// Manager is the daemon process a status came from, so a person reading
// it knows which one answered and since when.
type Manager struct {
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
	Version string    `json:"version"`
	DataDir string    `json:"data_dir"`
}

// Memory is the host's memory as admission sees it.
type Memory struct {
	TotalBytes     uint64 `json:"total_bytes"`
	AvailableBytes uint64 `json:"available_bytes"`
	ReserveBytes   uint64 `json:"reserve_bytes"`
	// CommittedBytes is what admission holds: Σ over live attempts of
	// max(current RSS, expected peak), a warm spare at its own cost. It is
	// a reservation, not use: a job of 20MB holds its policy's estimate
	// until its peaks are measured.
	CommittedBytes uint64 `json:"committed_bytes"`
	// SpareBytes is the part of CommittedBytes warm spares hold; a job's
	// admission takes it back (the spares yield), so it never keeps a job
	// waiting.
	SpareBytes uint64 `json:"spare_bytes"`
	// Runners and Spares count the live attempts CommittedBytes covers:
	// runners for jobs (starting, listening or busy) and warm spares.
	Runners int `json:"runners"`
	Spares  int `json:"spares"`
	// DiskFreeBytes and DiskFloorBytes of the data directory's filesystem.
	DiskFreeBytes  uint64 `json:"disk_free_bytes"`
	DiskFloorBytes uint64 `json:"disk_floor_bytes"`
	// MaxSpares is the host's bound on warm spares, all policies
	// together ([admission] max_spares, its default applied; 0: none).
	// Nil when unknown.
	MaxSpares *int `json:"max_spares,omitempty"`
}

// MemoryOf is the memory of machine mc and the free disk of the data
// directory's filesystem as they are now, with the reserve and the floor
// admission keeps: the memory line of a status no daemon gave. A figure
// the system does not tell stays 0.
func MemoryOf(mc rm.Machine, dataDir string, reserve, diskFloor uint64) Memory {
	m := Memory{ReserveBytes: reserve, DiskFloorBytes: diskFloor}
	if total, avail, err := mc.Memory(); err == nil {
		m.TotalBytes, m.AvailableBytes = total, avail
	}
	if free, err := mc.DiskFree(dataDir); err == nil {
		m.DiskFreeBytes = free
	}
	return m
}

// Attempt is one live (or just ended) attempt's figures.
type Attempt struct {
	ID     rm.AttemptID `json:"id"`
	Policy rm.PolicyID  `json:"policy"`
	// PolicyName is its policy's name, so a reader needs no second look.
	PolicyName string          `json:"policy_name"`
	RunnerName string          `json:"runner_name"`
	State      rm.AttemptState `json:"state"`
	// Job is the attempt's job, nil before one is known; it marshals as
	// an attempt's job does (docs/json.md), so status and attempts agree.
	Job           *rm.Job   `json:"job"`
	CreatedAt     time.Time `json:"created_at"`
	RSSBytes      uint64    `json:"rss_bytes"`
	PeakRSSBytes  uint64    `json:"peak_rss_bytes"`
	CPUMillicores uint32    `json:"cpu_millicores"`
	// UsageSource says where the figures came from (rm.UsageFromCgroup,
	// rm.UsageFromProcessTree).
	UsageSource string `json:"usage_source"`
	// LastMessage is what the manager last noted on it ("stopping: zombie",
	// "exited; waiting for GitHub's word on its job").
	LastMessage string `json:"last_message"`
}

// JobLabel is how people know the attempt's job (rm.Job.Label): "" before
// one.
func (a Attempt) JobLabel() string {
	if a.Job == nil {
		return ""
	}
	return a.Job.Label()
}

// KnownJob is an attempt's job for its Attempt.Job: nil until known.
func KnownJob(j rm.Job) *rm.Job {
	if !j.Known() {
		return nil
	}
	return &j
}

// FromJournal is what the journal alone tells of a host, for when no
// daemon answers: its policies as set, with their live attempts (states,
// jobs, peaks recorded so far), stamped now; no usage, demand, admission or
// GitHub budget, which only a running daemon knows. host selects the host's
// policies; the zero id shows every policy, with the host of the first.
func FromJournal(ctx context.Context, st store.Store, host rm.HostID, now time.Time) (Status, error) {
	policies, err := st.Policies(ctx)
	if err != nil {
		return Status{}, fmt.Errorf("read the policies from the journal: %w", err)
	}
	out := Status{At: now}
	shown := host
	for _, p := range policies {
		if !host.IsZero() && !p.IsOwnedBy(host) {
			continue
		}
		live, err := st.ActiveAttempts(ctx, p.ID)
		if err != nil {
			return Status{}, fmt.Errorf("read the live attempts of policy %s from the journal: %w", p.Name, err)
		}
		ps := PolicyOf(p)
		for _, a := range live {
			if p.Fleet && !host.IsZero() && !strings.HasPrefix(a.RunnerName, rm.RunnerNamePrefix(host)) {
				continue // a fleet policy's runner of another host
			}
			ps.Live++
			switch a.State {
			case rm.StateIdle:
				ps.Idle++
			case rm.StateBusy:
				ps.Busy++
			}
			out.Attempts = append(out.Attempts, Attempt{
				ID: a.ID, Policy: a.Policy, PolicyName: p.Name, RunnerName: a.RunnerName, State: a.State, Job: KnownJob(a.Job),
				CreatedAt: a.CreatedAt, PeakRSSBytes: a.Usage.PeakRSSBytes, LastMessage: a.LastMessage,
			})
			if a.State == rm.StateBusy && a.Job.Known() {
				out.Jobs = append(out.Jobs, Job{ID: a.Job.ID, Number: a.Job.Number, RunID: a.Job.RunID, Workflow: a.Job.Workflow,
					Name: a.Job.Name, State: JobRunning, Policy: p.ID, PolicyName: p.Name, StartedAt: a.BusyAt, Attempt: a.ID, RunnerName: a.RunnerName})
			}
		}
		out.Policies = append(out.Policies, ps)
		if shown.IsZero() {
			shown = p.Host
		}
	}
	if !shown.IsZero() {
		if h, err := st.Host(ctx, shown); err == nil {
			out.Host = h
		}
	}
	if out.Fleet, err = FleetOf(ctx, st, now, 0); err != nil {
		return Status{}, err
	}
	SortJobs(out.Jobs)
	return out.WithFleetSets(ctx, st)
}

// WithPolicies overlays the policies' settings (name, target, mode, paused,
// min idle, max) on s, adding those s does not show: a daemon's figures
// with an edit written to the journal that the daemon has not read yet,
// and the policies it runs no loop for.
func (s Status) WithPolicies(policies []rm.Policy) Status {
	index := make(map[rm.PolicyID]int, len(s.Policies))
	merged := make([]Policy, len(s.Policies), len(s.Policies)+len(policies))
	copy(merged, s.Policies)
	for i, p := range merged {
		index[p.ID] = i
	}
	for _, p := range policies {
		set := PolicyOf(p)
		i, ok := index[p.ID]
		if !ok {
			merged = append(merged, set)
			continue
		}
		ps := &merged[i]
		ps.Name, ps.Target, ps.Mode = set.Name, set.Target, set.Mode
		ps.Paused, ps.Monitor, ps.MinIdle, ps.Max, ps.Fleet = set.Paused, set.Monitor, set.MinIdle, set.Max, set.Fleet
	}
	s.Policies = merged
	return s
}

// Warm is the host's workspace slots (docs/warm.md): their size against
// the cap, and per repository.
type Warm struct {
	// CapBytes is the host's cap on the slots ([warm] cap).
	CapBytes int64 `json:"cap_bytes"`
	// Bytes is the slots' size, each measured when its last attempt ended.
	Bytes int64 `json:"bytes"`
	Slots int   `json:"slots"`
	// Repos are the slots by repository and backend, most recently used
	// first.
	Repos []WarmRepo `json:"repos"`
}

// WarmRepo is one repository's slots of one backend.
type WarmRepo struct {
	Repo    string `json:"repo"`
	Backend string `json:"backend"`
	Slots   int    `json:"slots"`
	// Held counts the slots a live attempt holds now.
	Held  int   `json:"held"`
	Bytes int64 `json:"bytes"`
	// Uses counts the attempts that ran in them; Hits those that found
	// their slot warm.
	Uses     int       `json:"uses"`
	Hits     int       `json:"hits"`
	LastUsed time.Time `json:"last_used"`
}
