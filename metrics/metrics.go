// Package metrics owns runner-manager's Prometheus metrics
// (runner_manager_…): live figures read from the supervisor's
// status.Status at each scrape (attempts by state, each policy's
// runners, demand and admitted capacity, host memory and disk, the GitHub
// budget, admission refusals), counters of attempts created, launched and
// ended by outcome read from the journal as they happen, GitHub calls
// counted by a transport wrapper, and reconcile pass durations.
package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/actions/scaleset"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

const ns = "runner_manager"

// Metrics is the manager's collector. Register it (it is a
// prometheus.Collector) or serve Handler; feed it with Run (or Observe) and
// Transport.
type Metrics struct {
	status func() status.Status
	st     store.Store
	log    *slog.Logger

	attempts       *prometheus.Desc
	policyRunners  *prometheus.Desc
	policyMax      *prometheus.Desc
	policyMinIdle  *prometheus.Desc
	policyDemand   *prometheus.Desc
	policyAdmitted *prometheus.Desc
	policyExpected *prometheus.Desc
	policyPaused   *prometheus.Desc
	memory         *prometheus.Desc
	disk           *prometheus.Desc
	budget         *prometheus.Desc
	budgetReset    *prometheus.Desc
	refusals       *prometheus.Desc
	secondaryHold  *prometheus.Desc

	created  *prometheus.CounterVec
	launched *prometheus.CounterVec
	ended    *prometheus.CounterVec
	calls    *prometheus.CounterVec
	passes   *prometheus.HistogramVec
	jobWait  *prometheus.HistogramVec
	startup  *prometheus.HistogramVec
	// The job figures named as actions-runner-controller's listener names
	// them (cmd/ghalistener/metrics/metrics.go), per policy, with buckets
	// from 5 ms: ARC's observe whole seconds (Unix() − Unix()).
	jobStartup   *prometheus.HistogramVec
	jobExecution *prometheus.HistogramVec
	jobPhase     *prometheus.HistogramVec
	assignedJobs *prometheus.Desc
	runningJobs  *prometheus.Desc
	idleRunners  *prometheus.Desc
	busyRunners  *prometheus.Desc

	// hold tells until when GitHub's secondary rate limit holds requests
	// back (zero: it does not); nil: not known.
	hold func() time.Time

	mu      sync.Mutex
	primed  bool
	cursor  time.Time                       // CreatedAt of the newest attempt seen
	seen    map[rm.AttemptID]time.Time      // attempts seen near the cursor
	pending map[rm.AttemptID]pendingAttempt // created, not ended
	names   map[rm.PolicyID]string          // policy names, cached
}

type pendingAttempt struct {
	policy   rm.PolicyID
	launched bool
	booted   bool // its start-up was observed
}

var _ prometheus.Collector = (*Metrics)(nil)

