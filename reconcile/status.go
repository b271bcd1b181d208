package reconcile

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
	At     time.Time    `json:"at"`
	Host   rm.Host      `json:"host"`
	Memory MemoryStatus `json:"memory"`
	// HostCPUPercent is how busy the host's CPUs were over the last
	// seconds, 0 to 100 of all of them; nil where the system does not tell
	// (not Linux) or before a second look.
	HostCPUPercent *float64        `json:"host_cpu_percent"`
	Policies       []PolicyStatus  `json:"policies"`
	Attempts       []AttemptStatus `json:"attempts"`
	// Jobs are the jobs the host knows of that wait for a runner or run
	// on one (the jobs view), running first, then waiting, oldest first.
	// Jobs GitHub counts but does not name are in each policy's Waiting
	// only.
	Jobs []JobStatus `json:"jobs"`
	// Budget is the GitHub REST budget as last seen.
	Budget rm.Budget `json:"budget"`
	// Refusals counts admission refusals by reason since start.
	Refusals map[string]int `json:"refusals"`
	// Fleet is every host sharing the store, when the status was read
	// with the store at hand (FleetStatusOf); nil otherwise.
	Fleet *FleetStatus `json:"fleet"`
	// Runner is the runner installed for policies without a runner
	// directory, and its update; nil when the daemon does not manage one.
	Runner *RunnerStatus `json:"runner"`
	// Manager is the process that answers: its pid, since when it runs,
	// its version and data directory; nil in figures read from the
	// journal with no daemon running.
	Manager *ManagerStatus `json:"manager"`
}

// ManagerStatus is the daemon process a status came from, so a person
// reading it knows which one answered and since when.
type ManagerStatus struct {
	PID     int       `json:"pid"`
	Since   time.Time `json:"since"`
	Version string    `json:"version"`
	DataDir string    `json:"data_dir"`
}

// RunnerStatus is the installed runner and its update (install.Stage,
// the proof on one attempt), with the dates GitHub gives for its version
// (GET /{scope}/actions/runners/deprecations/{version}).
type RunnerStatus struct {
	// Version is the runner policies without a runner directory launch
	// ("" when none is installed).
	Version string `json:"version"`
	// AutoUpdate: the daemon installs newer releases ([runner] auto_update).
	AutoUpdate bool `json:"auto_update"`
	// Latest is the newest release as last seen ("" before a look).
	Latest string `json:"latest,omitempty"`
	// Trial is a newer runner installed and not yet proven; TrialAttempt
	// the attempt proving it, if one has claimed it.
	Trial        string       `json:"trial,omitempty"`
	TrialAttempt rm.AttemptID `json:"trial_attempt,omitzero"`
	// Bad is the last update that failed (download, checksum, or proof),
	// not tried again before RetryAt unless a newer release comes.
	Bad *RunnerUpdateFailure `json:"bad,omitempty"`
	// RuntimeEnds is when GitHub stops giving Version's runners jobs and
	// RegistrationEnds when it stops registering them; nil: none known.
	RuntimeEnds      *time.Time `json:"runtime_deprecates_at,omitempty"`
	RegistrationEnds *time.Time `json:"registration_deprecates_at,omitempty"`
	// DaysLeft is whole days from At to the earlier of them (negative once
	// past); nil when neither is known.
	DaysLeft *int `json:"days_left,omitempty"`
	// ScheduleFrom says where the dates came from: "github" (the
	// deprecations route) or "" when unknown.
	ScheduleFrom string `json:"schedule_from,omitempty"`
}

