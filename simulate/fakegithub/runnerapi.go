package fakegithub

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/golang-jwt/jwt/v4"
	"github.com/google/uuid"
	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// The runners' side: an OAuth client-assertion exchange for an access token,
// a session (online), a long poll for a job, and start/renew/finish of the
// job. The real runner speaks a richer protocol; this keeps what the
// manager can observe.

func (s *Server) runnerToken(c *call) reply {
	if err := c.r.ParseForm(); err != nil {
		return jsonReply(http.StatusBadRequest, map[string]string{"error": "invalid_request"})
	}
	claims := &jwt.RegisteredClaims{}
	_, err := jwt.ParseWithClaims(c.r.PostForm.Get("client_assertion"), claims, func(t *jwt.Token) (any, error) {
		if t.Method.Alg() != jwt.SigningMethodRS256.Alg() {
			return nil, errors.New("a client assertion is signed with RS256")
		}
		return &s.runnerKey.PublicKey, nil
	})
	if err != nil || c.r.PostForm.Get("grant_type") != "client_credentials" {
		return jsonReply(http.StatusBadRequest, map[string]string{"error": "invalid_client", "error_description": "The client assertion is not valid."})
	}
	s.ledger.note(CredRunnerAssertion, c.r.PostForm.Get("client_assertion"))
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.runnerByClient[claims.Subject]
	if !ok {
		return jsonReply(http.StatusUnauthorized, map[string]string{"error": "invalid_client", "error_description": "Registration was not found or is not active."})
	}
	tok := randomToken("rt_")
	s.runnerTokens[tok] = id
	s.ledger.note(CredRunnerToken, tok)
	return jsonReply(http.StatusOK, runnerproto.TokenResponse{AccessToken: tok, TokenType: "bearer", ExpiresIn: 3600})
}

func agentNotFound(id int64) reply {
	return exception(http.StatusNotFound, runnerproto.ExAgentNotFound, fmt.Sprintf("Agent %d not found: the registration was deleted.", id))
}

func deprecated(version string) reply {
	return exception(http.StatusForbidden, runnerproto.ExVersionDeprecated,
		fmt.Sprintf("Runner version v%s is deprecated and cannot receive messages.", version))
}

