package fakegithub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// JobSpec is a job to queue: what it asks of a runner and what it costs.
type JobSpec struct {
	// Repo is "owner/repo"; it is added if unknown.
	Repo string
	// Labels are the job's runs-on labels. A job for a scale set has one:
	// the scale set's name.
	Labels []string
	Name   string // display name; default "job-<id>"
	// Key is the job's id in its workflow (its key under jobs:, which
	// steps and hooks read as GITHUB_JOB); default Name.
	Key      string
	Workflow string // workflow ref; default "owner/repo/.github/workflows/ci.yml@refs/heads/main"
	// Duration is how long the runner works on it.
	Duration time.Duration
	// MemoryBytes the runner allocates and touches while it works.
	MemoryBytes uint64
	// CPUMillicores the runner burns while it works (1000 = one core).
	CPUMillicores int
	// Script, when set, is a shell script the runner runs (sh -c, in its
	// work folder, with its environment) before it works: a job's step. A
	// step that leaves processes behind (`sleep 300 &`) is how tests make
	// a job that does.
	Script string
	// Result is what the job concludes with: "" or ResultSucceeded, or
	// ResultFailed.
	Result string
	// HangAfter makes the fake runner hang after the job: it reports the
	// job's end (GitHub says the job completed), then lives on, its
	// session open, until it is stopped, as real runners were seen to
	// (actions/runner #4703, #4418).
	HangAfter bool
	// Event is the event that triggered the job's run; "" is "push".
	Event string
	// HeadRepo is the repository the run's code comes from ("owner/repo"):
	// a fork's, for a pull request from one; "" is Repo itself.
	HeadRepo string
	// CI, when set, makes the job's first step a setup like real CI's
	// (see CIJob); the record's Setup says what it took.
	CI *CIJob
	// Probe, when set, makes the job try to read these paths or globs
	// (filepath.Glob patterns; a directory is read whole; $NAME and
	// ${NAME} are the job's variables, HOME, RUNNER_TOOL_CACHE,
	// GITHUB_WORKSPACE among them); the record's Probe says what it could.
	Probe []string
}

// event is the spec's event as GitHub names it.
func (j JobSpec) event() string {
	if j.Event == "" {
		return "push"
	}
	return j.Event
}

// JobRecord is a job's life as the fake saw it.
type JobRecord struct {
	ID, RunID int64
	// RequestID is the scale-set service's runnerRequestId (new on requeue).
	RequestID int64
	// ScaleSetJobID is the jobId its scale-set messages carry, in the form
	// WithScaleSetJobIDs set ("" for JobIDNone); it stays on requeue.
	ScaleSetJobID string
	Repo          string
	Labels        []string
	Name          string
	Workflow      string
	// Status is "queued", "in_progress" or "completed".
	Status string
	// Result once completed: "succeeded", "failed" or "canceled".
	Result string
	// ScaleSetID is the scale set that acquired it (0: none).
	ScaleSetID         int
	QueuedAt           time.Time
	AcquiredAt         time.Time
	ScaleSetAssignedAt time.Time
	// AssignedAt is when a runner was handed the job.
	AssignedAt time.Time
	// RunnerID and RunnerName are the runner it was handed to: the one
	// that ran it, once started (Restart clears them on a job it queues
	// again). The REST API shows them only once the job is in progress.
	RunnerID      int64
	RunnerName    string
	RunnerGroupID int64
	StartedAt     time.Time
	CompletedAt   time.Time
	// Starts is how many times a runner started it: 1 for a job run once.
	Starts int
	// Requeues is how many times it came back after no runner took it.
	Requeues int
	// Log is the job's log as its runner uploaded it with its result:
	// each step's output, the runner's job hooks' ("Set up runner",
	// "Complete runner") among them. StepSummary is what its steps wrote
	// to GITHUB_STEP_SUMMARY. Both empty until it completed.
	Log, StepSummary string
	// Setup is what a CI job's setup took and found warm (nil for other
	// jobs, or until it completed).
	Setup *SetupReport
	// Probe is what a probe job could read (nil for other jobs).
	Probe *ProbeReport
}

