package app_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// seed adds two policies and attempts of each state to the env's journal.
func seed(t *testing.T, e *env) (home, gpu rm.Policy, list []rm.Attempt) {
	t.Helper()
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "4")
	e.ok("policy", "add", "gpu", "--repo", "octo/app", "--labels", "gpu", "--max", "1")
	st := e.journal()
	var err error
	home, err = st.PolicyByName(t.Context(), "home")
	require.NoError(t, err)
	gpu, err = st.PolicyByName(t.Context(), "gpu")
	require.NoError(t, err)
	now := storetest.Now()
	add := func(p rm.Policy, state rm.AttemptState, age time.Duration, o rm.Outcome) rm.Attempt {
		b := storetest.NewAttempt().Policy(p.ID).Host(p.Host).State(state).CreatedAt(now.Add(-age))
		if !o.IsZero() {
			b = b.Outcome(o).ExitCode(0).Usage(rm.AttemptUsage{PeakRSSBytes: 300 << 20, CPUAvgMillicores: 900, CPUPeakMillicores: 1900, Samples: 12})
		}
		if state == rm.StateBusy || o.Kind == rm.CompletedJob {
			b = b.Job(rm.Job{ID: scaleSetJobID, RunID: 7, Workflow: "ci.yml", Name: "build"})
		}
		a := b.Build()
		require.NoError(t, st.RecordAttempt(t.Context(), a))
		return a
	}
	list = []rm.Attempt{
		add(home, rm.StateFinished, 48*time.Hour, rm.Outcome{Kind: rm.CompletedJob}),
		add(home, rm.StateFailed, 3*time.Hour, rm.FailedWith(rm.LaunchFailed, "runner dir missing")),
		add(home, rm.StateBusy, 2*time.Minute, rm.Outcome{}),
		add(gpu, rm.StateIdle, time.Minute, rm.Outcome{}),
	}
	return home, gpu, list
}

func TestAttempts(t *testing.T) {
	e := newEnv(t)
	_, _, list := seed(t, e)

	ids := func(args ...string) []string {
		t.Helper()
		var out []map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.ok(append([]string{"attempts", "--json"}, args...)...)), &out))
		var got []string
		for _, a := range out {
			got = append(got, a["id"].(string))
		}
		return got
	}
	s := func(as ...rm.Attempt) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.ID.String())
		}
		return out
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"all newest first", nil, s(list[3], list[2], list[1], list[0])},
		{"policy", []string{"--policy", "gpu"}, s(list[3])},
		{"state", []string{"--state", "failed,finished"}, s(list[1], list[0])},
		{"live", []string{"--state", "live"}, s(list[3], list[2])},
		{"since", []string{"--since", "1d"}, s(list[3], list[2], list[1])},
		{"since duration", []string{"--since", "30m"}, s(list[3], list[2])},
		{"limit", []string{"--limit", "1"}, s(list[3])},
		{"combined", []string{"--policy", "home", "--since", "4h", "--limit", "1"}, s(list[2])},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, ids(tt.args...))
		})
	}

	t.Run("json fields", func(t *testing.T) {
		var out []map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.ok("attempts", "--json", "--state", "finished")), &out))
		require.Len(t, out, 1)
		a := out[0]
		assert.Equal(t, "home", a["policy_name"])
		assert.Equal(t, "finished", a["state"])
		assert.Equal(t, "completed_job", a["outcome"].(map[string]any)["kind"])
		assert.Equal(t, float64(300<<20), a["usage"].(map[string]any)["peak_rss_bytes"])
		assert.Equal(t, "build", a["job"].(map[string]any)["name"])
		assert.Equal(t, scaleSetJobID, a["job"].(map[string]any)["id"], "a scale-set jobId, as the string it is")
		assert.Nil(t, a["job"].(map[string]any)["number"], "no REST number known")
		assert.Contains(t, a["times"], "finished")
	})

	t.Run("table", func(t *testing.T) {
		out := e.ok("attempts")
		assert.Contains(t, out, "failed(launch_failed)")
		assert.Contains(t, out, "300MiB")
		assert.Contains(t, out, list[0].ID.String())
	})

	t.Run("bad filters", func(t *testing.T) {
		assert.Contains(t, e.fails(app.ExitInvalid, "attempts", "--state", "sleeping"), "pending")
		assert.Contains(t, e.fails(app.ExitInvalid, "attempts", "--since", "yesterday"), "duration")
		assert.Contains(t, e.fails(app.ExitNotFound, "attempts", "--policy", "nope"), "policy list")
	})
}

func TestAttemptShow(t *testing.T) {
	e := newEnv(t)
	_, _, list := seed(t, e)
	out := e.ok("attempt", "show", list[1].ID.String())
	assert.Contains(t, out, "failed(launch_failed): runner dir missing")
	assert.Contains(t, out, "policy:")
	assert.Contains(t, out, "home")
	out = e.ok("attempt", "show", list[0].ID.String())
	assert.Contains(t, out, "peak RSS 300MiB, CPU average 0.90 cores, busiest 1.90 cores, 12 samples", "CPU in cores, as everywhere")

	var j map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("attempt", "show", "--json", list[0].ID.String())), &j))
	assert.Equal(t, list[0].ID.String(), j["id"])

	assert.Contains(t, e.fails(app.ExitNotFound, "attempt", "show", "zzz"), "attempt id")
	assert.Contains(t, e.fails(app.ExitNotFound, "attempt", "show", rm.NewAttemptID().String()), "no attempt")
}

// scaleSetJobID is a scale-set job's jobId, a UUID as on github.com.
const scaleSetJobID = "0f8fad5b-d9cb-469f-a165-70867728950e"

