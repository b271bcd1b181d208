package status_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestFromJournal(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Name("build-01").Build()
	other := storetest.NewHost().Name("build-02").Build()
	require.NoError(t, st.PutHost(ctx, host))
	require.NoError(t, st.PutHost(ctx, other))
	home := storetest.NewPolicy().Name("home").Host(host.ID).Autoscale("home", 4).MinIdle(1).Build()
	gpu := storetest.NewPolicy().Name("gpu").Host(host.ID).Labels("gpu").Max(2).Paused().Build()
	theirs := storetest.NewPolicy().Name("theirs").Host(other.ID).Autoscale("theirs", 1).Build()
	for _, p := range []rm.Policy{home, gpu, theirs} {
		require.NoError(t, st.InsertPolicy(ctx, p))
	}
	now := storetest.Now()
	busy := storetest.NewAttempt().Policy(home.ID).Host(host.ID).State(rm.StateBusy).
		Job(rm.Job{ID: "7", Number: 7, Name: "build"}).Usage(rm.AttemptUsage{PeakRSSBytes: 900, Samples: 3}).Build()
	idle := storetest.NewAttempt().Policy(home.ID).Host(host.ID).State(rm.StateIdle).LastMessage("waiting").Build()
	noName := storetest.NewAttempt().Policy(gpu.ID).Host(host.ID).State(rm.StateBusy).Job(rm.Job{ID: "0f8fad5b-d9cb-469f-a165-70867728950e"}).Build()
	done := storetest.NewAttempt().Policy(home.ID).Host(host.ID).State(rm.StateFinished).Build()
	for _, a := range []rm.Attempt{busy, idle, noName, done} {
		require.NoError(t, st.RecordAttempt(ctx, a))
	}

	t.Run("Host", func(t *testing.T) {
		s, err := status.FromJournal(ctx, st, host.ID, now)
		require.NoError(t, err)
		assert.Equal(t, now, s.At)
		assert.Equal(t, "build-01", s.Host.Name)
		require.Len(t, s.Policies, 2, "another host's policy is not this host's status")
		g, h := s.Policies[0], s.Policies[1]
		assert.Equal(t, status.Policy{ID: gpu.ID, Name: "gpu", Target: gpu.Target.String(), Mode: "classic",
			Paused: true, Live: 1, Busy: 1, Max: 2}, g)
		assert.Equal(t, []int{2, 1, 1, 1, 4}, []int{h.Live, h.Idle, h.Busy, h.MinIdle, h.Max})
		byID := map[rm.AttemptID]status.Attempt{}
		for _, a := range s.Attempts {
			byID[a.ID] = a
		}
		require.Len(t, byID, 3, "only live attempts")
		assert.Equal(t, "build", byID[busy.ID].JobLabel())
		assert.Equal(t, uint64(900), byID[busy.ID].PeakRSSBytes)
		assert.Equal(t, "0f8fad5b-d9cb-469f-a165-70867728950e", byID[noName.ID].JobLabel(), "a job without a name shows its id")
		require.NotNil(t, byID[noName.ID].Job)
		assert.Equal(t, "0f8fad5b-d9cb-469f-a165-70867728950e", byID[noName.ID].Job.ID)
		require.NotNil(t, byID[busy.ID].Job)
		assert.Equal(t, "7", byID[busy.ID].Job.ID)
		assert.Nil(t, byID[idle.ID].Job, "no job yet")
		assert.Equal(t, "waiting", byID[idle.ID].LastMessage)
		assert.Equal(t, rm.StateIdle, byID[idle.ID].State)
		assert.Equal(t, "home", byID[busy.ID].PolicyName)
		assert.Equal(t, "gpu", byID[noName.ID].PolicyName)
	})
	t.Run("AnyHost", func(t *testing.T) {
		s, err := status.FromJournal(ctx, st, rm.HostID{}, now)
		require.NoError(t, err)
		assert.Len(t, s.Policies, 3)
		assert.Equal(t, "build-01", s.Host.Name, "the first policy's host")
	})
	t.Run("Closed", func(t *testing.T) {
		closed := sqlitetest.MustOpen(t)
		require.NoError(t, closed.Close())
		_, err := status.FromJournal(ctx, closed, host.ID, now)
		assert.ErrorContains(t, err, "read the policies from the journal")
	})
}

func TestWithPolicies(t *testing.T) {
	home := storetest.NewPolicy().Name("home").Autoscale("home", 4).Build()
	gpu := storetest.NewPolicy().Name("gpu").Labels("gpu").Max(2).Paused().Build()
	live := status.Status{At: time.Now(), Policies: []status.Policy{
		{ID: home.ID, Name: "old-name", Max: 3, Live: 2, Demand: 5, Admitted: 3, LastRefusal: "memory"},
	}}
	got := live.WithPolicies([]rm.Policy{home, gpu})
	require.Len(t, got.Policies, 2)
	h := got.Policies[0]
	assert.Equal(t, "home", h.Name, "the journal's settings")
	assert.Equal(t, 4, h.Max)
	assert.Equal(t, "scale-set", h.Mode)
	assert.Equal(t, []int{2, 5, 3}, []int{h.Live, h.Demand, h.Admitted}, "the daemon's figures")
	assert.Equal(t, "memory", h.LastRefusal)
	assert.Equal(t, "gpu", got.Policies[1].Name, "a policy the daemon runs no loop for")
	assert.True(t, got.Policies[1].Paused)
	assert.Equal(t, "old-name", live.Policies[0].Name, "the receiver is not changed")
}

func TestMemoryOf(t *testing.T) {
	m := status.MemoryOf(platform.NewMachine(), t.TempDir(), 1<<30, 2<<30)
	assert.NotZero(t, m.TotalBytes)
	assert.NotZero(t, m.DiskFreeBytes)
	assert.Equal(t, []uint64{1 << 30, 2 << 30}, []uint64{m.ReserveBytes, m.DiskFloorBytes})

	m = status.MemoryOf(mutedMachine{}, t.TempDir(), 1<<30, 2<<30)
	assert.Equal(t, status.Memory{ReserveBytes: 1 << 30, DiskFloorBytes: 2 << 30}, m, "what the machine does not tell stays 0")
}

// mutedMachine tells nothing.
type mutedMachine struct{ rm.Machine }

func (mutedMachine) Memory() (uint64, uint64, error) { return 0, 0, errors.ErrUnsupported }
func (mutedMachine) DiskFree(string) (uint64, error) { return 0, errors.ErrUnsupported }