// EnqueueJob queues a job (and its workflow run) and returns its id. It
// panics on a malformed repository name (a programming error).
func (s *Server) EnqueueJob(spec JobSpec) int64 {
	sc, err := rm.Repository(spec.Repo)
	if err != nil {
		panic(fmt.Sprintf("fakegithub: %v", err))
	}
	spec.Labels = slices.Clone(spec.Labels)
	spec.Probe = slices.Clone(spec.Probe)
	if spec.CI != nil {
		c := *spec.CI
		spec.CI = &c
	}
	if spec.Result == "" {
		spec.Result = ResultSucceeded
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.addRepo(sc.Name)
	s.nextID++
	runID := s.nextID
	s.nextID++
	id := s.nextID
	s.nextRequestID++
	if spec.Name == "" {
		spec.Name = "job-" + strconv.FormatInt(id, 10)
	}
	if spec.Workflow == "" {
		spec.Workflow = sc.Name + "/.github/workflows/ci.yml@refs/heads/main"
	}
	j := &job{spec: spec, rec: JobRecord{
		ID: id, RunID: runID, RequestID: s.nextRequestID, ScaleSetJobID: s.scaleSetJobID(id), Repo: sc.Name,
		Labels: spec.Labels, Name: spec.Name, Workflow: spec.Workflow,
		Status: statusQueued, QueuedAt: s.now(),
	}}
	s.jobs = append(s.jobs, j)
	s.jobByID[id] = j
	s.offer(j)
	s.webhook("queued", j)
	s.changed()
	return id
}

// Jobs returns every job's record, in queue order.
func (s *Server) Jobs() []JobRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]JobRecord, 0, len(s.jobs))
	for _, j := range s.jobs {
		out = append(out, j.record())
	}
	return out
}

// Job returns one job's record.
func (s *Server) Job(id int64) (JobRecord, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobByID[id]
	if j == nil {
		return JobRecord{}, false
	}
	return j.record(), true
}

func (j *job) record() JobRecord {
	r := j.rec
	r.Labels = slices.Clone(r.Labels)
	if r.Setup != nil {
		c := *r.Setup
		r.Setup = &c
	}
	if r.Probe != nil {
		c := *r.Probe
		c.Paths = slices.Clone(c.Paths)
		r.Probe = &c
	}
	return r
}

// RunnerRecord is a runner registration as the fake holds it.
type RunnerRecord struct {
	ID         int64
	Name       string
	Scope      rm.Scope
	GroupID    int64
	Labels     []string
	ScaleSetID int
	Ephemeral  bool
	Online     bool
	Busy       bool
	JobID      int64
	Version    string
	OS         string
	CreatedAt  time.Time
}

// Runners returns the registered runners, by id.
func (s *Server) Runners() []RunnerRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]RunnerRecord, 0, len(s.runners))
	for _, id := range slices.Sorted(maps.Keys(s.runners)) {
		r := s.runners[id]
		out = append(out, RunnerRecord{
			ID: r.id, Name: r.name, Scope: r.scope, GroupID: r.groupID, Labels: slices.Clone(r.labels),
			ScaleSetID: r.scaleSet, Ephemeral: r.ephemeral, Online: s.online(r), Busy: r.busy(),
			JobID: r.job, Version: r.version, OS: r.os, CreatedAt: r.createdAt,
		})
	}
	return out
}

// ScaleSetRecord is a scale set as the fake holds it.
type ScaleSetRecord struct {
	ID      int
	Name    string
	Scope   rm.Scope
	GroupID int64
	// SessionOwner is the owner of its live message session ("" if none).
	SessionOwner string
	// MaxCapacity is the latest X-ScaleSetMaxCapacity a session sent.
	MaxCapacity int
	// Assigned is statistics.totalAssignedJobs.
	Assigned      int
	Running       int
	Available     int
	DisableUpdate bool
	// Polling is how many message-queue polls are waiting now.
	Polling int
}

// ScaleSets returns the scale sets, by id.
func (s *Server) ScaleSets() []ScaleSetRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []ScaleSetRecord
	for _, id := range s.scaleSetIDs() {
		ss := s.scaleSets[id]
		st := s.stats(ss)
		rec := ScaleSetRecord{
			ID: ss.id, Name: ss.name, Scope: ss.scope, GroupID: ss.groupID, MaxCapacity: ss.maxCapacity,
			Assigned: st.TotalAssignedJobs, Running: st.TotalRunningJobs, Available: st.TotalAvailableJobs,
			DisableUpdate: ss.disableUpdate,
		}
		if se := s.sessionOf(ss); se != nil {
			rec.SessionOwner, rec.Polling = se.owner, se.polling
		}
		out = append(out, rec)
	}
	return out
}

// ErrClosed is returned by waits on a closed server.
var ErrClosed = errors.New("fakegithub: server closed")

// WaitFor returns once cond holds, re-checking it on every change of the
// fake's state (and every 50 ms, for time-driven changes), or ctx's error.
// cond may call the Server's methods.
func (s *Server) WaitFor(ctx context.Context, cond func() bool) error {
	t := time.NewTicker(50 * time.Millisecond)
	defer t.Stop()
	for {
		s.mu.Lock()
		ch := s.wake
		s.mu.Unlock()
		if cond() {
			return nil
		}
		select {
		case <-ch:
		case <-t.C:
		case <-ctx.Done():
			return ctx.Err()
		case <-s.closed:
			return ErrClosed
		}
	}
}

// WaitJobsCompleted returns once every queued job completed, or ctx's error.
func (s *Server) WaitJobsCompleted(ctx context.Context) error {
	return s.WaitFor(ctx, func() bool {
		for _, j := range s.Jobs() {
			if j.Status != statusCompleted {
				return false
			}
		}
		return true
	})
}