// New returns the metrics of the supervisor whose figures snapshot gives
// and whose journal st is (st may be nil: no attempt counters). The
// attempts live at the first Observe that are counted to their end are
// those of the snapshot's Host.
func New(snapshot func() status.Status, st store.Store, logger *slog.Logger) *Metrics {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc(ns+"_"+name, help, labels, nil)
	}
	return &Metrics{
		status:         snapshot,
		st:             st,
		log:            logger,
		attempts:       d("attempts", "Live runner attempts by policy and state.", "policy", "state"),
		policyRunners:  d("policy_runners", "A policy's live runners, and of them the idle and busy ones.", "policy", "kind"),
		policyMax:      d("policy_max_runners", "A policy's maximum of runners at once.", "policy"),
		policyMinIdle:  d("policy_min_idle_runners", "A policy's idle runners kept waiting.", "policy"),
		policyDemand:   d("policy_demand", "Runners GitHub last said a policy's target wants.", "policy"),
		policyAdmitted: d("policy_admitted_runners", "Runners admission allows a policy now (the scale-set maxCapacity).", "policy"),
		policyExpected: d("policy_expected_peak_bytes", "What admission expects a new runner of the policy to peak at.", "policy"),
		policyPaused:   d("policy_paused", "1 when the policy is paused.", "policy"),
		memory:         d("host_memory_bytes", "Host memory as admission sees it: total, available, reserve, committed to runners.", "kind"),
		disk:           d("disk_bytes", "The data directory's filesystem: free, and the floor below which no runner starts.", "kind"),
		budget:         d("github_budget_requests", "GitHub's REST rate-limit budget as last seen: limit, remaining, used.", "kind"),
		budgetReset:    d("github_budget_reset_timestamp_seconds", "When GitHub's REST budget resets (unix time)."),
		refusals:       d("admission_refusals_total", "Launches admission refused, by reason (memory, disk, max), since start.", "reason"),
		secondaryHold:  d("github_secondary_limit_hold_seconds", "Seconds GitHub's secondary rate limit still holds requests back (0: it does not)."),
		created: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "attempts_created_total", Help: "Runner attempts created, by policy.",
		}, []string{"policy"}),
		launched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "launches_total", Help: "Runner processes launched, by policy.",
		}, []string{"policy"}),
		ended: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "attempts_ended_total", Help: "Runner attempts ended, by policy, outcome and failure reason.",
		}, []string{"policy", "outcome", "reason"}),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "github_requests_total", Help: "Requests sent to GitHub, by API (rest; actions: the scale-set service; message_queue: its long polls) and status code (0: no answer).",
		}, []string{"api", "code"}),
		passes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "reconcile_pass_duration_seconds", Help: "Duration of reconcile passes, by target and result.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}, []string{"target", "result"}),
		jobWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "job_wait_seconds", Help: "How long jobs waited from GitHub's queue until a runner of the policy started them.",
			Buckets: []float64{.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600},
		}, []string{"policy"}),
		startup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "runner_startup_seconds", Help: "Runner start-up: from its process's launch until GitHub saw it online (or it took a job), by policy.",
			Buckets: []float64{.5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 60, 120},
		}, []string{"policy"}),
		jobStartup: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "job_startup_duration_seconds",
			Help:    "From GitHub's assignment of a job to the scale set (classic mode: its queueing) until a runner of the policy took it.",
			Buckets: startBuckets,
		}, []string{"policy"}),
		jobExecution: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "job_execution_duration_seconds",
			Help:    "From GitHub's assignment of a job to a runner of the policy until its finish, by result (GitHub's times).",
			Buckets: executionBuckets,
		}, []string{"policy", "job_result"}),
		jobPhase: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: ns, Name: "job_start_phase_seconds",
			Help:    "A job's start split: assign (GitHub: queued to assigned), ready (the manager: assigned to the runner listening), take (the runner: listening to taking the job).",
			Buckets: startBuckets,
		}, []string{"policy", "phase"}),
		assignedJobs: d("assigned_jobs", "Jobs GitHub assigned to the policy's target, waiting or running (scale-set mode: statistics.totalAssignedJobs).", "policy"),
		runningJobs:  d("running_jobs", "Jobs the policy's runners on this host are running.", "policy"),
		idleRunners:  d("idle_runners", "The policy's runners listening with no job.", "policy"),
		busyRunners:  d("busy_runners", "The policy's runners running a job.", "policy"),
		seen:         map[rm.AttemptID]time.Time{},
		pending:      map[rm.AttemptID]pendingAttempt{},
		names:        map[rm.PolicyID]string{},
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{m.attempts, m.policyRunners, m.policyMax, m.policyMinIdle, m.policyDemand,
		m.policyAdmitted, m.policyExpected, m.policyPaused, m.memory, m.disk, m.budget, m.budgetReset, m.refusals, m.secondaryHold,
		m.assignedJobs, m.runningJobs, m.idleRunners, m.busyRunners} {
		ch <- d
	}
	m.jobWait.Describe(ch)
	m.startup.Describe(ch)
	m.jobStartup.Describe(ch)
	m.jobExecution.Describe(ch)
	m.jobPhase.Describe(ch)
	m.created.Describe(ch)
	m.launched.Describe(ch)
	m.ended.Describe(ch)
	m.calls.Describe(ch)
	m.passes.Describe(ch)
}

