//go:build unix

package meter_test

import (
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// The whole of what a slot's prompt release rests on: a runner that exited
// and that nothing has reaped yet is announced, so a pass runs and reaps it.
// A sampler that read it as live would wait for the scheduled poll.
func TestSampleOnceAnnouncesUnreapedExit(t *testing.T) {
	st, host, policy := journal(t, "acme/repo", 1)
	child := exec.Command("sh", "-c", "sleep 0.3")
	require.NoError(t, child.Start())
	start, err := platform.StartTime(child.Process.Pid)
	require.NoError(t, err)
	a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).
		ProcessID(child.Process.Pid).ProcessStart(start).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a))

	ms := meter.New("")
	require.Empty(t, ms.SampleOnce(st, host.ID), "still running")
	var announced []rm.PolicyID
	require.Eventually(t, func() bool {
		announced = ms.SampleOnce(st, host.ID)
		return len(announced) > 0
	}, 5*time.Second, 50*time.Millisecond)
	assert.Nil(t, child.ProcessState, "not reaped while it was announced")
	_ = child.Wait()

	assert.Equal(t, []rm.PolicyID{policy.ID}, announced)
	gone, ok := ms.SinceSeenGone(a.ID, time.Now())
	assert.True(t, ok, "the moment it was seen gone is known")
	assert.Less(t, gone, time.Second)
}
