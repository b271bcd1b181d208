package daemon_test

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// logBuffer collects a daemon's logs for a test to wait on.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// fleetHost is the store's record of host id.
func fleetHost(t *testing.T, st store.Store, id rm.HostID) (store.FleetHost, bool) {
	hs, err := st.(store.Fleet).FleetHosts(t.Context())
	if err != nil {
		return store.FleetHost{}, false
	}
	for _, h := range hs {
		if h.ID == id {
			return h, true
		}
	}
	return store.FleetHost{}, false
}

// A running daemon registers its host (name, memory, CPUs, OS, version)
// and stamps its heartbeat every HeartbeatEvery.
func TestRunRegistersAndHeartbeats(t *testing.T) {
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), HeartbeatEvery: 50 * time.Millisecond,
		Version: "v9.9.9-test", Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	stop := start(t, d)
	var first store.FleetHost
	require.Eventually(t, func() bool {
		h, ok := fleetHost(t, d.Store(), d.Host().ID)
		first = h
		return ok && h.Version == "v9.9.9-test"
	}, 20*time.Second, 10*time.Millisecond, "the host is registered with its version")
	assert.Equal(t, d.Host().Name, first.Name)
	assert.Equal(t, d.Host().MemoryBytes, first.MemoryBytes)
	assert.Equal(t, d.Host().CPUs, first.CPUs)
	assert.Equal(t, d.Host().OS, first.OS)
	assert.False(t, first.RegisteredAt.IsZero())
	require.Eventually(t, func() bool {
		h, _ := fleetHost(t, d.Store(), d.Host().ID)
		return h.SeenAt.After(first.SeenAt)
	}, 20*time.Second, 10*time.Millisecond, "the heartbeat moves on")
	h, _ := fleetHost(t, d.Store(), d.Host().ID)
	assert.False(t, h.Stale(time.Now(), status.StaleAfter(50*time.Millisecond)))
	assert.Equal(t, 45*time.Second, daemon.DefaultStaleAfter)
	require.NoError(t, stop())
}

// PostgreSQL restarted while runners run jobs: the daemon keeps its
// runners, logs the failed heartbeats, and once the server is back
// concludes the jobs that ended meanwhile, heartbeats and serves new jobs,
// without a restart; every job is served once and every attempt is in the
// journal.
func TestRunSurvivesPostgresRestart(t *testing.T) {
	srv := pgtest.New(t)
	u := srv.URL(srv.CreateDatabase(t))
	w := newWorld(t)
	logs := &logBuffer{}
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), StoreConfig: daemon.StoreConfig{URL: u},
		HeartbeatEvery: 100 * time.Millisecond, SampleEvery: 100 * time.Millisecond, Logger: logs.logger()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "home", false)
	p.Max = 3
	require.NoError(t, d.Store().UpdatePolicy(t.Context(), p))
	stop := start(t, d)

	w.serve(t, 2, "home", false)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 2 }, 30*time.Second, 20*time.Millisecond)

	// Three jobs long enough to outlast the outage's start.
	for i := range 3 {
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"home"}, Name: "long-" + string(rune('a'+i)),
			Duration: 1500 * time.Millisecond, MemoryBytes: 8 << 20})
	}
	require.Eventually(t, func() bool {
		n := 0
		for _, j := range w.gh.Jobs() {
			if j.Status == "in_progress" {
				n++
			}
		}
		return n == 3
	}, 30*time.Second, 10*time.Millisecond, "the three jobs run")
	require.NoError(t, srv.Stop())
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx), "the runners finish their jobs while the store is away")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "does not take this host's heartbeat") },
		30*time.Second, 10*time.Millisecond, "the failed heartbeat is logged")
	mark := len(logs.String())
	require.NoError(t, srv.Start())
	back := time.Now()

	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 5 }, 60*time.Second, 20*time.Millisecond,
		"the jobs that ended during the outage are concluded once the store is back")
	t.Logf("concluded the outage's jobs %s after the server was back", time.Since(back).Round(time.Millisecond))
	require.Eventually(t, func() bool { return strings.Contains(logs.String()[mark:], "takes this host's heartbeat again") },
		30*time.Second, 10*time.Millisecond)
	before, ok := fleetHost(t, d.Store(), d.Host().ID)
	require.True(t, ok)
	require.Eventually(t, func() bool {
		h, _ := fleetHost(t, d.Store(), d.Host().ID)
		return h.SeenAt.After(before.SeenAt)
	}, 20*time.Second, 10*time.Millisecond, "the heartbeat goes on")

	w.serve(t, 2, "home", false)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 7 }, 30*time.Second, 20*time.Millisecond,
		"new jobs are served without a restart")
	jobs := w.gh.Jobs()
	require.Len(t, jobs, 7)
	for _, j := range jobs {
		assert.Equal(t, 1, j.Starts, "job %s served once", j.Name)
	}
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	runners := map[string]bool{}
	for _, a := range as {
		if a.Outcome.Kind == rm.CompletedJob {
			runners[a.RunnerName] = true
		}
		assert.False(t, a.Live(), "attempt %s is concluded", a.ID)
	}
	for _, j := range jobs {
		assert.True(t, runners[j.RunnerName], "the journal has the attempt of job %s (runner %s)", j.Name, j.RunnerName)
	}
	require.NoError(t, stop())
	assert.Contains(t, logs.String(), "store=\"postgres "+pgtest.User+"@", "the log names the store")
	assert.NotContains(t, logs.String(), srv.Password(), "never its password")
}

// A host whose runner name prefix another host of the store shares would
// take that host's runners for its own: its daemon refuses to run.
func TestRunRefusesASharedRunnerPrefix(t *testing.T) {
	w := newWorld(t)
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	own := d.Host().ID.String()
	twin, err := rm.ParseHostID(own[:8] + rm.NewHostID().String()[8:])
	require.NoError(t, err)
	require.NotEqual(t, d.Host().ID, twin)
	require.NoError(t, d.Store().(store.Fleet).RegisterHost(t.Context(), store.FleetHost{Host: rm.Host{ID: twin, Name: "twin"}}))
	err = d.Run(t.Context())
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "share the runner name prefix")
	_, err = os.Stat(localapi.SocketPath(w.dataDir))
	assert.ErrorIs(t, err, os.ErrNotExist, "it stopped before serving")
}