// Collect implements prometheus.Collector: the live figures of one Status,
// and the counters.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	st := m.status()
	g := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	names := map[rm.PolicyID]string{}
	for _, p := range st.Policies {
		names[p.ID] = p.Name
		g(m.policyRunners, float64(p.Live), p.Name, "live")
		g(m.policyRunners, float64(p.Idle), p.Name, "idle")
		g(m.policyRunners, float64(p.Busy), p.Name, "busy")
		g(m.policyMax, float64(p.Max), p.Name)
		g(m.policyMinIdle, float64(p.MinIdle), p.Name)
		g(m.policyDemand, float64(p.Demand), p.Name)
		g(m.policyAdmitted, float64(p.Admitted), p.Name)
		g(m.policyExpected, float64(p.ExpectedPeakBytes), p.Name)
		g(m.policyPaused, b2f(p.Paused), p.Name)
		g(m.assignedJobs, float64(p.Demand), p.Name)
		g(m.runningJobs, float64(p.Busy), p.Name)
		g(m.idleRunners, float64(p.Idle), p.Name)
		g(m.busyRunners, float64(p.Busy), p.Name)
	}
	m.mu.Lock()
	for id, n := range names {
		m.names[id] = n
	}
	m.mu.Unlock()
	byState := map[[2]string]int{}
	for _, p := range st.Policies {
		for _, s := range rm.AttemptStates[:5] { // the live states, reported even at 0
			byState[[2]string{p.Name, string(s)}] += 0
		}
	}
	for _, a := range st.Attempts {
		if a.State.Live() {
			byState[[2]string{names[a.Policy], string(a.State)}]++
		}
	}
	for k, n := range byState {
		g(m.attempts, float64(n), k[0], k[1])
	}
	mem := st.Memory
	g(m.memory, float64(mem.TotalBytes), "total")
	g(m.memory, float64(mem.AvailableBytes), "available")
	g(m.memory, float64(mem.ReserveBytes), "reserve")
	g(m.memory, float64(mem.CommittedBytes), "committed")
	g(m.disk, float64(mem.DiskFreeBytes), "free")
	g(m.disk, float64(mem.DiskFloorBytes), "floor")
	if b := st.Budget; !b.SeenAt.IsZero() || b.Limit > 0 {
		g(m.budget, float64(b.Limit), "limit")
		g(m.budget, float64(b.Remaining), "remaining")
		g(m.budget, float64(b.Used), "used")
		g(m.budgetReset, float64(b.Reset.Unix()))
	}
	for _, reason := range []string{status.RefusedMemory, status.RefusedDisk, status.RefusedMax} {
		ch <- prometheus.MustNewConstMetric(m.refusals, prometheus.CounterValue, float64(st.Refusals[reason]), reason)
	}
	for reason, n := range st.Refusals {
		switch reason {
		case status.RefusedMemory, status.RefusedDisk, status.RefusedMax:
		default:
			ch <- prometheus.MustNewConstMetric(m.refusals, prometheus.CounterValue, float64(n), reason)
		}
	}
	m.created.Collect(ch)
	m.launched.Collect(ch)
	m.ended.Collect(ch)
	m.calls.Collect(ch)
	m.passes.Collect(ch)
	m.jobWait.Collect(ch)
	m.startup.Collect(ch)
	m.jobStartup.Collect(ch)
	m.jobExecution.Collect(ch)
	m.jobPhase.Collect(ch)
	m.mu.Lock()
	hold := m.hold
	m.mu.Unlock()
	if hold != nil {
		g(m.secondaryHold, max(0, time.Until(hold()).Seconds()))
	}
}

