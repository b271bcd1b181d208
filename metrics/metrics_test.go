package metrics_test

import (
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime/debug"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/metrics"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// scrape fetches /metrics over loopback and returns its sample lines.
func scrape(t *testing.T, m *metrics.Metrics) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.ServeListener(ctx, l) }()
	defer func() { cancel(); require.NoError(t, <-done) }()
	resp, err := http.Get("http://" + l.Addr().String() + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	// Keep failures readable: the manager's samples only, and the proof
	// that the runtime's are served.
	var lines []string
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "runner_manager_") || strings.HasPrefix(l, "go_goroutines ") {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

func TestLiveFigures(t *testing.T) {
	pid := rm.NewPolicyID()
	st := status.Status{
		Memory: status.Memory{TotalBytes: 16 << 30, AvailableBytes: 9 << 30, ReserveBytes: 2 << 30,
			CommittedBytes: 3 << 30, DiskFreeBytes: 50 << 30, DiskFloorBytes: 10 << 30},
		Policies: []status.Policy{{ID: pid, Name: "home", Live: 3, Idle: 1, Busy: 2, Max: 4, MinIdle: 1,
			Demand: 5, Admitted: 3, ExpectedPeakBytes: 1 << 30, Paused: true}},
		Attempts: []status.Attempt{
			{ID: rm.NewAttemptID(), Policy: pid, State: rm.StateBusy},
			{ID: rm.NewAttemptID(), Policy: pid, State: rm.StateBusy},
			{ID: rm.NewAttemptID(), Policy: pid, State: rm.StateIdle},
		},
		Budget:   rm.Budget{Limit: 5000, Remaining: 4900, Used: 100, Reset: time.Unix(1700000000, 0), SeenAt: time.Now()},
		Refusals: map[string]int{"memory": 7},
	}
	m := metrics.New(func() status.Status { return st }, nil, nil)
	m.ObservePass("repo:o/r", 12*time.Millisecond, nil)
	out := scrape(t, m)
	for _, want := range []string{
		`runner_manager_attempts{policy="home",state="busy"} 2`,
		`runner_manager_attempts{policy="home",state="idle"} 1`,
		`runner_manager_attempts{policy="home",state="starting"} 0`,
		`runner_manager_policy_runners{kind="live",policy="home"} 3`,
		`runner_manager_policy_runners{kind="busy",policy="home"} 2`,
		`runner_manager_policy_max_runners{policy="home"} 4`,
		`runner_manager_policy_min_idle_runners{policy="home"} 1`,
		`runner_manager_policy_demand{policy="home"} 5`,
		`runner_manager_policy_admitted_runners{policy="home"} 3`,
		`runner_manager_policy_expected_peak_bytes{policy="home"} 1.073741824e+09`,
		`runner_manager_policy_paused{policy="home"} 1`,
		`runner_manager_host_memory_bytes{kind="total"} 1.7179869184e+10`,
		`runner_manager_host_memory_bytes{kind="committed"} 3.221225472e+09`,
		`runner_manager_disk_bytes{kind="floor"} 1.073741824e+10`,
		`runner_manager_github_budget_requests{kind="remaining"} 4900`,
		`runner_manager_github_budget_reset_timestamp_seconds 1.7e+09`,
		`runner_manager_admission_refusals_total{reason="memory"} 7`,
		`runner_manager_admission_refusals_total{reason="disk"} 0`,
		`runner_manager_reconcile_pass_duration_seconds_count{result="ok",target="repo:o/r"} 1`,
		`go_goroutines`,
	} {
		assert.Contains(t, out, want)
	}
}

func TestJournalCounters(t *testing.T) {
	ctx := context.Background()
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(ctx, host))
	pol := storetest.NewPolicy().Name("home").Repository("acme/repo").Host(host.ID).Autoscale("home", 4).Active().Build()
	require.NoError(t, st.InsertPolicy(ctx, pol))
	// An attempt of before the manager's start is not counted as created,
	// but its end is.
	old := storetest.NewAttempt().Policy(pol.ID).Host(host.ID).State(rm.StateBusy).Build()
	require.NoError(t, st.RecordAttempt(ctx, old))
	history := storetest.NewAttempt().Policy(pol.ID).Host(host.ID).State(rm.StateFinished).Build()
	require.NoError(t, st.RecordAttempt(ctx, history))

	m := metrics.New(func() status.Status { return status.Status{Host: host} }, st, nil)
	require.NoError(t, m.Observe(ctx)) // primes
	out := scrape(t, m)
	assert.NotContains(t, out, "runner_manager_attempts_created_total{")

	now := time.Now().UTC()
	a := storetest.NewAttempt().Policy(pol.ID).Host(host.ID).State(rm.StatePending).CreatedAt(now).Build()
	require.NoError(t, st.RecordAttempt(ctx, a))
	// One created and ended between two looks.
	quick := rm.Attempt{ID: rm.NewAttemptID(), Policy: pol.ID, State: rm.StateFailed, RunnerName: "rm-quick",
		CreatedAt: now, EndedAt: now, UpdatedAt: now, Outcome: rm.FailedWith(rm.LaunchFailed, "no runner")}
	require.NoError(t, st.RecordAttempt(ctx, quick))
	require.NoError(t, m.Observe(ctx))
	out = scrape(t, m)
	assert.Contains(t, out, `runner_manager_attempts_created_total{policy="home"} 2`)
	assert.Contains(t, out, `runner_manager_attempts_ended_total{outcome="failed",policy="home",reason="launch_failed"} 1`)
	assert.NotContains(t, out, `runner_manager_launches_total{policy="home"}`)

	for _, s := range []rm.AttemptState{rm.StateRegistering, rm.StateStarting, rm.StateBusy} {
		var err error
		a, err = a.MoveTo(s, time.Now())
		require.NoError(t, err)
		require.NoError(t, st.RecordAttempt(ctx, a))
	}
	require.NoError(t, m.Observe(ctx))
	require.NoError(t, m.Observe(ctx)) // counted once
	out = scrape(t, m)
	assert.Contains(t, out, `runner_manager_launches_total{policy="home"} 1`)
	assert.Contains(t, out, `runner_manager_attempts_created_total{policy="home"} 2`)

	for _, x := range []rm.Attempt{a, old} {
		ended, err := x.Conclude(rm.Outcome{Kind: rm.CompletedJob}, time.Now())
		require.NoError(t, err)
		require.NoError(t, st.RecordAttempt(ctx, ended))
	}
	require.NoError(t, m.Observe(ctx))
	out = scrape(t, m)
	assert.Contains(t, out, `runner_manager_attempts_ended_total{outcome="completed_job",policy="home",reason=""} 2`)
	assert.Contains(t, out, `runner_manager_attempts_created_total{policy="home"} 2`)
}

