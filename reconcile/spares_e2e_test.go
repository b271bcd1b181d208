//go:build linux

package reconcile_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github/fakegithub"
)

// A scale-set policy with a spare keeps a runner listening before any
// job: a job queued finds it (no boot to wait for), a new spare replaces
// it, and a stop removes the spare: registration, process, concluded
// idle. Real fake-runner processes that take 3 s to boot.
func TestE2ESpares(t *testing.T) {
	const boot = 3 * time.Second
	w := newWorld(t, worldOpts{mode: rm.ModeScaleSet, max: 2, spare: 1, fake: []fakegithub.Option{fakegithub.WithRunnerBootDelay(boot)}})
	_, stop := w.run(w.supervisorConfig(nil, nil))
	prefix := rm.RunnerNamePrefix(w.host.ID)
	online := func() int {
		n := 0
		for _, r := range w.fake.Runners() {
			if strings.HasPrefix(r.Name, prefix) && r.Online && !r.Busy {
				n++
			}
		}
		return n
	}
	require.Eventually(t, func() bool { return online() == 1 }, 60*time.Second, 20*time.Millisecond, "a spare listens before any job")

	id := w.enqueue(1, 200*time.Millisecond, 8<<20)[0]
	require.NoError(t, w.fake.WaitFor(waitCtxE2E(t, 60*time.Second), func() bool {
		j, _ := w.fake.Job(id)
		return j.Status == "completed"
	}))
	j, _ := w.fake.Job(id)
	waited := j.StartedAt.Sub(j.QueuedAt)
	t.Logf("queued → started: %s (runner boot %s)", waited.Round(time.Millisecond), boot)
	assert.Less(t, waited, boot, "the job found a runner listening")
	require.Eventually(t, func() bool { return online() == 1 }, 60*time.Second, 20*time.Millisecond, "a new spare replaces the one that took the job")

	stop()
	assert.Zero(t, countRunnerProcesses(w.dataDir), "no runner process is left")
	for _, r := range w.fake.Runners() {
		assert.False(t, strings.HasPrefix(r.Name, prefix), "no registration is left: %s", r.Name)
	}
	live, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
	require.NoError(t, err)
	assert.Empty(t, live)
	assert.Contains(t, w.logs.String(), "warm spare launched")
}

func waitCtxE2E(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