// SetSecondaryHold gives the metrics what tells until when GitHub's
// secondary rate limit holds requests back (github.Client.SecondaryHold),
// for the runner_manager_github_secondary_limit_hold_seconds gauge.
func (m *Metrics) SetSecondaryHold(until func() time.Time) {
	m.mu.Lock()
	m.hold = until
	m.mu.Unlock()
}

// The buckets of the job histograms: from 5 ms, where a warm spare takes
// a job, to an hour.
var (
	startBuckets     = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2, 3, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300, 600, 1800, 3600}
	executionBuckets = []float64{.05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400, 21600, 43200}
)

// ObserveJobStart records how a job of the policy started
// (reconcile.Config.OnJobStarted): its whole wait, its startup as ARC
// names it, and each part.
func (m *Metrics) ObserveJobStart(policy string, s rm.StartSplit) {
	m.jobWait.WithLabelValues(policy).Observe(s.Total().Seconds())
	m.jobStartup.WithLabelValues(policy).Observe(s.Startup().Seconds())
	m.jobPhase.WithLabelValues(policy, "assign").Observe(s.Assign.Seconds())
	m.jobPhase.WithLabelValues(policy, "ready").Observe(s.Ready.Seconds())
	m.jobPhase.WithLabelValues(policy, "take").Observe(s.Take.Seconds())
}

