package fakegithub

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	rm "github.com/runner-manager/runner-manager"
)

// phase is where a job is in the fake's queue.
type phase int

const (
	// phaseQueued: waiting; any matching scale set may acquire it, any
	// matching classic runner may take it.
	phaseQueued phase = iota
	// phaseAcquired: a scale set acquired it; it waits for capacity.
	phaseAcquired
	// phaseAssigned: assigned to a scale set; it waits for one of its runners.
	phaseAssigned
	// phaseDispatched: handed to a runner that has not reported it started.
	phaseDispatched
	// phaseRunning: the runner reported it started.
	phaseRunning
	// phaseCompleted: done, whatever the result.
	phaseCompleted
)

// The job statuses of the REST API and webhooks.
const (
	statusQueued     = "queued"
	statusInProgress = "in_progress"
	statusCompleted  = "completed"
)

// The job results (the scale-set messages' words; REST conclusions are the
// same words except "succeeded", which REST calls "success").
const (
	ResultSucceeded = "succeeded"
	ResultFailed    = "failed"
	ResultCanceled  = "canceled"
)

// maxRequeues is how often an assigned job that no runner took is requeued
// before it is canceled for good.
const maxRequeues = 3

type job struct {
	rec       JobRecord
	spec      JobSpec
	phase     phase
	lastRenew time.Time
}

// matchesScaleSet reports whether the job targets scale set ss: its single
// runs-on label is the scale set's name, in a scope that holds the repo.
func (s *Server) matchesScaleSet(j *job, ss *scaleSet) bool {
	return len(j.spec.Labels) == 1 && strings.EqualFold(j.spec.Labels[0], ss.name) && s.scopeHoldsRepo(ss.scope, j.spec.Repo)
}

// matchesClassic applies GitHub's rule for a classic runner: ignore
// "self-hosted"; every other job label must be one of the runner's labels;
// a job with no labels matches nothing.
func (s *Server) matchesClassic(j *job, r *runner) bool {
	if r.scaleSet != 0 || !s.scopeHoldsRepo(r.scope, j.spec.Repo) {
		return false
	}
	for _, want := range j.spec.Labels {
		if strings.EqualFold(want, "self-hosted") {
			continue
		}
		if !slices.ContainsFunc(r.labels, func(have string) bool { return strings.EqualFold(have, want) }) {
			return false
		}
	}
	return len(j.spec.Labels) > 0
}

// scopeHoldsRepo reports whether scope contains the repository "owner/repo".
func (s *Server) scopeHoldsRepo(sc rm.Scope, repo string) bool {
	owner, _, _ := strings.Cut(repo, "/")
	switch sc.Kind {
	case rm.ScopeRepository:
		return strings.EqualFold(sc.Name, repo)
	case rm.ScopeOrganization:
		return strings.EqualFold(sc.Name, owner)
	case rm.ScopeEnterprise:
		o := s.orgs[strings.ToLower(owner)]
		return o != nil && strings.EqualFold(o.enterprise, sc.Name)
	}
	return false
}

type org struct {
	login      string
	enterprise string
}

type repo struct {
	id       int64
	fullName string
}

type runnerGroup struct {
	id        int64
	name      string
	isDefault bool
}

type runner struct {
	id        int64
	name      string
	scope     rm.Scope
	groupID   int64
	labels    []string
	scaleSet  int
	ephemeral bool
	createdAt time.Time
	clientID  string
	sessionID string
	version   string
	os        string
	polling   int
	lastSeen  time.Time
	job       int64 // dispatched or running job, 0 if none
	onlineAt  time.Time
	msgSeq    int64
}

func (r *runner) busy() bool { return r.job != 0 }

func (s *Server) online(r *runner) bool {
	if r.sessionID == "" {
		return false
	}
	return r.polling > 0 || r.busy() || s.now().Sub(r.lastSeen) < s.cfg.offlineAfter
}

