package runnermanager_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// An ended attempt entered one end state, not both: StateAt answers for the
// one it is in.
func TestStateAtOneEnd(t *testing.T) {
	tests := []struct {
		name       string
		o          rm.Outcome
		end, other rm.AttemptState
	}{
		{"Finished", rm.Outcome{Kind: rm.CompletedJob}, rm.StateFinished, rm.StateFailed},
		{"Idle", rm.Outcome{Kind: rm.ExitedIdleWithoutWork}, rm.StateFinished, rm.StateFailed},
		{"Failed", rm.FailedWith(rm.Lost, "gone"), rm.StateFailed, rm.StateFinished},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, err := newAttempt().MoveTo(rm.StateRegistering, t0.Add(time.Second))
			require.NoError(t, err)
			a, err = a.MoveTo(rm.StateStarting, t0.Add(2*time.Second))
			require.NoError(t, err)
			a, err = a.MoveTo(rm.StateBusy, t0.Add(3*time.Second))
			require.NoError(t, err)
			a, err = a.Conclude(tt.o, t0.Add(time.Minute))
			require.NoError(t, err)
			assert.Equal(t, t0.Add(time.Minute), a.StateAt(tt.end))
			assert.True(t, a.StateAt(tt.other).IsZero(), "an attempt that is %s was never %s", tt.end, tt.other)
		})
	}
	live := newAttempt()
	live.EndedAt = t0 // a row with a stray stamp still has not ended
	assert.True(t, live.StateAt(rm.StateFinished).IsZero())
	assert.True(t, live.StateAt(rm.StateFailed).IsZero())
}