// ObserveJobEnd records how long a job of the policy ran and its result
// (reconcile.Config.OnJobEnded).
func (m *Metrics) ObserveJobEnd(policy, result string, ran time.Duration) {
	m.jobExecution.WithLabelValues(policy, result).Observe(ran.Seconds())
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// overlap is how far before the newest attempt seen Observe looks again,
// for rows written out of CreatedAt order.
const overlap = 5 * time.Second

// Observe reads the journal for what happened since the last call: attempts
// created (and launched, and ended) since then, and the end of the attempts
// it knew live. The first call only takes note of where the journal is:
// counters count from the manager's start.
func (m *Metrics) Observe(ctx context.Context) error {
	if m.st == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.primed {
		m.cursor = time.Now()
		m.primed = true
		// The host's attempts live at start are watched to their end.
		live, err := m.st.LiveAttempts(ctx, m.status().Host.ID)
		if err != nil {
			m.primed = false
			return fmt.Errorf("metrics: read live attempts: %w", err)
		}
		recent, err := m.st.Attempts(ctx, store.AttemptFilter{Since: m.cursor.Add(-overlap)})
		if err != nil {
			m.primed = false
			return fmt.Errorf("metrics: read recent attempts: %w", err)
		}
		for _, a := range recent {
			m.seen[a.ID] = a.CreatedAt
		}
		for _, a := range live {
			m.pending[a.ID] = pendingAttempt{policy: a.Policy, launched: !a.StartedAt.IsZero(), booted: !a.IdleAt.IsZero() || !a.BusyAt.IsZero()}
			m.seen[a.ID] = a.CreatedAt
		}
		return nil
	}
	news, err := m.st.Attempts(ctx, store.AttemptFilter{Since: m.cursor.Add(-overlap)})
	if err != nil {
		return fmt.Errorf("metrics: read new attempts: %w", err)
	}
	for i := len(news) - 1; i >= 0; i-- { // oldest first
		a := news[i]
		if _, ok := m.seen[a.ID]; ok {
			continue
		}
		m.seen[a.ID] = a.CreatedAt
		if a.CreatedAt.After(m.cursor) {
			m.cursor = a.CreatedAt
		}
		name := m.policyName(ctx, a.Policy)
		m.created.WithLabelValues(name).Inc()
		m.pending[a.ID] = pendingAttempt{policy: a.Policy}
		m.update(ctx, a)
	}
	for id := range m.pending {
		a, err := m.st.Attempt(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			delete(m.pending, id) // its policy was removed
			continue
		}
		if err != nil {
			return fmt.Errorf("metrics: read attempt %s: %w", id, err)
		}
		m.update(ctx, a)
	}
	for id, at := range m.seen {
		if at.Before(m.cursor.Add(-2 * overlap)) {
			delete(m.seen, id)
		}
	}
	return nil
}

// update counts what changed of a pending attempt: its launch, its end.
func (m *Metrics) update(ctx context.Context, a rm.Attempt) {
	p, ok := m.pending[a.ID]
	if !ok {
		return
	}
	name := m.policyName(ctx, a.Policy)
	if !p.launched && !a.StartedAt.IsZero() {
		p.launched = true
		m.launched.WithLabelValues(name).Inc()
	}
	if !p.booted && !a.StartedAt.IsZero() {
		// Start-up ends when GitHub first saw it online or busy.
		first := a.IdleAt
		if first.IsZero() || (!a.BusyAt.IsZero() && a.BusyAt.Before(first)) {
			first = a.BusyAt
		}
		if !first.IsZero() {
			p.booted = true
			m.startup.WithLabelValues(name).Observe(max(0, first.Sub(a.StartedAt)).Seconds())
		}
	}
	m.pending[a.ID] = p
	if a.Live() {
		return
	}
	m.ended.WithLabelValues(name, string(a.Outcome.Kind), string(a.Outcome.Reason)).Inc()
	delete(m.pending, a.ID)
}

func (m *Metrics) policyName(ctx context.Context, id rm.PolicyID) string {
	if n, ok := m.names[id]; ok {
		return n
	}
	p, err := m.st.Policy(ctx, id)
	if err != nil {
		return id.String()
	}
	m.names[id] = p.Name
	return p.Name
}

// Run observes the journal every interval until ctx ends.
func (m *Metrics) Run(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if err := m.Observe(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("metrics: journal not read", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ObservePass records one reconcile pass of target.
func (m *Metrics) ObservePass(target string, took time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.passes.WithLabelValues(target, result).Observe(took.Seconds())
}

// Transport counts the requests next sends to GitHub: wrap the transport
// of the GitHub client with it.
func (m *Metrics) Transport(next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		api := apiOf(r)
		resp, err := next.RoundTrip(r)
		code := "0"
		if err == nil {
			code = strconv.Itoa(resp.StatusCode)
		}
		m.calls.WithLabelValues(api, code).Inc()
		return resp, err
	})
}

// apiOf is the api label of a request to GitHub: "message_queue" for a
// scale set's message long polls (they cost no REST budget), "actions" for
// the rest of the Actions service ("/_apis/"), "rest" for the REST API.
// A long poll is known by its X-ScaleSetMaxCapacity header, which GitHub's
// client sets on the message poll and on nothing else (actions/scaleset
// v0.4.0 session_client.go:142, client.go:40): its URL is whatever the
// session's messageQueueUrl says, so its path tells nothing.
func apiOf(r *http.Request) string {
	switch {
	case r.Header.Get(scaleset.HeaderScaleSetMaxCapacity) != "":
		return "message_queue"
	case strings.Contains(r.URL.Path, "/_apis/"):
		return "actions"
	}
	return "rest"
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Handler serves these metrics, with the Go runtime's and the process's,
// in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, buildInfo(), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(m.log.Handler(), slog.LevelWarn)})
}

// Serve serves Handler at /metrics on addr until ctx ends. It returns once
// listening failed or the server stopped.
func (m *Metrics) Serve(ctx context.Context, addr string) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("serve metrics on %s: %w", addr, err)
	}
	return m.ServeListener(ctx, l)
}

// ServeListener serves Handler at /metrics on l until ctx ends.
func (m *Metrics) ServeListener(ctx context.Context, l net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
