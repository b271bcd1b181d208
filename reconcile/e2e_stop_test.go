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
	"github.com/runner-manager/runner-manager/platform"
)

// A stop without drain removes the idle runners (registration, process,
// concluded ExitedIdleWithoutWork) and leaves the busy one to its job; the
// next start re-adopts it and concludes it.
func TestE2EStopRemovesIdleRunnersKeepsBusyOnes(t *testing.T) {
	for _, mode := range []rm.Mode{rm.ModeScaleSet, rm.ModeClassic} {
		t.Run(mode.String(), func(t *testing.T) {
			w := newWorld(t, worldOpts{mode: mode, max: 4, minIdle: 2})
			cfg := w.supervisorConfig(nil, nil)
			_, stop := w.run(cfg)
			w.enqueue(1, 4*time.Second, 8<<20)
			prefix := rm.RunnerNamePrefix(w.host.ID)
			var busy rm.Attempt
			require.Eventually(t, func() bool {
				idle, nbusy := 0, 0
				as, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
				if err != nil {
					return false
				}
				for _, a := range as {
					switch a.State {
					case rm.StateIdle:
						idle++
					case rm.StateBusy:
						nbusy++
						busy = a
					}
				}
				return nbusy == 1 && idle >= 1
			}, 30*time.Second, 20*time.Millisecond, "one runner busy with the job, idle ones beside it")

			began := time.Now()
			stop()
			t.Logf("%s: stopped in %s", mode, time.Since(began).Round(time.Millisecond))

			live, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
			require.NoError(t, err)
			require.Len(t, live, 1, "only the busy runner's attempt is live")
			assert.Equal(t, busy.ID, live[0].ID)
			assert.True(t, platform.Alive(busy.PID, busy.ProcessStart), "the busy runner keeps running its job")
			assert.Equal(t, 1, countRunnerProcesses(w.dataDir), "no idle runner process is left")
			for _, r := range w.fake.Runners() {
				if strings.HasPrefix(r.Name, prefix) {
					assert.Equal(t, busy.RunnerName, r.Name, "no idle registration is left")
				}
			}
			stopped := 0
			for _, a := range w.attempts() {
				if a.ID == busy.ID {
					continue
				}
				assert.Equal(t, rm.ExitedIdleWithoutWork, a.Outcome.Kind, "attempt %s: %s", a.ID, a.Outcome)
				if a.Outcome.Detail == "manager stopped" {
					stopped++
				}
			}
			assert.Positive(t, stopped, "the idle runners were concluded as stopped by the manager")

			// The next start re-adopts the busy runner; its job completes.
			cfg = w.supervisorConfig(nil, nil)
			w.run(cfg)
			w.waitJobs(30 * time.Second)
			require.Eventually(t, func() bool {
				a, err := w.st.Attempt(context.Background(), busy.ID)
				return err == nil && a.Outcome.Kind == rm.CompletedJob
			}, 30*time.Second, 20*time.Millisecond, "the re-adopted runner's attempt completed its job")
			assert.Contains(t, w.logs.String(), "re-adopted runner process")
		})
	}
}