type scaleSet struct {
	id            int
	name          string
	scope         rm.Scope
	groupID       int64
	labels        []label
	disableUpdate bool
	createdOn     time.Time
	maxCapacity   int
	session       *ssSession
}

type label struct {
	Type string `json:"type"`
	Name string `json:"name"`
}

type ssSession struct {
	id           string
	ss           *scaleSet
	owner        string
	queueToken   string
	tokenExpires time.Time
	pending      []json.RawMessage
	outstanding  *ssMessage
	nextMsgID    int
	polling      int
	lastActive   time.Time
}

type ssMessage struct {
	id   int
	body string
}

// expired reports whether a session nobody polls any more has lapsed (a
// manager killed without deleting its session); only with
// WithSessionIdleTimeout, as GitHub does not promise it.
func (s *Server) expired(se *ssSession) bool {
	d := s.cfg.sessionIdleTimeout
	return d > 0 && se.polling == 0 && s.now().Sub(se.lastActive) > d
}

// sessionOf returns the live session of ss, dropping a lapsed one.
func (s *Server) sessionOf(ss *scaleSet) *ssSession {
	se := ss.session
	if se != nil && s.expired(se) {
		s.dropSession(se)
		return nil
	}
	return se
}

func (s *Server) dropSession(se *ssSession) {
	delete(s.sessions, se.id)
	delete(s.queueTokens, se.queueToken)
	if se.ss.session == se {
		se.ss.session = nil
	}
}

// statistics are a scale set's figures as the service reports them.
type statistics struct {
	TotalAvailableJobs     int `json:"totalAvailableJobs"`
	TotalAcquiredJobs      int `json:"totalAcquiredJobs"`
	TotalAssignedJobs      int `json:"totalAssignedJobs"`
	TotalRunningJobs       int `json:"totalRunningJobs"`
	TotalRegisteredRunners int `json:"totalRegisteredRunners"`
	TotalBusyRunners       int `json:"totalBusyRunners"`
	TotalIdleRunners       int `json:"totalIdleRunners"`
}

func (s *Server) stats(ss *scaleSet) statistics {
	var st statistics
	for _, j := range s.jobs {
		switch {
		case j.phase == phaseQueued && s.matchesScaleSet(j, ss):
			st.TotalAvailableJobs++
		case j.rec.ScaleSetID != ss.id:
		case j.phase == phaseAcquired:
			st.TotalAcquiredJobs++
		case j.phase == phaseAssigned || j.phase == phaseDispatched:
			st.TotalAssignedJobs++
		case j.phase == phaseRunning:
			st.TotalAssignedJobs++
			st.TotalRunningJobs++
		}
	}
	for _, r := range s.runners {
		if r.scaleSet != ss.id {
			continue
		}
		st.TotalRegisteredRunners++
		switch {
		case r.busy():
			st.TotalBusyRunners++
		case s.online(r):
			st.TotalIdleRunners++
		}
	}
	return st
}

// jobMessage is one element of a scale-set message body.
type jobMessage struct {
	MessageType        string    `json:"messageType"`
	AcquireJobURL      string    `json:"acquireJobUrl,omitempty"`
	Result             string    `json:"result,omitempty"`
	RunnerID           int64     `json:"runnerId,omitempty"`
	RunnerName         string    `json:"runnerName,omitempty"`
	RunnerRequestID    int64     `json:"runnerRequestId"`
	RepositoryName     string    `json:"repositoryName"`
	OwnerName          string    `json:"ownerName"`
	JobID              string    `json:"jobId,omitempty"`
	JobWorkflowRef     string    `json:"jobWorkflowRef"`
	JobDisplayName     string    `json:"jobDisplayName"`
	WorkflowRunID      int64     `json:"workflowRunId"`
	EventName          string    `json:"eventName"`
	RequestLabels      []string  `json:"requestLabels"`
	QueueTime          time.Time `json:"queueTime"`
	ScaleSetAssignTime time.Time `json:"scaleSetAssignTime"`
	RunnerAssignTime   time.Time `json:"runnerAssignTime"`
	FinishTime         time.Time `json:"finishTime"`
}

