package app_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/platform"
)

// startDaemon runs `run` in the background until the test ends; it returns
// once the daemon answers on its socket, and a stop that waits for it.
func startDaemon(t *testing.T, e *env, logs *lockedBuffer) (stop func() int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, []string{"--data-dir", e.dataDir, "run"}, app.Streams{Stdout: logs, Stderr: logs})
	}()
	client := localapi.NewClient(e.dataDir)
	require.Eventually(t, func() bool {
		_, err := client.Status(ctx)
		return err == nil
	}, 20*time.Second, 20*time.Millisecond, "the daemon answers on its socket\n%s", logs.String())
	code := -1
	stopped := false
	stop = func() int {
		if stopped {
			return code
		}
		stopped = true
		cancel()
		select {
		case code = <-done:
		case <-time.After(60 * time.Second):
			t.Fatal("run did not stop on cancel")
		}
		return code
	}
	t.Cleanup(func() { stop() })
	return stop
}

// liveRunners returns the pids of the journal's live attempts' runners.
func liveRunners(t *testing.T, e *env) map[int]uint64 {
	t.Helper()
	st := e.journal()
	ps, err := st.Policies(t.Context())
	require.NoError(t, err)
	out := map[int]uint64{}
	for _, p := range ps {
		as, err := st.ActiveAttempts(t.Context(), p.ID)
		require.NoError(t, err)
		for _, a := range as {
			if a.PID != 0 {
				out[a.PID] = a.ProcessStart
			}
		}
	}
	return out
}

// A second daemon on one data directory exits with a clear error naming
// the first one's pid, even with the socket file deleted, and leaves the
// first one's runners alone.
func TestRunSecondDaemonRefused(t *testing.T) {
	e := newEnv(t)
	_, runnerDir := withFakeGitHub(t, e)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "2", "--min-idle", "1",
		"--spare", "0", "--runner-dir", runnerDir, "--memory-estimate", "64MiB")
	var logs lockedBuffer
	stop := startDaemon(t, e, &logs)
	require.Eventually(t, func() bool { return len(liveRunners(t, e)) == 1 }, 20*time.Second, 50*time.Millisecond,
		"the first daemon keeps its min idle runner\n%s", logs.String())
	runners := liveRunners(t, e)

	require.NoError(t, os.Remove(localapi.SocketPath(e.dataDir)))
	r := e.run("run")
	require.Equal(t, 1, r.code, "the second daemon exits 1\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "another runner-manager daemon is running on this data directory")
	assert.Contains(t, r.stderr, fmt.Sprintf("process %d holds", os.Getpid()), "it names the holder's pid")
	assert.NotContains(t, r.stderr, "stopping a runner process", "it swept nothing")
	for pid, start := range runners {
		assert.True(t, platform.Alive(pid, start), "the first daemon's runner %d is alive", pid)
	}
	assert.Equal(t, runners, liveRunners(t, e), "the first daemon's attempts are untouched")
	assert.Equal(t, 0, stop(), logs.String())
}

// Two data directories over one journal, with one host id (a copied data
// directory): the host lease in the journal refuses the second daemon.
func TestRunSecondDataDirOverOneJournalRefused(t *testing.T) {
	e := newEnv(t)
	_, runnerDir := withFakeGitHub(t, e)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "2",
		"--runner-dir", runnerDir, "--memory-estimate", "64MiB")
	var logs lockedBuffer
	stop := startDaemon(t, e, &logs)

	other := filepath.Join(e.home, "data-2")
	require.NoError(t, os.MkdirAll(filepath.Join(other, "state"), 0o700))
	hostID, err := os.ReadFile(filepath.Join(e.dataDir, "state", "host-id"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(other, "state", "host-id"), hostID, 0o600))
	require.NoError(t, os.Symlink(filepath.Join(e.dataDir, "journal.db"), filepath.Join(other, "journal.db")))

	r := e.runRaw("--data-dir", other, "run")
	require.Equal(t, 1, r.code, "the second daemon exits 1\nstdout: %s\nstderr: %s", r.stdout, r.stderr)
	id, err := rm.ParseHostID(strings.TrimSpace(string(hostID)))
	require.NoError(t, err)
	assert.Contains(t, r.stderr, "is run by another runner-manager daemon")
	assert.Contains(t, r.stderr, fmt.Sprintf("pid %d on ", os.Getpid()), "it names the holder's pid")
	assert.Contains(t, r.stderr, id.String())
	assert.Equal(t, 0, stop(), logs.String())
}
