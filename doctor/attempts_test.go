package doctor_test

import (
	"context"
	"os"
	"os/exec"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// A live attempt whose runner is gone (a crash) is not doctor's to
// conclude: doctor says so, --fix too, and names `run --once`, which does.
func TestLiveAttemptsWhoseRunnerIsGone(t *testing.T) {
	h := newHost(t)
	exited := exec.Command("true")
	require.NoError(t, exited.Run())
	dead := storetest.NewAttempt().Policy(h.policy.ID).Host(h.host.ID).State(rm.StateStarting).
		ProcessID(exited.Process.Pid).ProcessStart(1).Build()
	start, err := platform.StartTime(os.Getpid())
	require.NoError(t, err)
	running := storetest.NewAttempt().Policy(h.policy.ID).Host(h.host.ID).State(rm.StateIdle).
		ProcessID(os.Getpid()).ProcessStart(start).Build()
	other := storetest.NewAttempt().Policy(h.policy.ID).Host(rm.NewHostID()).State(rm.StateIdle).
		ProcessID(exited.Process.Pid).ProcessStart(1).Build() // another host's: its pid means nothing here
	for _, a := range []rm.Attempt{dead, running, other} {
		require.NoError(t, h.st.RecordAttempt(t.Context(), a))
	}
	check := func(s doctor.Setup) doctor.Check {
		t.Helper()
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		m := byName(checks)["live-attempts"]
		require.Len(t, m, 1, "%v", checks)
		return m[0]
	}

	c := check(h.setup())
	assert.Equal(t, doctor.Warn, c.Status)
	assert.Equal(t, "live attempts: 2, 1 whose runner process is gone", c.Detail)
	assert.Contains(t, c.Hint, "`runner-manager run --once` concludes them")
	assert.Contains(t, c.Hint, dead.ID.String()+" (home, starting)")
	assert.NotContains(t, c.Hint, running.ID.String())
	assert.NotContains(t, c.Hint, other.ID.String())

	s := h.setup()
	s.Fix = true
	c = check(s)
	assert.Equal(t, doctor.Warn, c.Status, "--fix leaves it live")
	assert.Contains(t, c.Hint, "doctor --fix does not conclude attempts: `runner-manager run --once` concludes them")
	got, err := h.st.Attempt(t.Context(), dead.ID)
	require.NoError(t, err)
	assert.True(t, got.Live())

	s.DaemonRunning = func(context.Context) (bool, error) { return true, nil }
	c = check(s)
	assert.Equal(t, doctor.OK, c.Status)
	assert.Contains(t, c.Detail, "the running daemon concludes them")
}