// Summary is the runner in one line, as status and the TUI show it:
// version, days left before GitHub refuses it, whether updates are on,
// the update on trial or the one that failed and why.
func (r *RunnerStatus) Summary(loc *time.Location) string {
	if r == nil {
		return ""
	}
	if loc == nil {
		loc = time.Local
	}
	v := r.Version
	if v == "" {
		v = "none installed"
	}
	parts := []string{v}
	if r.DaysLeft != nil {
		switch d := *r.DaysLeft; {
		case d < 0:
			parts[0] += " (refused by GitHub since " + r.deadline().In(loc).Format(time.DateOnly) + ")"
		case d == 1:
			parts[0] += " (1 day left before GitHub refuses it)"
		default:
			parts[0] += fmt.Sprintf(" (%d days left before GitHub refuses it)", d)
		}
	}
	if r.AutoUpdate {
		parts = append(parts, "updates on")
	} else {
		parts = append(parts, "updates off")
	}
	if r.Latest != "" && r.Latest != r.Version && r.Trial == "" && (r.Bad == nil || r.Bad.Version != r.Latest) {
		parts = append(parts, "latest "+r.Latest)
	}
	if r.Trial != "" {
		t := r.Trial + " on trial"
		if !r.TrialAttempt.IsZero() {
			t += " (attempt " + r.TrialAttempt.String() + ")"
		}
		parts = append(parts, t)
	}
	if b := r.Bad; b != nil {
		parts = append(parts, "update to "+b.Version+" failed at "+b.At.In(loc).Format("15:04")+": "+b.Reason+"; retried at "+b.RetryAt.In(loc).Format("15:04")+" or with a newer release")
	}
	return strings.Join(parts, " · ")
}

// deadline is the earlier of the runtime and registration ends.
func (r *RunnerStatus) deadline() time.Time {
	var end time.Time
	for _, t := range []*time.Time{r.RuntimeEnds, r.RegistrationEnds} {
		if t != nil && (end.IsZero() || t.Before(end)) {
			end = *t
		}
	}
	return end
}

// RunnerUpdateFailure is an update that failed.
type RunnerUpdateFailure struct {
	Version string    `json:"version"`
	At      time.Time `json:"at"`
	Reason  string    `json:"reason"`
	RetryAt time.Time `json:"retry_at"`
}

// DefaultStaleAfter is how old a host's last heartbeat may be before the
// fleet view marks it stale: a few missed heartbeats.
const DefaultStaleAfter = 45 * time.Second

// FleetStatus is the fleet as the store knows it.
type FleetStatus struct {
	Hosts []FleetHostStatus `json:"hosts"`
	// StaleAfter is the threshold Stale was judged by.
	StaleAfter time.Duration `json:"stale_after_ns"`
}

// FleetHostStatus is one host of the fleet.
type FleetHostStatus struct {
	ID          rm.HostID `json:"id"`
	Name        string    `json:"name"`
	MemoryBytes uint64    `json:"memory_bytes"`
	CPUs        int       `json:"cpus"`
	OS          string    `json:"os"`
	Version     string    `json:"version"`
	// LiveAttempts are the live attempts of the host's policies.
	LiveAttempts int `json:"live_attempts"`
	// SeenAt is its last heartbeat; nil if it never sent one.
	SeenAt *time.Time `json:"seen_at"`
	// Stale: its last heartbeat is older than StaleAfter (or it never
	// sent one).
	Stale bool `json:"stale"`
}

// FleetStatusOf reads every host of the store's fleet, with its live
// attempts, judged stale at now after staleAfter (0: DefaultStaleAfter).
// A store that is no store.Fleet gives nil.
func FleetStatusOf(ctx context.Context, st store.Store, now time.Time, staleAfter time.Duration) (*FleetStatus, error) {
	fleet, ok := st.(store.Fleet)
	if !ok {
		return nil, nil
	}
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	hosts, err := fleet.FleetHosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the fleet's hosts: %w", err)
	}
	out := &FleetStatus{Hosts: make([]FleetHostStatus, 0, len(hosts)), StaleAfter: staleAfter}
	for _, h := range hosts {
		live, err := st.LiveAttempts(ctx, h.ID)
		if err != nil {
			return nil, fmt.Errorf("read the live attempts of host %s: %w", h.Name, err)
		}
		hs := FleetHostStatus{ID: h.ID, Name: h.Name, MemoryBytes: h.MemoryBytes, CPUs: h.CPUs, OS: h.OS,
			Version: h.Version, LiveAttempts: len(live)}
		if !h.SeenAt.IsZero() {
			seen := h.SeenAt.UTC()
			hs.SeenAt = &seen
		}
		out.Hosts = append(out.Hosts, hs)
	}
	out.Judge(now, staleAfter)
	return out, nil
}

