package fakegithub

import (
	"fmt"
	"net"
	"slices"
	"time"
)

// Restart is the GitHub side restarting and forgetting the Actions
// service's state: every scale set and its message session, every admin
// token (the signing key changes), message-queue token and registration
// token, and every runner registration, classic and scale-set alike. A
// connected fake runner hears its registration is gone, as when deleted
// (404 agent not found), and exits. Repositories, organizations, runner
// groups, PATs, apps and their installation tokens stay.
//
// Jobs, as GitHub treats a job whose runner or scale set vanished: a job
// a runner had started fails (its runner is gone mid-job; the fake runner
// is told so at its next renew and cancels its work); a job acquired or
// assigned but not started, or handed to a runner that had not reported it
// started, is queued again with a new runner request id (Requeues is not
// counted: no runner was slow, the service forgot). Queued jobs stay queued
// and are offered to the next session of a matching scale set, or taken by
// a matching classic runner.
func (s *Server) Restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, j := range s.jobs {
		switch j.phase {
		case phaseRunning:
			s.complete(j, ResultFailed)
		case phaseAcquired, phaseAssigned, phaseDispatched:
			s.forget(j)
		}
	}
	clear(s.scaleSets)
	clear(s.sessions)
	clear(s.queueTokens)
	clear(s.regTokens)
	clear(s.runners)
	clear(s.runnerByClient)
	// s.runnerTokens stay: a runner presenting one is told its
	// registration is gone, not that its token is bad.
	s.adminKey = randomBytes(32)
	s.changed()
}

// forget puts a job that had not started back in the queue, as new.
func (s *Server) forget(j *job) {
	if r := s.runners[j.rec.RunnerID]; r != nil && r.job == j.rec.ID {
		r.job = 0
	}
	j.phase = phaseQueued
	j.rec.Status = statusQueued
	j.rec.ScaleSetID = 0
	j.rec.AcquiredAt, j.rec.ScaleSetAssignedAt, j.rec.AssignedAt = time.Time{}, time.Time{}, time.Time{}
	j.rec.RunnerID, j.rec.RunnerName, j.rec.RunnerGroupID = 0, "", 0
	s.nextRequestID++
	j.rec.RequestID = s.nextRequestID
}

// RevokeCredentials makes every credential a manager holds answer 401:
// personal access tokens, GitHub App JWTs and installation tokens,
// registration tokens, Actions service admin tokens and message-queue
// tokens, as when an organization's owner revokes access. Message-queue
// long polls waiting now answer 401 too. Runners' own credentials are not
// touched: a running job goes on. RestoreCredentials ends it.
func (s *Server) RevokeCredentials() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.revoked = true
	s.invalidateDerived()
	s.changed()
}

// RestoreCredentials makes the personal access tokens and apps work again.
// Every token derived before the revoke (installation, registration,
// admin and message-queue tokens) stays invalid, so a client must repeat
// the chain: registration token, admin token, then its message session
// (refreshed, or deleted and created again).
func (s *Server) RestoreCredentials() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.revoked {
		return
	}
	s.revoked = false
	s.invalidateDerived() // none were issued meanwhile; to be sure
	s.changed()
}

func (s *Server) invalidateDerived() {
	for tok, ti := range s.tokens {
		if !ti.pat {
			delete(s.tokens, tok)
		}
	}
	clear(s.regTokens)
	clear(s.queueTokens)
	s.adminKey = randomBytes(32)
}

// StopListening is a connection-refused outage: the listener closes (new
// connections are refused) and every open connection is dropped, long
// polls included. ResumeListening ends it. State is kept.
func (s *Server) StopListening() {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	if s.stopped {
		return
	}
	s.stopped = true
	_ = s.hs.Listener.Close()
	s.hs.CloseClientConnections()
}

// ResumeListening reopens the listener on the same address, so a client
// (a daemon in another process, a runner) keeps its URL. It fails if
// another program took the port meanwhile.
func (s *Server) ResumeListening() error {
	s.listenMu.Lock()
	defer s.listenMu.Unlock()
	if !s.stopped {
		return nil
	}
	select {
	case <-s.closed:
		return ErrClosed
	default:
	}
	addr := s.hs.Listener.Addr().String()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("fakegithub: reopening the listener on %s: %w", addr, err)
	}
	s.hs.Listener = l
	s.stopped = false
	s.bg.Add(1)
	go func() {
		defer s.bg.Done()
		_ = s.hs.Config.Serve(l) // until StopListening or Close closes l
	}()
	return nil
}

// ChargedCallsWhileLimited counts the charged REST requests (the ones that
// spend the budget) received while the primary budget was exhausted or a
// secondary limit's Retry-After had not elapsed: a client that waits for
// the reset and honours Retry-After scores 0. /rate_limit is free and not
// counted; the request that trips a secondary limit is not counted either.
func (s *Server) ChargedCallsWhileLimited() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.chargedWhileLimited
}

// SessionRecord is a scale set's message session as the fake holds it.
type SessionRecord struct {
	ScaleSetID int
	SessionID  string
	Owner      string
	// Polling is how many message-queue polls are waiting now.
	Polling int
	// LastActive is the last poll, acknowledgement or refresh.
	LastActive time.Time
}

// Sessions returns the live message sessions, by scale set id.
func (s *Server) Sessions() []SessionRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []SessionRecord
	for _, se := range s.sessions {
		if s.expired(se) {
			continue
		}
		out = append(out, SessionRecord{ScaleSetID: se.ss.id, SessionID: se.id, Owner: se.owner, Polling: se.polling, LastActive: se.lastActive})
	}
	slices.SortFunc(out, func(a, b SessionRecord) int { return a.ScaleSetID - b.ScaleSetID })
	return out
}
