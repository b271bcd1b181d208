package fakegithub

import (
	"net/http"
	"time"
)

// The Actions service's misbehaviours that GitHub's own code, or its
// incidents, show it capable of, each a switch for tests and the chaos
// run. Each says where it was seen.

// serviceFaults holds the switches, under Server.mu.
type serviceFaults struct {
	// emptyQueueURL: the next n session creates (and refreshes) answer
	// without a messageQueueUrl; the session exists all the same.
	emptyQueueURL int
	// cutCreate: the next n session creates take effect, and their answer
	// is cut off before the client reads it.
	cutCreate int
	// direct: jobs are assigned to a scale set directly (JobAssigned with
	// no JobAvailable), and acquirejobs answers 404.
	direct bool
}

// WithDirectAssignment makes the service assign jobs directly, as
// github.com is reported to do (third-party reports, not GitHub's code:
// see ../shared/reference/github-wire.md): a queued job matching a scale
// set with a session is taken by it without a JobAvailable message, it is
// JobAssigned while the session's capacity allows, and acquirejobs answers
// 404. GHES still offers and needs the acquire step (actions/scaleset #75).
func WithDirectAssignment() Option { return func(c *config) { c.direct = true } }

// SetDirectAssignment switches direct assignment (WithDirectAssignment)
// on or off.
func (s *Server) SetDirectAssignment(on bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.svc.direct = on
	s.changed()
}

// SetEmptyQueueURL makes the next n message-session creates and refreshes
// answer 200 with an empty messageQueueUrl, as the broker did during an
// incident (actions/actions-runner-controller #4370); the session is made
// all the same, so a client that does not delete it meets 409 next.
// GitHub's listener exits on such a session and is restarted.
func (s *Server) SetEmptyQueueURL(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.svc.emptyQueueURL = n
}

// CutSessionCreates makes the next n message-session creates take effect
// and then drops the connection before the answer: the client never learns
// the session's id, and the service holds a session under its owner name
// that nobody can delete (a create whose answer was cut off). It lapses
// only with WithSessionIdleTimeout, or when DropSessionsOf is called.
func (s *Server) CutSessionCreates(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.svc.cutCreate = n
}

// ForgetSessions makes the service forget every message session at once,
// as a broker restart can: a refresh answers 404, a session's old queue
// token 401, the session's id is unknown to DELETE (404); a new create
// succeeds (actions/scaleset #123: recreate the session on a refresh 404).
func (s *Server) ForgetSessions() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, se := range s.sessions {
		s.dropSession(se)
	}
	s.changed()
}

// DropSessionsOf drops the sessions of the scale set named name whose
// owner is owner (GitHub letting a session go at last); it reports how
// many it dropped.
func (s *Server) DropSessionsOf(name, owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, se := range s.sessions {
		if se.ss.name == name && se.owner == owner {
			s.dropSession(se)
			n++
		}
	}
	s.changed()
	return n
}

// DeleteScaleSet deletes every scale set named name, as GitHub has been
// seen to do by itself (actions/actions-runner-controller #3935, #4370):
// its session goes, its idle runners are removed, its jobs not yet started
// go back to the queue; a busy runner finishes its job. It reports how many
// scale sets it deleted.
func (s *Server) DeleteScaleSet(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, id := range s.scaleSetIDs() {
		if ss := s.scaleSets[id]; ss.name == name {
			s.removeScaleSet(ss)
			n++
		}
	}
	s.changed()
	return n
}

// takeDirect moves the queued jobs that scale set ss may take to it as
// acquired, with no message, under direct assignment (assign then offers
// them as JobAssigned within capacity). s.mu is held.
func (s *Server) takeDirect(ss *scaleSet, now time.Time) {
	if !s.svc.direct || s.sessionOf(ss) == nil {
		return
	}
	for _, j := range s.jobs {
		if j.phase == phaseQueued && s.matchesScaleSet(j, ss) {
			j.phase = phaseAcquired
			j.rec.ScaleSetID = ss.id
			j.rec.AcquiredAt = now
		}
	}
}

// directAcquireReply is acquirejobs under direct assignment: 404, the
// status reported of github.com (third-party; actions/scaleset
// session_client.go acquireJobs treats every status but 200 and 401 as an
// error). No GitHub code shows this answer's body: its typeName is the
// fake's, and the manager reads only the status.
func directAcquireReply() reply {
	return exception(http.StatusNotFound, "GitHub.Services.WebApi.VssResourceNotFoundException", "There are no jobs to acquire: jobs are assigned directly.")
}
