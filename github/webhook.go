package github

import (
	"container/list"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// MaxWebhookBody is GitHub's cap on a webhook payload (25 MB): no limit
// set with WithWebhookMaxBody goes above it.
const MaxWebhookBody = 25 << 20

// DefaultWebhookMaxBody is the largest body read by default (1 MiB): a
// workflow_job payload is a few KiB; a larger body is refused with 413
// before more than this is read.
const DefaultWebhookMaxBody = 1 << 20

// DefaultWebhookConcurrency is how many deliveries are read and verified at
// once by default; more get 503 at once instead of a buffer each.
const DefaultWebhookConcurrency = 16

// webhookDeliveries is how many delivery ids are remembered by default to
// drop redeliveries.
const webhookDeliveries = 10_000

// WorkflowJobEvent is the part of a workflow_job webhook the manager uses.
type WorkflowJobEvent struct {
	// Delivery is the X-GitHub-Delivery id.
	Delivery string
	// Action is queued, waiting, in_progress or completed.
	Action string
	// JobID is the REST job number (the payload's workflow_job.id).
	JobID int64
	RunID int64
	// Labels are the job's runs-on labels.
	Labels []string
	// RunnerID and RunnerName are set once a runner took the job.
	RunnerID   int64
	RunnerName string
	// Conclusion of a completed job (success, failure, cancelled, ...).
	Conclusion   string
	WorkflowName string
	JobName      string
	// Repository is "owner/repo"; Organization the owner's login when an
	// organization; Enterprise the slug when the hook is an enterprise's.
	Repository   string
	Organization string
	Enterprise   string
	At           time.Time
}

// JobEvent converts the event to a JobEvent: in_progress is JobStarted,
// completed is JobCompleted; other actions give ok false.
func (e WorkflowJobEvent) JobEvent() (rm.JobEvent, bool) {
	ev := rm.JobEvent{
		JobID: restJobID(e.JobID), JobNumber: e.JobID, RunID: e.RunID, RunnerID: e.RunnerID, RunnerName: e.RunnerName,
		Workflow: e.WorkflowName, DisplayName: e.JobName, Labels: e.Labels, At: e.At,
	}
	switch e.Action {
	case "in_progress":
		ev.Kind = rm.JobStarted
	case "completed":
		ev.Kind, ev.Result = rm.JobCompleted, e.Conclusion
	default:
		return rm.JobEvent{}, false
	}
	return ev, true
}

// WebhookOption configures the webhook receiver.
type WebhookOption func(*webhookConfig)

type webhookConfig struct {
	maxBody     int64
	concurrency int
	deliveries  int
	readTimeout time.Duration
}

func newWebhookConfig(opts []WebhookOption) webhookConfig {
	c := webhookConfig{
		maxBody: DefaultWebhookMaxBody, concurrency: DefaultWebhookConcurrency,
		deliveries: webhookDeliveries, readTimeout: webhookReadTimeout,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// WithWebhookMaxBody sets the largest body read (default 1 MiB, at most
// GitHub's own cap of 25 MB); a larger one is refused with 413.
func WithWebhookMaxBody(n int64) WebhookOption {
	return func(c *webhookConfig) {
		if n > 0 {
			c.maxBody = min(n, MaxWebhookBody)
		}
	}
}

// WithWebhookConcurrency sets how many deliveries are read at once (default
// 16); the next one is answered 503 without its body being read.
func WithWebhookConcurrency(n int) WebhookOption {
	return func(c *webhookConfig) {
		if n > 0 {
			c.concurrency = n
		}
	}
}

// WithWebhookDeliveries sets how many delivery ids are remembered to drop
// GitHub's redeliveries (default 10,000): the memory this takes is bounded.
func WithWebhookDeliveries(n int) WebhookOption {
	return func(c *webhookConfig) {
		if n > 0 {
			c.deliveries = n
		}
	}
}

// NewWebhookHandler returns the receiver of GitHub webhooks. A delivery is a
// nudge to look, never demand: its signature covers the body but not the
// X-GitHub-Delivery id, so a signed body can be replayed under new ids, and
// whoever gets the nudge must count demand from what the API says.
//
// What it costs an unauthenticated sender is bounded: a request without a
// well-formed X-Hub-Signature-256 is refused (401) before its body is read;
// events other than workflow_job and ping are answered 204 unread; at most
// WithWebhookConcurrency bodies are read at once (503 beyond), each up to
// WithWebhookMaxBody (413 beyond, at once when Content-Length says so).
// The body's HMAC-SHA256 with secret is compared in constant time; ping is
// answered; a workflow_job event is passed to nudge once per delivery id
// (redeliveries of the last WithWebhookDeliveries ids are dropped). nudge
// runs on the request's goroutine: it should only nudge.
//
// Serve it with ServeWebhooks, which also bounds slow clients with read and
// write timeouts.
func NewWebhookHandler(secret []byte, nudge func(WorkflowJobEvent), opts ...WebhookOption) http.Handler {
	cfg := newWebhookConfig(opts)
	return &webhookHandler{
		secret: secret, nudge: nudge, cfg: cfg,
		slots: make(chan struct{}, cfg.concurrency),
		seen:  newDeliverySet(cfg.deliveries), now: time.Now,
	}
}

type webhookHandler struct {
	secret []byte
	nudge  func(WorkflowJobEvent)
	cfg    webhookConfig
	slots  chan struct{} // a semaphore: one token per body being read
	seen   *deliverySet
	now    func() time.Time
}

func (h *webhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	sig, ok := signatureHeader(r.Header.Get("X-Hub-Signature-256"))
	if !ok {
		refuse(w, "bad or missing X-Hub-Signature-256: check the webhook secret", http.StatusUnauthorized)
		return
	}
	event := r.Header.Get("X-GitHub-Event")
	if event != "workflow_job" && event != "ping" {
		// Not read, so not verified: nothing of it is used.
		w.Header().Set("Connection", "close")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if r.ContentLength > h.cfg.maxBody {
		refuse(w, fmt.Sprintf("payload larger than %d bytes", h.cfg.maxBody), http.StatusRequestEntityTooLarge)
		return
	}
	select {
	case h.slots <- struct{}{}:
		defer func() { <-h.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		refuse(w, "too many deliveries at once", http.StatusServiceUnavailable)
		return
	}
	body, err := readBody(w, r, h.cfg.maxBody)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			refuse(w, fmt.Sprintf("payload larger than %d bytes", h.cfg.maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		refuse(w, "cannot read the payload", http.StatusBadRequest)
		return
	}
	if !hmac.Equal(sig, Sign(h.secret, body)) {
		http.Error(w, "bad or missing X-Hub-Signature-256: check the webhook secret", http.StatusUnauthorized)
		return
	}
	if event == "ping" {
		_, _ = io.WriteString(w, "pong\n")
		return
	}
	delivery := r.Header.Get("X-GitHub-Delivery")
	var p workflowJobPayload
	if err := json.Unmarshal(body, &p); err != nil || p.WorkflowJob == nil {
		http.Error(w, "not a workflow_job payload", http.StatusBadRequest)
		return
	}
	if delivery != "" && !h.seen.add(delivery) {
		// A redelivery: already handled.
		w.WriteHeader(http.StatusOK)
		return
	}
	ev := p.event(delivery, h.now())
	if h.nudge != nil {
		h.nudge(ev)
	}
	w.WriteHeader(http.StatusOK)
}

// refuse answers an error and closes the connection, so a body left unread
// is not drained.
func refuse(w http.ResponseWriter, msg string, code int) {
	w.Header().Set("Connection", "close")
	http.Error(w, msg, code)
}

// readBody reads r's body, at most limit bytes, into a buffer sized by
// Content-Length when given (so a body costs its size), else of 64 KiB, grown
// once to limit+1 if the body needs it: a chunked body of any length costs
// little more than the limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	body := http.MaxBytesReader(w, r.Body, limit)
	if r.ContentLength >= 0 {
		buf := make([]byte, r.ContentLength)
		if _, err := io.ReadFull(body, buf); err != nil {
			return nil, err
		}
		return buf, nil
	}
	buf := make([]byte, 0, min(limit+1, 64<<10))
	for {
		if len(buf) == cap(buf) {
			if int64(cap(buf)) > limit {
				return nil, &http.MaxBytesError{Limit: limit}
			}
			buf = append(make([]byte, 0, limit+1), buf...)
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// signatureHeader decodes "sha256=<64 hex digits>", the only form GitHub
// sends.
func signatureHeader(header string) ([]byte, bool) {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok || len(hexSig) != 2*sha256.Size {
		return nil, false
	}
	sig, err := hex.DecodeString(hexSig)
	return sig, err == nil
}

// Sign is HMAC-SHA256 of body with secret: what GitHub sends, hex encoded
// after "sha256=", in X-Hub-Signature-256.
func Sign(secret, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write(body)
	return m.Sum(nil)
}

type workflowJobPayload struct {
	Action      string `json:"action"`
	WorkflowJob *struct {
		ID           int64    `json:"id"`
		RunID        int64    `json:"run_id"`
		Name         string   `json:"name"`
		WorkflowName string   `json:"workflow_name"`
		Labels       []string `json:"labels"`
		RunnerID     *int64   `json:"runner_id"`
		RunnerName   *string  `json:"runner_name"`
		Conclusion   *string  `json:"conclusion"`
	} `json:"workflow_job"`
	Repository *struct {
		FullName string `json:"full_name"`
	} `json:"repository"`
	Organization *struct {
		Login string `json:"login"`
	} `json:"organization"`
	Enterprise *struct {
		Slug string `json:"slug"`
	} `json:"enterprise"`
}

func (p workflowJobPayload) event(delivery string, at time.Time) WorkflowJobEvent {
	j := p.WorkflowJob
	ev := WorkflowJobEvent{
		Delivery: delivery, Action: p.Action, JobID: j.ID, RunID: j.RunID,
		Labels: j.Labels, WorkflowName: j.WorkflowName, JobName: j.Name, At: at,
	}
	if j.RunnerID != nil {
		ev.RunnerID = *j.RunnerID
	}
	if j.RunnerName != nil {
		ev.RunnerName = *j.RunnerName
	}
	if j.Conclusion != nil {
		ev.Conclusion = *j.Conclusion
	}
	if p.Repository != nil {
		ev.Repository = p.Repository.FullName
	}
	if p.Organization != nil {
		ev.Organization = p.Organization.Login
	}
	if p.Enterprise != nil {
		ev.Enterprise = p.Enterprise.Slug
	}
	return ev
}

// deliverySet remembers the last max delivery ids.
type deliverySet struct {
	mu    sync.Mutex
	max   int
	order *list.List
	ids   map[string]*list.Element
}

func newDeliverySet(max int) *deliverySet {
	return &deliverySet{max: max, order: list.New(), ids: map[string]*list.Element{}}
}

// add records id and reports whether it was new.
func (s *deliverySet) add(id string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ids[id]; ok {
		return false
	}
	s.ids[id] = s.order.PushBack(id)
	for s.order.Len() > s.max {
		old := s.order.Front()
		s.order.Remove(old)
		delete(s.ids, old.Value.(string))
	}
	return true
}
