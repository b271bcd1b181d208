package reconcile

import (
	"fmt"
	"slices"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// spareMem is one warm spare's memory in an admission session.
type spareMem struct {
	id   rm.AttemptID
	cost uint64
}

// spareCost reports whether a live attempt is a warm spare (its loop
// marked it and it runs no job), its cost (what admission counts it at,
// its RSS when larger), and whether it is a spare a job may still take
// the memory of (not yielding already).
func (s *session) spareCost(at rm.Attempt) (spare bool, cost uint64, yieldable bool) {
	if s.tab == nil || at.State == rm.StateBusy || !at.BusyAt.IsZero() {
		return false, 0, false
	}
	cost, yielding, ok := s.tab.spareOf(at.ID)
	return ok, cost, ok && !yielding
}

func (s *session) addSpare(id rm.AttemptID, cost uint64) {
	s.spareCommitted += cost
	s.spares = append(s.spares, spareMem{id: id, cost: cost})
}

// limit is the memory admission may commit, and whether memory is checked.
func (s *session) limit() (uint64, bool) {
	if s.total == 0 || s.memErr != nil {
		return 0, false
	}
	return sub(s.total, s.a.Reserve), true
}

// yieldSpares stops spares, newest first, until the session's commitments
// fit the host again: a job admitted without them, or runners that grew,
// never wait on a spare's memory.
func (s *session) yieldSpares() {
	limit, ok := s.limit()
	for ok && s.committed > limit && len(s.spares) > 0 {
		sp := s.spares[len(s.spares)-1]
		s.spares = slices.Delete(s.spares, len(s.spares)-1, len(s.spares))
		s.committed = sub(s.committed, sp.cost)
		s.spareCommitted = sub(s.spareCommitted, sp.cost)
		if nudge := s.tab.yieldSpare(sp.id); nudge != nil {
			nudge()
		}
	}
}

// admitSpare decides one spare of cost, the policy having live of its cap
// spares: it must fit beside everything committed, spares included, and
// is never the one-at-a-time exception of a host too small.
func (s *session) admitSpare(cost uint64, live, capN int) (Refusal, bool) {
	if s.memErr != nil || s.diskErr != nil {
		return Refusal{Reason: status.RefusedMemory, Detail: "host figures unknown"}, false
	}
	if n := s.a.maxSpares(); s.spareCount >= n {
		return Refusal{Reason: status.RefusedSpares, Detail: fmt.Sprintf("the host keeps %d warm spares at most ([admission] max_spares)", n)}, false
	}
	if n := s.a.MaxJobs; n > 0 && s.jobs+s.spareCount >= n {
		return Refusal{Reason: status.RefusedMaxJobs, Detail: fmt.Sprintf("host max_jobs %d: %d jobs and %d spares on this host", n, s.jobs, s.spareCount)}, false
	}
	r, ok := s.a.Decide(s.ask(cost, live, capN))
	if !ok || r.HostTooSmall {
		return r, false
	}
	s.committed += cost
	s.spareCommitted += cost
	s.spareCount++
	return r, true
}

// withoutSpares is the session as a job's admission sees it: the spares'
// memory free (they yield), for the capacity told to GitHub.
func (s *session) withoutSpares() session {
	c := *s
	c.committed = sub(c.committed, c.spareCommitted)
	c.spareCommitted, c.spares, c.tab = 0, nil, nil
	return c
}

// spareOf reports whether an attempt is a spare, at what cost, and
// whether it is yielding (on its way out: its memory is still held, but
// it is no longer one a job can take).
func (t *table) spareOf(id rm.AttemptID) (cost uint64, yielding, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := t.m[id]
	if r == nil || !r.spare {
		return 0, false, false
	}
	return r.spareCost, r.yield, true
}

// yieldSpare asks a spare to give its memory back: its loop's next pass
// stops it.
func (t *table) yieldSpare(id rm.AttemptID) (nudge func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if r := t.m[id]; r != nil && r.spare {
		r.yield = true
		return r.nudge
	}
	return nil
}
