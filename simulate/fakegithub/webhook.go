package fakegithub

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

type hookState struct {
	url, secret string
	queue       []pendingHook
	deliveries  []Delivery
	sent        map[string]pendingHook // by delivery id, for ReplayWebhook
	signal      chan struct{}
}

type pendingHook struct {
	id, action string
	jobID      int64
	body       []byte
	url        string
	secret     string
}

// Delivery is one workflow_job webhook the fake sent.
type Delivery struct {
	// ID is the X-GitHub-Delivery header.
	ID     string
	Action string // queued, in_progress, completed
	JobID  int64
	// Status is the receiver's answer (0 when it could not be reached; Err
	// says why).
	Status int
	Err    string
	At     time.Time
	// ReplayOf is the delivery ReplayWebhook replayed ("" for an original).
	ReplayOf string
}

// DeliverWebhooks sends workflow_job events (queued, in_progress,
// completed), from now on, to url, signed with secret in
// X-Hub-Signature-256, in order, one at a time. An empty url stops them.
func (s *Server) DeliverWebhooks(url, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hooks.url, s.hooks.secret = url, secret
}

// Deliveries returns the webhooks sent so far, oldest first.
func (s *Server) Deliveries() []Delivery {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.hooks.deliveries)
}

// Sign returns the X-Hub-Signature-256 value GitHub sends for body.
func Sign(secret string, body []byte) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// webhook queues a workflow_job event for j (s.mu held).
func (s *Server) webhook(action string, j *job) {
	if s.hooks.url == "" {
		return
	}
	owner, _, _ := strings.Cut(j.rec.Repo, "/")
	r := s.repos[strings.ToLower(j.rec.Repo)]
	payload := map[string]any{
		"action":       action,
		"workflow_job": s.jobJSON(j),
		"repository":   s.repoJSON(r),
		"organization": map[string]any{"login": owner},
		"sender":       map[string]any{"login": "octocat", "type": "User"},
	}
	body, _ := json.Marshal(payload) // plain maps
	s.hooks.queue = append(s.hooks.queue, pendingHook{
		id: uuid.NewString(), action: action, jobID: j.rec.ID, body: body, url: s.hooks.url, secret: s.hooks.secret,
	})
	select {
	case s.hooks.signal <- struct{}{}:
	default:
	}
}

// deliverHooks sends queued webhooks in order until the server closes.
func (s *Server) deliverHooks() {
	defer s.bg.Done()
	for {
		select {
		case <-s.closed:
			return
		case <-s.hooks.signal:
		}
		for {
			s.mu.Lock()
			if len(s.hooks.queue) == 0 {
				s.mu.Unlock()
				break
			}
			h := s.hooks.queue[0]
			s.hooks.queue = s.hooks.queue[1:]
			s.mu.Unlock()
			s.send(context.Background(), h, "")
		}
	}
}

var hookClient = &http.Client{Timeout: 5 * time.Second}

// send delivers h once and records the delivery.
func (s *Server) send(ctx context.Context, h pendingHook, replayOf string) Delivery {
	d := Delivery{ID: h.id, Action: h.action, JobID: h.jobID, At: time.Now(), ReplayOf: replayOf}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(h.body))
	if err == nil {
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "GitHub-Hookshot/fakegithub")
		req.Header.Set("X-GitHub-Event", "workflow_job")
		req.Header.Set("X-GitHub-Delivery", h.id)
		req.Header.Set("X-GitHub-Hook-ID", "1")
		req.Header.Set("X-Hub-Signature-256", Sign(h.secret, h.body))
		var resp *http.Response
		if resp, err = hookClient.Do(req); err == nil {
			d.Status = resp.StatusCode
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
			_ = resp.Body.Close()
		}
	}
	if err != nil {
		d.Err = err.Error()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hooks.sent == nil {
		s.hooks.sent = map[string]pendingHook{}
	}
	s.hooks.sent[h.id] = h
	s.hooks.deliveries = append(s.hooks.deliveries, d)
	s.changed()
	return d
}

// ReplayWebhook sends a past delivery again, now, to the URL it went to:
// the same body with the same valid X-Hub-Signature-256, under a new
// X-GitHub-Delivery id (which the signature does not cover), as an
// attacker who captured one could. It returns the new id; err says the
// delivery is unknown or the receiver could not be reached. The receiver's
// answer is in Deliveries.
func (s *Server) ReplayWebhook(ctx context.Context, deliveryID string) (newID string, err error) {
	s.mu.Lock()
	h, ok := s.hooks.sent[deliveryID]
	s.mu.Unlock()
	if !ok {
		return "", fmt.Errorf("fakegithub: no delivery %q to replay (see Deliveries)", deliveryID)
	}
	h.id = uuid.NewString()
	d := s.send(ctx, h, deliveryID)
	if d.Err != "" {
		return h.id, fmt.Errorf("fakegithub: replaying delivery %s: %s", deliveryID, d.Err)
	}
	return h.id, nil
}