func TestTransportCountsCalls(t *testing.T) {
	gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/missing") {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer gh.Close()
	m := metrics.New(func() status.Status { return status.Status{} }, nil, nil)
	c := &http.Client{Transport: m.Transport(gh.Client().Transport)}
	var wg sync.WaitGroup
	for _, p := range []string{"/repos/o/r/actions/runners", "/missing", "/_apis/runtime/runnerscalesets", "/repos/o/r",
		"poll:/_apis/runtime/runnerscalesets/1/sessions/s/messages", "poll:/queue/7f3a?sessionId=s"} {
		wg.Go(func() {
			// A message poll carries GitHub's client's capacity header,
			// wherever the session's queue URL points.
			path, poll := strings.CutPrefix(p, "poll:")
			req, err := http.NewRequest(http.MethodGet, gh.URL+path, nil)
			require.NoError(t, err)
			if poll {
				req.Header.Set(scaleset.HeaderScaleSetMaxCapacity, "2")
			}
			resp, err := c.Do(req)
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	gh.Close()
	_, err := c.Get(gh.URL + "/closed")
	require.Error(t, err)
	out := scrape(t, m)
	assert.Contains(t, out, `runner_manager_github_requests_total{api="rest",code="200"} 2`)
	assert.Contains(t, out, `runner_manager_github_requests_total{api="rest",code="404"} 1`)
	assert.Contains(t, out, `runner_manager_github_requests_total{api="actions",code="200"} 1`)
	assert.Contains(t, out, `runner_manager_github_requests_total{api="rest",code="0"} 1`)
	assert.Contains(t, out, `runner_manager_github_requests_total{api="message_queue",code="200"} 2`, "long polls are counted apart")
}

func TestBuildInfo(t *testing.T) {
	m := metrics.New(func() status.Status { return status.Status{} }, nil, nil)
	out := scrape(t, m)
	bi, ok := debug.ReadBuildInfo()
	require.True(t, ok)
	assert.Contains(t, out, `runner_manager_build_info{commit="`)
	assert.Contains(t, out, `version="`+cmp.Or(bi.Main.Version, "unknown")+`"} 1`)
}

// TestJobAndRunnerGauges: the four gauges named as ARC's listener names
// them carry each policy's own figures, as the status has them at each
// scrape: assigned jobs (GitHub's totalAssignedJobs, the demand), the jobs
// its runners run, its idle and its busy runners. A policy gone from the
// status is gone from them.
func TestJobAndRunnerGauges(t *testing.T) {
	home, ci := rm.NewPolicyID(), rm.NewPolicyID()
	st := status.Status{Policies: []status.Policy{
		{ID: home, Name: "home", Live: 9, Idle: 3, Busy: 4, Demand: 7, Max: 4},
		{ID: ci, Name: "ci", Live: 2, Idle: 2, Busy: 0, Demand: 0, Max: 2},
	}}
	var mu sync.Mutex
	m := metrics.New(func() status.Status { mu.Lock(); defer mu.Unlock(); return st }, nil, nil)
	values := func() map[string]string {
		out := map[string]string{}
		for _, l := range strings.Split(scrape(t, m), "\n") {
			for _, g := range []string{"assigned_jobs", "running_jobs", "idle_runners", "busy_runners"} {
				if strings.HasPrefix(l, "runner_manager_"+g+"{") {
					name, v, _ := strings.Cut(l, " ")
					out[name] = v
				}
			}
		}
		return out
	}
	assert.Equal(t, map[string]string{
		`runner_manager_assigned_jobs{policy="home"}`: "7",
		`runner_manager_running_jobs{policy="home"}`:  "4",
		`runner_manager_idle_runners{policy="home"}`:  "3",
		`runner_manager_busy_runners{policy="home"}`:  "4",
		`runner_manager_assigned_jobs{policy="ci"}`:   "0",
		`runner_manager_running_jobs{policy="ci"}`:    "0",
		`runner_manager_idle_runners{policy="ci"}`:    "2",
		`runner_manager_busy_runners{policy="ci"}`:    "0",
	}, values())

	// The next scrape reads the status again: a job ended on home, two
	// were assigned to ci and taken by its idle runners; home went away.
	mu.Lock()
	st.Policies = []status.Policy{{ID: ci, Name: "ci", Live: 2, Idle: 0, Busy: 2, Demand: 2, Max: 2}}
	mu.Unlock()
	assert.Equal(t, map[string]string{
		`runner_manager_assigned_jobs{policy="ci"}`: "2",
		`runner_manager_running_jobs{policy="ci"}`:  "2",
		`runner_manager_idle_runners{policy="ci"}`:  "0",
		`runner_manager_busy_runners{policy="ci"}`:  "2",
	}, values())
}