// Judge judges every host again, stale at now after staleAfter (0:
// DefaultStaleAfter): for a reader whose hosts heartbeat at another
// interval than the default. A nil fleet stays nil.
func (f *FleetStatus) Judge(now time.Time, staleAfter time.Duration) {
	if f == nil {
		return
	}
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	f.StaleAfter = staleAfter
	for i := range f.Hosts {
		h := &f.Hosts[i]
		h.Stale = h.SeenAt == nil || now.Sub(*h.SeenAt) > staleAfter
	}
}

// MemoryStatus is the host's memory as admission sees it.
type MemoryStatus struct {
	TotalBytes     uint64 `json:"total_bytes"`
	AvailableBytes uint64 `json:"available_bytes"`
	ReserveBytes   uint64 `json:"reserve_bytes"`
	// CommittedBytes is Σ over live attempts of max(current RSS, expected peak).
	CommittedBytes uint64 `json:"committed_bytes"`
	// DiskFreeBytes and DiskFloorBytes of the data directory's filesystem.
	DiskFreeBytes  uint64 `json:"disk_free_bytes"`
	DiskFloorBytes uint64 `json:"disk_floor_bytes"`
	// MaxSpares is the host's bound on warm spares, all policies
	// together ([admission] max_spares, its default applied; 0: none).
	// Nil when unknown.
	MaxSpares *int `json:"max_spares,omitempty"`
}

// PolicyStatus is one policy's figures.
type PolicyStatus struct {
	ID      rm.PolicyID `json:"id"`
	Name    string      `json:"name"`
	Target  string      `json:"target"`
	Mode    string      `json:"mode"`
	Paused  bool        `json:"paused"`
	Live    int         `json:"live"`
	Idle    int         `json:"idle"`
	Busy    int         `json:"busy"`
	MinIdle int         `json:"min_idle"`
	Max     int         `json:"max"`
	// Demand is what GitHub last said the target wants.
	Demand int `json:"demand"`
	// Admitted is the capacity admission allows now (≤ Max): what
	// scale-set mode reports as maxCapacity.
	Admitted int `json:"admitted"`
	// ExpectedPeakBytes is what admission expects a new attempt to peak at.
	ExpectedPeakBytes uint64 `json:"expected_peak_bytes"`
	LastRefusal       string `json:"last_refusal"`
	LastError         string `json:"last_error"`
	// WaitStatus: the jobs that wait, and why.
	WaitStatus

	// Spares are the warm spares live now (idle runners beyond the jobs),
	// SpareTarget how many the loop keeps, Boot the measured boot of the
	// policy's runners (launch → taking a waiting job, from the runner's
	// own act, never a poll's sighting: boot.go; 0 until measured).
	Spares      int `json:"spares"`
	SpareTarget int `json:"spare_target"`
	// SpareCap is the most spares the policy keeps (rm.Policy.Spares),
	// SpareAuto whether they are sized by the day; SpareNote says why the
	// spares live are below the target ("spares: the host keeps 8 warm
	// spares at most …", "memory: …"), "" when they are not.
	SpareCap  int           `json:"spare_cap"`
	SpareAuto bool          `json:"spare_auto"`
	SpareNote string        `json:"spare_note"`
	Boot      time.Duration `json:"boot_ns"`
	// JobStart is how fast its jobs started in the last hour.
	JobStart JobStartStatus `json:"job_start"`
	// Fleet: the policy is the fleet's (rm.Policy.Fleet), served by every
	// host sharing the store; FleetSet is its scale set across the fleet
	// (Status.WithFleetSets), nil when the store did not tell.
	Fleet    bool            `json:"fleet"`
	FleetSet *FleetSetStatus `json:"fleet_set"`
}