func (s *Server) runnerCreateSession(c *call) reply {
	var in runnerproto.SessionRequest
	if err := json.NewDecoder(io.LimitReader(c.r.Body, 1<<20)).Decode(&in); err != nil {
		return exception(http.StatusBadRequest, exInvalidArgument, "The body is not a session.")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runners[c.runner]
	switch {
	case r == nil:
		return agentNotFound(c.runner)
	case s.deprecated[in.Agent.Version]:
		return deprecated(in.Agent.Version)
	case r.sessionID != "" && s.online(r):
		return exception(http.StatusConflict, runnerproto.ExSessionConflict, fmt.Sprintf("Runner %s already has a session.", r.name))
	}
	r.sessionID = uuid.NewString()
	r.version, r.os = in.Agent.Version, in.Agent.OSDescription
	r.lastSeen, r.onlineAt = s.now(), s.now()
	s.changed()
	return jsonReply(http.StatusOK, runnerproto.Session{SessionID: r.sessionID, OwnerName: in.OwnerName, Agent: in.Agent})
}

func (s *Server) runnerDeleteSession(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runners[c.runner]
	if r == nil {
		return agentNotFound(c.runner)
	}
	if r.sessionID == c.r.PathValue("session") {
		r.sessionID = ""
		s.changed()
	}
	return reply{status: http.StatusNoContent}
}

// runnerMessages long-polls for a job. A deleted runner hears 404 at once
// (in zombie mode it hears nothing, forever); a runner of a deprecated
// version hears 403.
func (s *Server) runnerMessages(c *call) reply {
	session := c.r.URL.Query().Get("sessionId")
	timer := time.NewTimer(s.cfg.pollTimeout)
	defer timer.Stop()
	s.mu.Lock()
	var polling *runner
	defer func() {
		if polling != nil {
			s.mu.Lock()
			polling.polling--
			polling.lastSeen = s.now()
			s.mu.Unlock()
		}
	}()
	for {
		r := s.runners[c.runner]
		zombie := r == nil && s.zombie
		switch {
		case zombie:
		case r == nil:
			s.mu.Unlock()
			return agentNotFound(c.runner)
		case r.sessionID != session:
			s.mu.Unlock()
			return exception(http.StatusNotFound, exSessionExpired, "The runner's session expired.")
		case s.deprecated[r.version]:
			s.mu.Unlock()
			return deprecated(r.version)
		case !r.busy():
			if j := s.dispatch(r); j != nil {
				r.lastSeen = s.now()
				r.msgSeq++
				var ci *runnerproto.CISetup
				if j.spec.CI != nil {
					ci = s.ciSetup(j.rec.Repo, *j.spec.CI)
				}
				body, _ := json.Marshal(runnerproto.JobRequest{
					RequestID: j.rec.RequestID, JobID: j.rec.ID, RunID: j.rec.RunID, Repository: j.rec.Repo,
					Workflow: j.spec.Workflow, DisplayName: j.spec.Name, JobKey: cmp.Or(j.spec.Key, j.spec.Name), DurationMS: j.spec.Duration.Milliseconds(),
					MemoryBytes: j.spec.MemoryBytes, CPUMillicores: j.spec.CPUMillicores, Result: j.spec.Result, Script: j.spec.Script,
					HangAfter: j.spec.HangAfter, CI: ci, Probe: j.spec.Probe,
					RenewMS: max(s.cfg.runnerLostAfter.Milliseconds()/4, 1),
				})
				msg := runnerproto.Message{MessageID: r.msgSeq, MessageType: runnerproto.MessageTypeJobRequest, Body: string(body)}
				s.changed()
				s.mu.Unlock()
				return jsonReply(http.StatusOK, msg)
			}
		}
		if r != nil && polling == nil {
			polling = r
			r.polling++
			r.lastSeen = s.now()
		}
		wake := s.wake
		s.mu.Unlock()
		if zombie {
			wake = nil // nothing will ever be for a zombie
		}
		select {
		case <-wake:
		case <-timer.C:
			return reply{status: http.StatusAccepted}
		case <-c.r.Context().Done():
			return reply{status: http.StatusAccepted}
		case <-s.closed:
			return reply{status: http.StatusAccepted}
		}
		s.mu.Lock()
	}
}

// runnerJob finds the path's job request, held by the calling runner.
func (s *Server) runnerJob(c *call) (*runner, *job, reply) {
	r := s.runners[c.runner]
	if r == nil {
		return nil, nil, agentNotFound(c.runner)
	}
	id, _ := strconv.ParseInt(c.r.PathValue("request"), 10, 64)
	for _, j := range s.jobs {
		if j.rec.RequestID == id && j.rec.RunnerID == r.id && r.job == j.rec.ID &&
			(j.phase == phaseDispatched || j.phase == phaseRunning) {
			return r, j, reply{}
		}
	}
	return r, nil, exception(http.StatusNotFound, runnerproto.ExJobNotFound, "The job request is no longer assigned to this runner.")
}

func (s *Server) runnerJobStart(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, j, rep := s.runnerJob(c)
	if j == nil {
		return rep
	}
	r.lastSeen = s.now()
	if j.phase == phaseDispatched {
		s.start(r, j)
		s.changed()
	}
	return jsonReply(http.StatusOK, map[string]any{"requestId": j.rec.RequestID})
}

func (s *Server) runnerJobRenew(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, j, rep := s.runnerJob(c)
	if j == nil {
		return rep
	}
	r.lastSeen = s.now()
	j.lastRenew = s.now()
	return jsonReply(http.StatusOK, map[string]any{"requestId": j.rec.RequestID})
}

func (s *Server) runnerJobFinish(c *call) reply {
	var in runnerproto.Finish
	// The log and a step summary of up to 1 MiB come with the result.
	_ = json.NewDecoder(io.LimitReader(c.r.Body, 8<<20)).Decode(&in)
	s.mu.Lock()
	defer s.mu.Unlock()
	r, j, rep := s.runnerJob(c)
	if j == nil {
		return rep
	}
	r.lastSeen = s.now()
	switch in.Result {
	case ResultSucceeded, ResultFailed, ResultCanceled:
	default:
		in.Result = j.spec.Result
	}
	if j.phase == phaseDispatched {
		s.start(r, j) // finished without a start report: it still ran
	}
	j.rec.Log, j.rec.StepSummary, j.rec.Setup, j.rec.Probe = in.Log, in.StepSummary, in.Setup, in.Probe
	s.complete(j, in.Result)
	s.changed()
	return jsonReply(http.StatusOK, map[string]any{"requestId": j.rec.RequestID})
}