// An attempt's job shows both ids: a scale-set job its jobId with no REST
// number, a classic job its REST number as id and number.
func TestAttemptJobIDs(t *testing.T) {
	e := newEnv(t)
	home, gpu, _ := seed(t, e)
	st := e.journal()
	classic := storetest.NewAttempt().Policy(gpu.ID).Host(gpu.Host).State(rm.StateBusy).
		Job(rm.Job{ID: "29679449", Number: 29679449, RunID: 5, Workflow: "ci.yml", Name: "lint"}).Build()
	both := storetest.NewAttempt().Policy(home.ID).Host(home.Host).State(rm.StateBusy).
		Job(rm.Job{ID: scaleSetJobID, Number: 31, RunID: 6, Name: "test"}).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), classic))
	require.NoError(t, st.RecordAttempt(t.Context(), both))

	for _, tt := range []struct {
		name       string
		a          rm.Attempt
		id         string
		number     any
		text, none string
	}{
		{"Classic", classic, "29679449", float64(29679449), "29679449 lint (workflow ci.yml, run 5)", "REST job"},
		{"ScaleSetWithNumber", both, scaleSetJobID, float64(31), scaleSetJobID + " test (workflow , run 6) (REST job 31)", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var j map[string]any
			require.NoError(t, json.Unmarshal([]byte(e.ok("attempt", "show", "--json", tt.a.ID.String())), &j))
			job := j["job"].(map[string]any)
			assert.Equal(t, tt.id, job["id"])
			assert.Equal(t, tt.number, job["number"])
			out := e.ok("attempt", "show", tt.a.ID.String())
			assert.Contains(t, out, tt.text)
			if tt.none != "" {
				assert.NotContains(t, out, tt.none)
			}
		})
	}
}

func TestAttemptsNoJournal(t *testing.T) {
	e := newEnv(t).noDataDir()
	stderr := e.fails(app.ExitLocalState, "attempts")
	assert.Contains(t, stderr, "no journal")
	_, err := os.Stat(e.dataDir)
	assert.ErrorIs(t, err, os.ErrNotExist, "reading creates nothing")
}

func TestLogs(t *testing.T) {
	e := newEnv(t)
	_, _, list := seed(t, e)
	busy := list[2]
	logPath := filepath.Join(e.dataDir, "attempts", busy.ID.String(), "runner.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(logPath), 0o700))
	var lines []string
	for i := 1; i <= 30; i++ {
		lines = append(lines, fmt.Sprintf("line %d", i))
	}
	require.NoError(t, os.WriteFile(logPath, []byte(strings.Join(lines, "\n")+"\n"), 0o600))

	t.Run("all", func(t *testing.T) {
		assert.Equal(t, strings.Join(lines, "\n")+"\n", e.ok("logs", busy.ID.String()))
	})
	t.Run("last lines", func(t *testing.T) {
		assert.Equal(t, "line 28\nline 29\nline 30\n", e.ok("logs", "-n", "3", busy.ID.String()))
	})
	t.Run("kept failed", func(t *testing.T) {
		failed := list[1]
		kept := filepath.Join(e.dataDir, "attempts", ".failed", failed.ID.String(), "runner.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o700))
		require.NoError(t, os.WriteFile(kept, []byte("why it failed\n"), 0o600))
		assert.Equal(t, "why it failed\n", e.ok("logs", failed.ID.String()))
	})
	t.Run("gone", func(t *testing.T) {
		assert.Contains(t, e.fails(1, "logs", list[0].ID.String()), "gone")
	})
	t.Run("kept after its end", func(t *testing.T) {
		kept := filepath.Join(e.dataDir, "logs", list[0].ID.String(), "runner.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o700))
		require.NoError(t, os.WriteFile(kept, []byte("Job build completed with result: Succeeded\n"), 0o600))
		assert.Equal(t, "Job build completed with result: Succeeded\n", e.ok("logs", list[0].ID.String()))
	})
	t.Run("follow until the attempt ends", func(t *testing.T) {
		st := e.journal()
		var out lockedBuffer
		done := make(chan int, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		go func() {
			done <- app.Run(ctx, []string{"--data-dir", e.dataDir, "logs", "-f", "-n", "1", busy.ID.String()},
				app.Streams{Stdout: &out, Stderr: &out})
		}()
		appendLine := func(s string) {
			f, err := os.OpenFile(logPath, os.O_APPEND|os.O_WRONLY, 0)
			require.NoError(t, err)
			_, err = f.WriteString(s + "\n")
			require.NoError(t, err)
			require.NoError(t, f.Close())
		}
		printed := func(s string) func() bool { return func() bool { return strings.Contains(out.String(), s) } }
		require.Eventually(t, printed("line 30\n"), 5*time.Second, 10*time.Millisecond)
		appendLine("line 31")
		require.Eventually(t, printed("line 31\n"), 5*time.Second, 10*time.Millisecond)
		appendLine("line 32")
		ended, err := busy.Conclude(rm.Outcome{Kind: rm.CompletedJob}, storetest.Now())
		require.NoError(t, err)
		require.NoError(t, st.RecordAttempt(t.Context(), ended))
		require.Equal(t, 0, <-done, out.String())
		assert.Equal(t, "line 30\nline 31\nline 32\n", out.String())
	})
}

// lockedBuffer is a bytes.Buffer safe to read while a command writes.
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

// attempt show and logs take a unique prefix of an attempt's id.
func TestAttemptIDPrefix(t *testing.T) {
	e := newEnv(t)
	_, _, list := seed(t, e)
	id := list[0].ID.String()
	assert.Contains(t, e.ok("attempt", "show", id[:10]), id)
	r := e.run("logs", id[:10])
	assert.NotContains(t, r.stderr, "is not an attempt id")
}
