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

// TestRecovery launches two idle runners, then plays a restarted manager:
// a new launcher re-adopts the live attempt by its container, checked
// against the journal's pid and start stamp, and the container of the
// attempt the journal no longer holds live is removed.
func TestRecovery(t *testing.T) {
	gh := newFakeGitHub(t)
	first, host := newLauncher(t, container.Settings{})
	keep, _ := gh.spec(t)
	drop, _ := gh.spec(t)
	pk, err := first.Launch(t.Context(), keep)
	require.NoError(t, err)
	pd, err := first.Launch(t.Context(), drop)
	require.NoError(t, err)
	require.NoError(t, gh.fake.WaitFor(ctxFor(t, 30*time.Second), func() bool { return len(onlineRunners(gh)) == 2 }), "both runners connect")
	require.NoError(t, first.Close()) // the manager stops without draining

	e := testEngine(t)
	list, err := e.Containers(t.Context(), host)
	require.NoError(t, err)
	assert.ElementsMatch(t, []rm.AttemptID{keep.Attempt, drop.Attempt}, attempts(list))
	for _, c := range list {
		assert.True(t, c.Running, "%s runs", c.Name)
	}
	other, err := e.Containers(t.Context(), rm.NewHostID())
	require.NoError(t, err)
	assert.Empty(t, other, "another host's list holds none of ours")

	second, err := container.NewLauncher(e, host, first.Settings())
	require.NoError(t, err)
	defer second.Close()

	t.Run("WrongStart", func(t *testing.T) {
		_, err := second.Adopt(keep.Attempt, pk.PID(), pk.Start()+1)
		require.ErrorIs(t, err, rm.ErrProcessGone, "another process under the same pid is not ours")
	})
	t.Run("OtherHost", func(t *testing.T) {
		stranger, err := container.NewLauncher(e, rm.NewHostID(), first.Settings())
		require.NoError(t, err)
		defer stranger.Close()
		_, err = stranger.Adopt(keep.Attempt, pk.PID(), pk.Start())
		require.ErrorIs(t, err, rm.ErrProcessGone, "another host's container is not adopted")
	})
	adopted, err := second.Adopt(keep.Attempt, pk.PID(), pk.Start())
	require.NoError(t, err)
	assert.Equal(t, pk.PID(), adopted.PID())
	select {
	case <-adopted.Done():
		t.Fatal("the adopted runner's container runs")
	default:
	}

	removed, err := e.RemoveLeftovers(t.Context(), host, func(a rm.AttemptID) bool { return a == keep.Attempt })
	require.NoError(t, err)
	assert.Equal(t, []rm.AttemptID{drop.Attempt}, attempts(removed))
	list, err = e.Containers(t.Context(), host)
	require.NoError(t, err)
	assert.Equal(t, []rm.AttemptID{keep.Attempt}, attempts(list))
	_, err = second.Adopt(drop.Attempt, pd.PID(), pd.Start())
	require.ErrorIs(t, err, rm.ErrProcessGone)
	require.ErrorIs(t, err, container.ErrContainerGone)

	// Stopped, the adopted runner's exit code is the container's, which a
	// native adopted process cannot give.
	require.NoError(t, adopted.Stop(ctxFor(t, 30*time.Second), 10*time.Second))
	waitDone(t, adopted.Done(), 30*time.Second, "the adopted container")
	assert.Equal(t, 0, adopted.ExitCode(), "an idle runner stopped by SIGTERM exits 0")
	assert.NoError(t, adopted.(*container.Process).Failure())
	_, err = second.Adopt(keep.Attempt, pk.PID(), pk.Start())
	require.ErrorIs(t, err, rm.ErrProcessGone, "a stopped container is not adopted")
	require.NoError(t, second.Cleanup(keep.Attempt, false))
	list, err = e.Containers(t.Context(), host)
	require.NoError(t, err)
	assert.Empty(t, list)
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