// scaleSetJobID is the jobId the scale-set messages of job id carry, in the
// configured form.
func (s *Server) scaleSetJobID(id int64) string {
	switch s.cfg.jobIDs {
	case JobIDNumeric:
		return strconv.FormatInt(id, 10)
	case JobIDNone:
		return ""
	}
	return uuid.NewString()
}

// emit queues a job message of kind for the session of scale set ssID, if
// it has one (messages for a scale set nobody listens to are lost, as on
// GitHub; the statistics stay true).
func (s *Server) emit(ssID int, kind string, j *job) {
	ss := s.scaleSets[ssID]
	if ss == nil {
		return
	}
	se := s.sessionOf(ss)
	if se == nil {
		return
	}
	owner, name, _ := strings.Cut(j.spec.Repo, "/")
	m := jobMessage{
		MessageType:        kind,
		RunnerRequestID:    j.rec.RequestID,
		RepositoryName:     name,
		OwnerName:          owner,
		JobID:              j.rec.ScaleSetJobID,
		JobWorkflowRef:     j.spec.Workflow,
		JobDisplayName:     j.spec.Name,
		WorkflowRunID:      j.rec.RunID,
		EventName:          j.spec.event(),
		RequestLabels:      slices.Clone(j.spec.Labels),
		QueueTime:          j.rec.QueuedAt,
		ScaleSetAssignTime: j.rec.ScaleSetAssignedAt,
		RunnerAssignTime:   j.rec.AssignedAt,
		FinishTime:         j.rec.CompletedAt,
	}
	switch kind {
	case "JobAvailable":
		m.AcquireJobURL = s.actionsURL() + "_apis/runtime/runnerscalesets/" + strconv.Itoa(ssID) + "/acquirejobs"
	case "JobStarted":
		m.RunnerID, m.RunnerName = j.rec.RunnerID, j.rec.RunnerName
	case "JobCompleted":
		m.RunnerID, m.RunnerName, m.Result = j.rec.RunnerID, j.rec.RunnerName, j.rec.Result
	}
	b, _ := json.Marshal(m) // plain struct
	se.pending = append(se.pending, b)
}

// offer sends JobAvailable for a queued job to every matching scale set with
// a session.
func (s *Server) offer(j *job) {
	if s.svc.direct {
		return // assign takes it
	}
	for _, id := range s.scaleSetIDs() {
		ss := s.scaleSets[id]
		if s.matchesScaleSet(j, ss) {
			s.emit(id, "JobAvailable", j)
		}
	}
}

