package runnermanager

import (
	"context"
	"time"
)

// DemandSource is where a scale target's demand comes from: how many
// runners it wants now, with the job events that name which runner took
// which job. GitHub's scale-set message session and its classic queue poll
// are two; an embedder's own queue may be another. A loop watches one
// source per target.
type DemandSource interface {
	// Watch calls report with each demand figure and its job events until
	// ctx is done (returning nil) or a fatal error (ErrUnauthorized,
	// ErrNotFound, ErrSessionConflict). maxCapacity is read before every
	// poll: it is the admitted capacity, and changes live (scale-set mode
	// sends it to GitHub as maxCapacity, so GitHub assigns no more).
	Watch(ctx context.Context, maxCapacity func() int, report func(Demand)) error
	// Waiting says why a watch that recovers by itself is not serving
	// demand now (credentials refused, the service unreachable, a lost
	// scale set being found again) and since when; nil while it serves. A
	// source whose Watch returns its errors instead answers nil. It is
	// called while Watch runs, from other goroutines (each status read),
	// and must be cheap.
	Waiting() (reason error, since time.Time)
	// Close releases what the source holds (a scale-set message session)
	// once its loop has ended.
	Close(ctx context.Context) error
}

// Demand is how many runners a target wants now.
type Demand struct {
	// Wanted is the number of jobs assigned to the target, waiting or
	// running (scale-set mode: statistics.TotalAssignedJobs; classic mode:
	// matching queued and in-progress jobs).
	Wanted int
	// Queued is the number of jobs the source holds for the target and has
	// not assigned, because the capacity told to it is taken (scale-set
	// mode: statistics.TotalAvailableJobs + TotalAcquiredJobs: offered, or
	// taken and waiting for capacity; classic mode counts them in Wanted).
	Queued int
	// Running is how many of the Wanted jobs run now, when RunningCounted
	// (scale-set mode: statistics.TotalRunningJobs). A fleet policy's
	// holder bounds by it what the hosts it no longer hears from can still
	// be running.
	Running        int
	RunningCounted bool
	Events         []JobEvent
	At             time.Time
	// Pending lists, oldest first, the jobs counted in Wanted or Queued
	// that no runner has started yet, as far as the source knows them one
	// by one (scale-set mode: from the JobAvailable and JobAssigned
	// messages, while jobs GitHub holds beyond capacity may be in the
	// counts only; classic mode: from the jobs API). PendingListed says
	// this figure carries the list (it may be empty); a figure without it
	// (a webhook's nudge, a source that does not list) leaves the last one
	// standing. It is for people (the jobs view), never for scaling.
	Pending       []PendingJob
	PendingListed bool
	// Unmatched lists, with Pending, the jobs of the source's scope that
	// wait for a self-hosted runner and that no target the source serves
	// matches by labels (classic mode): no policy here will serve them.
	Unmatched []PendingJob
	// Spares, when SparesShared, is how many warm spares the target's
	// policies keep on this host at most, in place of their own Spare: a
	// fleet policy's holder spreads the fleet's spares over its hosts. A
	// figure without it leaves the last one standing.
	Spares       int
	SparesShared bool
}

// RoomObserver is a demand source that wants to know, after each pass of
// its target's loop, what the loop runs and could take: a fleet policy's
// source publishes it, and the host holding the fleet's session places
// jobs by it. ObserveRoom is called from the loop's goroutine and must
// not block.
type RoomObserver interface {
	ObserveRoom(Room)
}

// Room is what one host's loop of a target runs and could take now.
type Room struct {
	// Capacity is the jobs the loop would run at once now, those it runs
	// included (what scale-set mode tells GitHub as maxCapacity).
	Capacity int
	// Busy and Idle are its runners running a job and the others that
	// hold a slot (starting or listening).
	Busy, Idle int
	// FreeMemory is what memory admission has free beyond the live
	// attempts' commitments, warm spares left out (they yield to jobs);
	// MemoryKnown is false where memory is not checked.
	FreeMemory  uint64
	MemoryKnown bool
	// WarmFree is how many workspace slots of the policy's repository the
	// host has free (docs/warm.md): a fleet places a job where one waits.
	WarmFree int
}

// PendingJob is a job a demand source holds for its target that no runner
// has started: offered or queued at GitHub, or assigned and waiting for a
// runner.
type PendingJob struct {
	// ID is the job's id as its source gives it (JobEvent.JobID).
	ID     string
	Number int64 // the REST job number, 0 when not known
	RunID  int64
	// Repository is "owner/name", when the source tells.
	Repository string
	Workflow   string
	Name       string // display name
	Labels     []string
	// Assigned: GitHub assigned it to the target (scale-set mode:
	// JobAssigned), so a runner of the target will take it. Not assigned:
	// offered to the target (JobAvailable) or queued (classic mode).
	Assigned bool
	// QueuedAt is when GitHub queued it, else when the source first saw it.
	QueuedAt time.Time
}

// JobEventKind is what happened to a job.
type JobEventKind string

// The job events a demand source passes on.
const (
	JobAssigned  JobEventKind = "assigned"
	JobStarted   JobEventKind = "started"
	JobCompleted JobEventKind = "completed"
)

// JobEvent tells which runner started or completed which job.
type JobEvent struct {
	Kind JobEventKind
	// JobID is the job's id as its source gives it (Job.ID): a scale-set
	// message's jobId (an opaque string), or its runnerRequestId in
	// decimal when it has none; in classic mode and from webhooks the REST
	// job number in decimal. "" when not told.
	JobID string
	// JobNumber is the REST job number, 0 when not known (scale-set
	// messages do not carry it).
	JobNumber  int64
	RunID      int64
	RunnerID   int64
	RunnerName string
	// Result of a completed job ("succeeded", "failed", "canceled", ...).
	Result      string
	Workflow    string
	DisplayName string
	Labels      []string
	At          time.Time
	// QueuedAt is when the job was queued (zero when not told): At −
	// QueuedAt of a started job is how long it waited for a runner.
	QueuedAt time.Time
	// AssignedAt is when GitHub assigned the job to the target (scale-set
	// mode: the message's scaleSetAssignTime; zero in classic mode, where
	// GitHub tells no such step). RunnerAssignedAt is when GitHub handed
	// it to a runner (runnerAssignTime; classic: the job's started_at).
	// FinishedAt is when it finished (finishTime; classic: completed_at).
	// Each is GitHub's clock, zero when not told (actions/scaleset v0.4.0
	// types.go JobMessageBase; REST description, get-job-for-workflow-run).
	AssignedAt       time.Time
	RunnerAssignedAt time.Time
	FinishedAt       time.Time
}
