//go:build linux

package container_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
)

// TestRecovery: a restarted manager finds its containers by its host's
// label alone (another host's launcher neither lists nor adopts them),
// and an adopted runner's exit code is its container's, which a native
// adopted process cannot give. The launcher suite (TestConformance)
// checks the rest of a restart.
func TestRecovery(t *testing.T) {
	gh := newFakeGitHub(t)
	first, host := newLauncher(t, container.Settings{})
	keep, _ := gh.spec(t)
	pk, err := first.Launch(t.Context(), keep)
	require.NoError(t, err)
	require.NoError(t, gh.fake.WaitFor(ctxFor(t, 30*time.Second), func() bool { return len(onlineRunners(gh)) == 1 }), "the runner connects")
	require.NoError(t, first.Close()) // the manager stops without draining

	e := testEngine(t)
	list, err := e.Containers(t.Context(), host)
	require.NoError(t, err)
	assert.Equal(t, []rm.AttemptID{keep.Attempt}, attempts(list))
	other, err := e.Containers(t.Context(), rm.NewHostID())
	require.NoError(t, err)
	assert.Empty(t, other, "another host's list holds none of ours")

	stranger, err := container.NewLauncher(e, rm.NewHostID(), first.Settings())
	require.NoError(t, err)
	defer stranger.Close()
	_, err = stranger.Adopt(keep.Attempt, pk.PID(), pk.Start())
	require.ErrorIs(t, err, rm.ErrProcessGone, "another host's container is not adopted")

	second, err := container.NewLauncher(e, host, first.Settings())
	require.NoError(t, err)
	defer second.Close()
	adopted, err := second.Adopt(keep.Attempt, pk.PID(), pk.Start())
	require.NoError(t, err)
	require.NoError(t, adopted.Stop(ctxFor(t, 30*time.Second), 10*time.Second))
	waitDone(t, adopted.Done(), 30*time.Second, "the adopted container")
	assert.Equal(t, 0, adopted.ExitCode(), "an idle runner stopped by SIGTERM exits 0")
	assert.NoError(t, adopted.(*container.Process).Failure())
	require.NoError(t, second.Cleanup(keep.Attempt, false))
	_, err = second.Adopt(keep.Attempt, pk.PID(), pk.Start())
	require.ErrorIs(t, err, container.ErrContainerGone, "a removed container is gone")
}

func TestFailedLogsKept(t *testing.T) {
	gh := newFakeGitHub(t)
	dir := t.TempDir()
	l, _ := newLauncher(t, container.Settings{}, container.WithFailedLogs(dir))
	spec, _ := gh.spec(t)
	spec.JITConfig = "bm90IGEgSklUIGNvbmZpZw==" // base64, not a JIT configuration
	p, err := l.Launch(t.Context(), spec)
	require.NoError(t, err)
	waitDone(t, p.Done(), 30*time.Second, "a runner with a bad configuration")
	assert.Equal(t, 1, p.ExitCode(), "the listener's 'terminated' code, as the container's")
	require.NoError(t, l.Cleanup(spec.Attempt, true))
	out := readFile(t, dir+"/"+spec.Attempt.String()+".log")
	assert.Contains(t, out, "JIT configuration", "the runner's own words are kept")
	assert.NotContains(t, out, spec.JITConfig)
	assert.Equal(t, "-rw-------", fileMode(t, dir+"/"+spec.Attempt.String()+".log"))
}

func onlineRunners(gh *fakeGitHub) []string {
	var out []string
	for _, r := range gh.fake.Runners() {
		if r.Online {
			out = append(out, r.Name)
		}
	}
	return out
}

func attempts(list []container.Container) []rm.AttemptID {
	out := make([]rm.AttemptID, 0, len(list))
	for _, c := range list {
		out = append(out, c.Attempt)
	}
	return out
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), d)
	t.Cleanup(cancel)
	return ctx
}
