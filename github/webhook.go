package github

import (
	"container/list"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
)

// MaxWebhookBody is GitHub's cap on a webhook payload (25 MiB); a larger
// body is refused with 413.
const MaxWebhookBody = 25 << 20

// webhookDeliveries is how many delivery ids are remembered to drop
// redeliveries.
const webhookDeliveries = 10_000

// WorkflowJobEvent is the part of a workflow_job webhook the manager uses.
type WorkflowJobEvent struct {
	// Delivery is the X-GitHub-Delivery id.
	Delivery string
	// Action is queued, waiting, in_progress or completed.
	Action string
	JobID  int64
	RunID  int64
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
func (e WorkflowJobEvent) JobEvent() (JobEvent, bool) {
	ev := JobEvent{
		JobID: e.JobID, RunID: e.RunID, RunnerID: e.RunnerID, RunnerName: e.RunnerName,
		Workflow: e.WorkflowName, DisplayName: e.JobName, Labels: e.Labels, At: e.At,
	}
	switch e.Action {
	case "in_progress":
		ev.Kind = JobStarted
	case "completed":
		ev.Kind, ev.Result = JobCompleted, e.Conclusion
	default:
		return JobEvent{}, false
	}
	return ev, true
}

// NewWebhookHandler returns the receiver of GitHub webhooks: it verifies
// X-Hub-Signature-256 (HMAC-SHA256 of the raw body with secret, compared in
// constant time), answers ping, passes workflow_job events to onJob once per
// delivery (redeliveries of the last 10,000 ids are dropped) and ignores
// other events with 204. onJob runs on the request's goroutine: it should
// only record and nudge.
func NewWebhookHandler(secret []byte, onJob func(WorkflowJobEvent)) http.Handler {
	return &webhookHandler{secret: secret, onJob: onJob, seen: newDeliverySet(webhookDeliveries), now: time.Now}
}

type webhookHandler struct {
	secret []byte
	onJob  func(WorkflowJobEvent)
	seen   *deliverySet
	now    func() time.Time
}

func (h *webhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "webhooks are POSTed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxWebhookBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "payload larger than 25 MiB", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read the payload", http.StatusBadRequest)
		return
	}
	if !validSignature(h.secret, body, r.Header.Get("X-Hub-Signature-256")) {
		http.Error(w, "bad or missing X-Hub-Signature-256: check the webhook secret", http.StatusUnauthorized)
		return
	}
	event := r.Header.Get("X-GitHub-Event")
	if event == "ping" {
		_, _ = io.WriteString(w, "pong\n")
		return
	}
	if event != "workflow_job" {
		w.WriteHeader(http.StatusNoContent)
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
	if h.onJob != nil {
		h.onJob(ev)
	}
	w.WriteHeader(http.StatusOK)
}

// validSignature checks "sha256=<hex HMAC-SHA256 of body>" in constant time.
func validSignature(secret, body []byte, header string) bool {
	hexSig, ok := strings.CutPrefix(header, "sha256=")
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	return hmac.Equal(got, Sign(secret, body))
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
