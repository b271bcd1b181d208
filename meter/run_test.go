package meter_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// memJournal is the little of a journal a metering pass reads, in memory,
// so a synctest bubble holds no database goroutines.
type memJournal struct {
	store.Store
	policy   rm.Policy
	attempts []rm.Attempt
}

func (j *memJournal) LiveAttempts(_ context.Context, host rm.HostID) ([]rm.Attempt, error) {
	if host != j.policy.Host {
		return nil, nil
	}
	return j.attempts, nil
}

// runner is one live attempt, pid 7, of one policy of host.
func runner() (*memJournal, rm.HostID) {
	host := rm.NewHostID()
	p := storetest.NewPolicy().Repository("acme/repo").Host(host).Autoscale("home", 2).Active().Build()
	a := storetest.NewAttempt().Policy(p.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(7).Build()
	return &memJournal{policy: p, attempts: []rm.Attempt{a}}, host
}

// running starts ms.Run in the bubble; stop cancels it and waits for Run to
// return.
func running(t *testing.T, ms *meter.AttemptMeters, st store.Store, host rm.HostID, wanted func() bool, exited func(rm.PolicyID)) (stop func(), returned <-chan struct{}) {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		ms.Run(ctx, st, host, wanted, exited)
	}()
	return func() { cancel(); <-done }, done
}

func alive(pids []int) map[int]platform.TreeUsage {
	out := map[int]platform.TreeUsage{}
	for _, pid := range pids {
		out[pid] = tree(1<<20, 0)
	}
	return out
}

func TestRunTicks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, host := runner()
		var calls atomic.Int32
		ms := meter.New("")
		ms.SetSampler(func(pids []int) map[int]platform.TreeUsage {
			calls.Add(1)
			assert.Equal(t, []int{7}, pids, "one look for every attempt")
			return alive(pids)
		})
		stop, returned := running(t, ms, st, host, nil, nil)
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load(), "the first pass at once")
		time.Sleep(meter.SampleEvery - time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load())
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		assert.Equal(t, int32(2), calls.Load(), "then every 2 s")
		time.Sleep(10 * meter.SampleEvery)
		synctest.Wait()
		assert.Equal(t, int32(12), calls.Load())
		u, ok := ms.Peek(st.attempts[0].ID)
		require.True(t, ok)
		assert.Equal(t, uint32(12), u.Samples)

		stop()
		select {
		case <-returned:
		default:
			t.Fatal("Run did not return when its context ended")
		}
		time.Sleep(10 * meter.SampleEvery)
		synctest.Wait()
		assert.Equal(t, int32(12), calls.Load(), "no pass after Run returned")
	})
}

func TestRunWanted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, host := runner()
		var calls atomic.Int32
		var wanted atomic.Bool
		ms := meter.New("")
		ms.SetSampler(func(pids []int) map[int]platform.TreeUsage { calls.Add(1); return alive(pids) })
		stop, _ := running(t, ms, st, host, wanted.Load, nil)
		defer stop()
		time.Sleep(5 * meter.SampleEvery)
		synctest.Wait()
		assert.Zero(t, calls.Load(), "no sampling while not wanted")
		wanted.Store(true)
		time.Sleep(meter.SampleEvery)
		synctest.Wait()
		assert.Equal(t, int32(1), calls.Load(), "sampling from the next tick")
	})
}

func TestRunAnnouncesExited(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, host := runner()
		ms := meter.New("")
		ms.SetSampler(func([]int) map[int]platform.TreeUsage { return map[int]platform.TreeUsage{} })
		var mu sync.Mutex
		var at []time.Duration
		begin := time.Now()
		stop, _ := running(t, ms, st, host, nil, func(policy rm.PolicyID) {
			assert.Equal(t, st.policy.ID, policy)
			mu.Lock()
			defer mu.Unlock()
			at = append(at, time.Since(begin))
		})
		defer stop()
		time.Sleep(61 * time.Second)
		synctest.Wait()
		mu.Lock()
		defer mu.Unlock()
		assert.Equal(t, []time.Duration{0, 30 * time.Second, 60 * time.Second}, at,
			"announced at once, then every 30 s while it stays live")
	})
}