func (s *Server) scaleSetIDs() []int {
	ids := make([]int, 0, len(s.scaleSets))
	for id := range s.scaleSets {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// changed runs the scheduler and wakes every long poll. Call it, with s.mu
// held, after any change of state.
func (s *Server) changed() {
	s.assign()
	close(s.wake)
	s.wake = make(chan struct{})
}

// assign moves acquired jobs to their scale set while it has capacity: the
// service never assigns more than the latest maxCapacity a session sent.
func (s *Server) assign() {
	now := s.now()
	for _, id := range s.scaleSetIDs() {
		ss := s.scaleSets[id]
		s.takeDirect(ss, now)
		assigned := 0
		for _, j := range s.jobs {
			if j.rec.ScaleSetID == id && (j.phase == phaseAssigned || j.phase == phaseDispatched || j.phase == phaseRunning) {
				assigned++
			}
		}
		for _, j := range s.jobs {
			if assigned >= ss.maxCapacity {
				break
			}
			if j.rec.ScaleSetID == id && j.phase == phaseAcquired {
				j.phase = phaseAssigned
				j.rec.ScaleSetAssignedAt = now
				assigned++
				s.emit(id, "JobAssigned", j)
			}
		}
	}
}

// dispatch hands runner r the next job it may run, or returns nil.
func (s *Server) dispatch(r *runner) *job {
	for _, j := range s.jobs {
		ok := false
		switch {
		case r.scaleSet != 0:
			ok = j.phase == phaseAssigned && j.rec.ScaleSetID == r.scaleSet
		default:
			ok = j.phase == phaseQueued && s.matchesClassic(j, r)
		}
		if !ok {
			continue
		}
		now := s.now()
		j.phase = phaseDispatched
		j.rec.AssignedAt = now
		j.rec.RunnerID = r.id
		j.rec.RunnerName = r.name
		j.rec.RunnerGroupID = r.groupID
		j.lastRenew = now
		r.job = j.rec.ID
		return j
	}
	return nil
}

// start records that r started its job.
func (s *Server) start(r *runner, j *job) {
	now := s.now()
	j.phase = phaseRunning
	j.rec.Status = statusInProgress
	j.rec.StartedAt = now
	j.rec.Starts++
	j.lastRenew = now
	if j.rec.ScaleSetID != 0 {
		s.emit(j.rec.ScaleSetID, "JobStarted", j)
	}
	s.webhook("in_progress", j)
}

// complete ends job j with result; its ephemeral runner's registration goes
// with it.
func (s *Server) complete(j *job, result string) {
	j.phase = phaseCompleted
	j.rec.Status = statusCompleted
	j.rec.Result = result
	j.rec.CompletedAt = s.now()
	if j.rec.ScaleSetID != 0 {
		s.emit(j.rec.ScaleSetID, "JobCompleted", j)
	}
	s.webhook("completed", j)
	if r := s.runners[j.rec.RunnerID]; r != nil && r.job == j.rec.ID {
		r.job = 0
		if r.ephemeral {
			s.removeRunner(r)
		}
	}
}

// requeue puts an assigned job nobody took back in the queue, or cancels it
// for good after maxRequeues.
func (s *Server) requeue(j *job) {
	ssID := j.rec.ScaleSetID
	j.rec.Result = ResultCanceled
	j.rec.CompletedAt = s.now()
	s.emit(ssID, "JobCompleted", j)
	if j.rec.Requeues >= maxRequeues {
		j.phase = phaseCompleted
		j.rec.Status = statusCompleted
		s.webhook("completed", j)
		return
	}
	j.rec.Requeues++
	j.phase = phaseQueued
	j.rec.ScaleSetID = 0
	j.rec.Result = ""
	j.rec.CompletedAt = time.Time{}
	j.rec.ScaleSetAssignedAt = time.Time{}
	j.rec.AcquiredAt = time.Time{}
	s.nextRequestID++
	j.rec.RequestID = s.nextRequestID
	s.offer(j)
}

func (s *Server) removeRunner(r *runner) {
	delete(s.runners, r.id)
	delete(s.runnerByClient, r.clientID)
}

// tick does what time alone decides: requeue assigned jobs nobody took,
// fail jobs whose runner went silent, drop lapsed sessions.
func (s *Server) tick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	dirty := false
	for _, j := range s.jobs {
		switch {
		case j.phase == phaseAssigned && s.cfg.assignTimeout > 0 && now.Sub(j.rec.ScaleSetAssignedAt) > s.cfg.assignTimeout:
			s.requeue(j)
			dirty = true
		case (j.phase == phaseDispatched || j.phase == phaseRunning) && now.Sub(j.lastRenew) > s.cfg.runnerLostAfter:
			// The runner lost communication: the job fails and the
			// runner's session is gone (it shows offline).
			if r := s.runners[j.rec.RunnerID]; r != nil {
				r.job = 0
				r.sessionID = ""
			}
			s.complete(j, ResultFailed)
			dirty = true
		}
	}
	if d := s.cfg.dropIdleAfter; d > 0 {
		for _, r := range s.runners {
			if r.sessionID != "" && !r.busy() && r.ephemeral && now.Sub(r.onlineAt) > d {
				s.removeRunner(r)
				dirty = true
			}
		}
	}
	for _, se := range s.sessions {
		if s.expired(se) {
			s.dropSession(se)
			dirty = true
		}
	}
	if dirty {
		s.changed()
	}
}
