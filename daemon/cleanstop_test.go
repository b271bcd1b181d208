package daemon_test

import (
	"bytes"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/attempts"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/store"
)

// lockedBuffer is a log sink safe for the daemon's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// histogramCount is the sample count of the policy's series of the
// histogram name in reg.
func histogramCount(t *testing.T, reg *prometheus.Registry, name, policy string) uint64 {
	mfs, err := reg.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "policy" && l.GetValue() == policy {
					return s.GetHistogram().GetSampleCount()
				}
			}
		}
	}
	return 0
}

// A clean stop (the context ends, nothing failed) logs no ERROR: a
// request or a long poll cut short by the stop is the stop, not a failure.
// And the completed attempts' logs are there to read after it, and the
// metrics tell the jobs' waits and the runners' start-ups.
func TestCleanStopLogsNoError(t *testing.T) {
	w := newWorld(t)
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), MetricsAddr: "127.0.0.1:0",
		MetricsRegistry: reg, SampleEvery: 100 * time.Millisecond, Logger: log})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "home", false)
	c := w.addPolicy(t, d, "classic", true)
	stop := start(t, d)
	client := localapi.NewClient(w.dataDir)
	require.Eventually(t, func() bool { _, err := client.Status(t.Context()); return err == nil },
		20*time.Second, 20*time.Millisecond, "the daemon answers on its socket")
	w.serve(t, 2, "home", false)
	w.serve(t, 1, "classic", true)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 2 && ended(t, d.Store(), c) == 1 },
		20*time.Second, 50*time.Millisecond)
	// The waits GitHub's queue times tell, and the runners' start-ups.
	require.Eventually(t, func() bool {
		return histogramCount(t, reg, "runner_manager_job_wait_seconds", "home") == 2 &&
			histogramCount(t, reg, "runner_manager_runner_startup_seconds", "home") >= 2
	}, 20*time.Second, 50*time.Millisecond)
	// A long poll is open: the stop cuts it.
	require.Eventually(t, func() bool {
		for _, se := range w.gh.Sessions() {
			if se.Polling > 0 {
				return true
			}
		}
		return false
	}, 20*time.Second, 20*time.Millisecond)
	require.NoError(t, stop())

	// Each completed attempt's runner log outlives its work directory.
	as, err := d.Store().Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	require.NotEmpty(t, as)
	for _, a := range as {
		require.False(t, a.Live())
		var out bytes.Buffer
		require.NoError(t, attempts.CopyLog(t.Context(), d.Store(), w.dataDir, a, &out, attempts.LogOptions{}), "attempt %s", a.ID)
		assert.NotEmpty(t, out.String())
		assert.NoDirExists(t, filepath.Join(w.dataDir, "attempts", a.ID.String()), "its work directory is removed")
	}

	var errs []string
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "level=ERROR") {
			errs = append(errs, line)
		}
	}
	assert.Empty(t, errs, "a clean stop logs no ERROR")
	assert.Contains(t, logs.String(), "level=INFO", "the logger was the daemon's")
}