func TestRunSurvivesPanic(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, host := runner()
		var calls atomic.Int32
		ms := meter.New("")
		ms.SetSampler(func(pids []int) map[int]platform.TreeUsage {
			if calls.Add(1) == 2 {
				panic("a /proc that makes no sense")
			}
			return alive(pids)
		})
		stop, returned := running(t, ms, st, host, nil, nil)
		defer stop()
		time.Sleep(3 * meter.SampleEvery)
		synctest.Wait()
		assert.Equal(t, int32(4), calls.Load(), "a pass that panics loses one sample")
		u, ok := ms.Peek(st.attempts[0].ID)
		require.True(t, ok)
		assert.Equal(t, uint32(3), u.Samples)
		select {
		case <-returned:
			t.Fatal("Run returned after a panic")
		default:
		}
	})
}

func TestRunSlowProc(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, host := runner()
		var calls atomic.Int32
		release := make(chan struct{})
		ms := meter.New("")
		ms.SetSampler(func(pids []int) map[int]platform.TreeUsage {
			if calls.Add(1) == 2 {
				<-release // a /proc read that hangs
			}
			return alive(pids)
		})
		stop, returned := running(t, ms, st, host, nil, nil)
		time.Sleep(10 * meter.SampleEvery)
		synctest.Wait()
		assert.Equal(t, int32(2), calls.Load(), "passes never overlap")

		stop() // returns although the pass still hangs
		select {
		case <-returned:
		default:
			t.Fatal("Run waited for a hung pass")
		}
		close(release)
		synctest.Wait()
		assert.Equal(t, int32(2), calls.Load())
	})
}

// TestObserver: an observer is told, after each pass, of every attempt the
// pass sampled, with its memory, the CPU it used so far (never less than
// before, though its tree's total fell) and its figures; a pass that
// cannot read the process table tells it nothing.
func TestObserver(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st, host := runner()
		var (
			mu     sync.Mutex
			passes [][]meter.Sample
		)
		ms := meter.New("", meter.WithObserver(func(s []meter.Sample) {
			mu.Lock()
			defer mu.Unlock()
			passes = append(passes, s)
		}))
		looks := []map[int]platform.TreeUsage{
			{7: tree(50<<20, 1000)},
			{7: tree(80<<20, 3000)},
			{7: tree(60<<20, 2500)}, // a child left with 0.5 s
			nil,                     // the table could not be read
		}
		ms.SetSampler(func(pids []int) map[int]platform.TreeUsage {
			look := looks[0]
			looks = looks[1:]
			return look
		})
		for range 4 {
			ms.SampleOnce(st, host)
			time.Sleep(meter.SampleEvery)
		}
		mu.Lock()
		defer mu.Unlock()
		require.Len(t, passes, 3)
		a := st.attempts[0]
		for i, want := range []struct {
			rss  uint64
			used time.Duration
		}{{50 << 20, 0}, {80 << 20, 2 * time.Second}, {60 << 20, 2 * time.Second}} {
			require.Len(t, passes[i], 1)
			s := passes[i][0]
			assert.Equal(t, a.ID, s.Attempt)
			assert.Equal(t, a.Policy, s.Policy)
			assert.Equal(t, want.rss, s.RSSBytes, "pass %d", i)
			assert.Equal(t, want.used, s.CPUUsed, "pass %d", i)
			u, ok := ms.Peek(a.ID)
			require.True(t, ok)
			if i == 2 {
				assert.Equal(t, u, s.Usage, "the figures Peek answers")
			}
		}
		assert.Equal(t, uint64(80<<20), passes[2][0].Usage.PeakRSSBytes)
	})
}
