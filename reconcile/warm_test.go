package reconcile_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
)

// warmLauncher is the fake launcher, able to run warm.
type warmLauncher struct{ *fakeLauncher }

func (warmLauncher) RunsWarm() bool { return true }

// fakeSlots records leases and releases.
type fakeSlots struct {
	mu       sync.Mutex
	held     map[rm.AttemptID]bool
	released map[rm.AttemptID]bool // attempt → discarded
}

func (s *fakeSlots) Lease(_ rm.Backend, repo string, a rm.AttemptID) (rm.WarmSlot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.held[a] = true
	return rm.WarmSlot{Repo: repo, N: 1, Dir: "/slots/1/work"}, nil
}
func (s *fakeSlots) Hold(rm.Backend, rm.AttemptID, string) {}
func (s *fakeSlots) Release(a rm.AttemptID, discard bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.held, a)
	s.released[a] = discard
	return nil
}
func (s *fakeSlots) Free(rm.Backend, string) int { return 0 }

func (s *fakeSlots) state(a rm.AttemptID) (held, released, discarded bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.released[a]
	return s.held[a], ok, d
}

// originTarget says which runs came from forks.
type originTarget struct {
	*fakeTarget
	forks map[int64]bool
}

func (o originTarget) ForkRun(_ context.Context, _ string, run int64) (bool, error) {
	return o.forks[run], nil
}

// A short job's runner ends before GitHub's word on its job: its slot
// waits for that word, and is judged by GitHub's run, not by what the
// runner left; without the word within the grace it is emptied.
func TestWarmSlotWaitsForGitHubsWord(t *testing.T) {
	for _, c := range []struct {
		name        string
		word        bool
		fork        bool
		wantDiscard bool
	}{
		{"trusted run named late", true, false, false},
		{"fork run named late", true, true, true},
		{"never named", false, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			slots := &fakeSlots{held: map[rm.AttemptID]bool{}, released: map[rm.AttemptID]bool{}}
			var target originTarget
			e := newEnv(t, nil, func(cfg *reconcile.Config) {
				target = originTarget{fakeTarget: newFakeTarget(), forks: map[int64]bool{10: c.fork}}
				cfg.Target = reconcile.TargetOf(target)
				cfg.Launcher = warmLauncher{newFakeLauncher()}
				cfg.Slots = slots
				cfg.JobWordGrace = time.Minute
			})
			e.target = target.fakeTarget
			e.launcher = e.cfg.Launcher.(warmLauncher).fakeLauncher
			a, p := launchOne(t, e)
			require.Equal(t, "acme/repo#1", a.Slot, "the slot is journaled with the attempt")
			e.launcher.work(a.ID) // its Worker log: a job ran
			p.exit(0)
			e.demand(0)
			e.pass()
			require.False(t, e.attempt(a.ID).Live())
			held, released, _ := slots.state(a.ID)
			assert.True(t, held && !released, "no word from GitHub yet: the slot waits")
			if c.word {
				e.demand(0, started(a.RunnerName, 1)) // run 10
				e.pass()
			} else {
				e.clock.Advance(2 * time.Minute)
				e.pass()
			}
			held, released, discarded := slots.state(a.ID)
			assert.False(t, held)
			assert.True(t, released)
			assert.Equal(t, c.wantDiscard, discarded)
		})
	}
}