// AttemptStatus is one live (or just ended) attempt's figures.
type AttemptStatus struct {
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

// StatusFromJournal is what the journal alone tells of a host, for when no
// daemon answers: its policies as set, with their live attempts (states,
// jobs, peaks recorded so far), stamped now; no usage, demand, admission or
// GitHub budget, which only a running daemon knows. host selects the host's
// policies; the zero id shows every policy, with the host of the first.
func StatusFromJournal(ctx context.Context, st store.Store, host rm.HostID, now time.Time) (Status, error) {
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
		ps := policyStatusOf(p)
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
			out.Attempts = append(out.Attempts, AttemptStatus{
				ID: a.ID, Policy: a.Policy, PolicyName: p.Name, RunnerName: a.RunnerName, State: a.State, Job: statusJob(a.Job),
				CreatedAt: a.CreatedAt, PeakRSSBytes: a.Usage.PeakRSSBytes, LastMessage: a.LastMessage,
			})
			if a.State == rm.StateBusy && a.Job.Known() {
				out.Jobs = append(out.Jobs, JobStatus{ID: a.Job.ID, Number: a.Job.Number, RunID: a.Job.RunID, Workflow: a.Job.Workflow,
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
	if out.Fleet, err = FleetStatusOf(ctx, st, now, 0); err != nil {
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
	merged := make([]PolicyStatus, len(s.Policies), len(s.Policies)+len(policies))
	copy(merged, s.Policies)
	for i, p := range merged {
		index[p.ID] = i
	}
	for _, p := range policies {
		set := policyStatusOf(p)
		i, ok := index[p.ID]
		if !ok {
			merged = append(merged, set)
			continue
		}
		ps := &merged[i]
		ps.Name, ps.Target, ps.Mode = set.Name, set.Target, set.Mode
		ps.Paused, ps.MinIdle, ps.Max, ps.Fleet = set.Paused, set.MinIdle, set.Max, set.Fleet
	}
	s.Policies = merged
	return s
}

// HostMemoryStatus is the memory of machine mc and the free disk of the
// data directory's filesystem as they are now, with the reserve and the
// floor admission keeps: the memory line of a status no daemon gave. A
// figure the system does not tell stays 0.
func HostMemoryStatus(mc rm.Machine, dataDir string, reserve, diskFloor uint64) MemoryStatus {
	m := MemoryStatus{ReserveBytes: reserve, DiskFloorBytes: diskFloor}
	if total, avail, err := mc.Memory(); err == nil {
		m.TotalBytes, m.AvailableBytes = total, avail
	}
	if free, err := mc.DiskFree(dataDir); err == nil {
		m.DiskFreeBytes = free
	}
	return m
}

// policyStatusOf is a policy's figures as its settings give them, before
// any pass: no live attempts, demand or admission yet.
func policyStatusOf(p rm.Policy) PolicyStatus {
	return PolicyStatus{
		ID: p.ID, Name: p.Name, Target: p.Target.String(), Mode: p.Target.Mode().String(),
		Paused: p.Paused, MinIdle: p.MinIdle, Max: p.Max, SpareCap: p.Spares(), SpareAuto: p.SparesAuto() && p.Spares() > 0,
		Fleet: p.Fleet,
	}
}

// JobLabel is how people know the attempt's job (rm.Job.Label): "" before
// one.
func (a AttemptStatus) JobLabel() string {
	if a.Job == nil {
		return ""
	}
	return a.Job.Label()
}

// statusJob is an attempt's job for its AttemptStatus: nil until known.
func statusJob(j rm.Job) *rm.Job {
	if !j.Known() {
		return nil
	}
	return &j
}
