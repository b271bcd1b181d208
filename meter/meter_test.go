package meter_test

import (
	"context"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func tree(rss uint64, cpuMs int64) platform.TreeUsage {
	return platform.TreeUsage{RSSBytes: rss, CPUTime: time.Duration(cpuMs) * time.Millisecond, Processes: 2}
}

// journal is a journal with this host and one active policy of it.
func journal(t *testing.T, repo string, max int) (*sqlite.Store, rm.Host, rm.Policy) {
	t.Helper()
	st := sqlitetest.MustOpen(t)
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(t.Context(), host))
	policy := storetest.NewPolicy().Repository(repo).Host(host.ID).Autoscale("home", max).Active().Build()
	require.NoError(t, st.InsertPolicy(t.Context(), policy))
	return st, host, policy
}

func TestMeterPeakAverageBusiest(t *testing.T) {
	ms := meter.New("")
	a := rm.NewAttemptID()
	start := time.Now()
	at := func(secs int) time.Time { return start.Add(time.Duration(secs) * time.Second) }
	ms.Record(a, rm.PolicyID{}, at(0), tree(100, 0))
	// Two CPUs busy for two seconds.
	ms.Record(a, rm.PolicyID{}, at(2), tree(500, 4_000))
	// Idle for two, and a child that exited took 1 s of CPU with it.
	ms.Record(a, rm.PolicyID{}, at(4), tree(300, 3_000))
	// Three quarters of a CPU for four: counted although the total only now
	// passes where it stood before the child exited.
	ms.Record(a, rm.PolicyID{}, at(8), tree(200, 6_000))

	rss, ok := ms.CurrentRSS(a)
	require.True(t, ok)
	assert.Equal(t, uint64(200), rss, "current is the last look, not the peak")
	u, ok := ms.Peek(a)
	require.True(t, ok, "measured")
	assert.Equal(t, rm.AttemptUsage{
		PeakRSSBytes:      500,
		CPUAvgMillicores:  875,
		CPUPeakMillicores: 2000,
		Samples:           4,
	}, u)
	ms.Ended(a, rm.Outcome{Kind: rm.CompletedJob})
	_, ok = ms.CurrentRSS(a)
	assert.False(t, ok, "a meter goes once its attempt ended with its job")
	assert.Empty(t, ms.PeaksOf(rm.PolicyID{}), "a meter of no policy keeps no peak")
}

func TestMeterSingleSample(t *testing.T) {
	ms := meter.New("")
	a := rm.NewAttemptID()
	ms.Record(a, rm.PolicyID{}, time.Now(), tree(42, 1_000))
	u, ok := ms.Peek(a)
	require.True(t, ok, "measured")
	assert.Equal(t, uint64(42), u.PeakRSSBytes)
	assert.Equal(t, [2]uint32{0, 0}, [2]uint32{u.CPUAvgMillicores, u.CPUPeakMillicores}, "one sample has no CPU rate")
}

func TestMeterPeek(t *testing.T) {
	ms := meter.New("")
	a := rm.NewAttemptID()
	_, ok := ms.Peek(a)
	assert.False(t, ok)
	now := time.Now()
	ms.Record(a, rm.PolicyID{}, now, tree(10, 0))
	ms.Record(a, rm.PolicyID{}, now.Add(time.Second), tree(20, 500))
	u, ok := ms.Peek(a)
	require.True(t, ok)
	assert.Equal(t, rm.AttemptUsage{PeakRSSBytes: 20, CPUAvgMillicores: 500, CPUPeakMillicores: 500, Samples: 2}, u)
	again, ok := ms.Peek(a)
	assert.True(t, ok, "a peek takes nothing")
	assert.Equal(t, u, again)
}

func TestMeterBackwardsClock(t *testing.T) {
	ms := meter.New("")
	a := rm.NewAttemptID()
	now := time.Now()
	ms.Record(a, rm.PolicyID{}, now, tree(1, 0))
	ms.Record(a, rm.PolicyID{}, now.Add(-time.Second), tree(1, 1_000))
	u, ok := ms.Peek(a)
	require.True(t, ok)
	assert.Equal(t, uint32(0), u.CPUPeakMillicores, "no wall time, no rate")
	assert.Equal(t, uint32(2), u.Samples)
}

func TestMeterForgetStale(t *testing.T) {
	ms := meter.New("")
	live, stale, recent := rm.NewAttemptID(), rm.NewAttemptID(), rm.NewAttemptID()
	start := time.Now()
	ms.Record(live, rm.PolicyID{}, start, tree(1, 0))
	ms.Record(stale, rm.PolicyID{}, start, tree(1, 0))
	ms.Record(recent, rm.PolicyID{}, start.Add(2*time.Second), tree(1, 0))
	ms.ForgetStale(map[rm.AttemptID]bool{live: true}, start.Add(meter.KeepAfterLastSample+time.Second))
	_, ok := ms.Peek(live)
	assert.True(t, ok, "live: kept")
	_, ok = ms.Peek(stale)
	assert.False(t, ok, "stale: forgotten")
	_, ok = ms.Peek(recent)
	assert.True(t, ok, "sampled less than 10 min ago: kept")
}

// A live attempt whose runner process is gone is announced by its target,
// so its loop concludes it now, and again only after a while; a running one
// is sampled.
func TestSampleOnceAnnouncesExitedAgainWhileLive(t *testing.T) {
	st, host, policy := journal(t, "octo/app", 2)
	// A process that ran and was reaped: its pid names nothing now.
	child := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, child.Run())
	self, err := platform.StartTime(os.Getpid())
	require.NoError(t, err)
	running, exited := rm.NewAttemptID(), rm.NewAttemptID()
	for _, a := range []rm.Attempt{
		storetest.NewAttempt().ID(running).Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(os.Getpid()).ProcessStart(self).Build(),
		storetest.NewAttempt().ID(exited).Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(2).ProcessID(child.Process.Pid).Build(),
	} {
		require.NoError(t, st.RecordAttempt(t.Context(), a))
	}

	ms := meter.New("")
	assert.Equal(t, []rm.PolicyID{policy.ID}, ms.SampleOnce(st, host.ID))
	assert.Empty(t, ms.SampleOnce(st, host.ID), "not announced again at once")
	// Still live a while later (its pass could not conclude it): again.
	ms.AgeExited(meter.AnnounceAgain)
	assert.Equal(t, []rm.PolicyID{policy.ID}, ms.SampleOnce(st, host.ID))

	u, ok := ms.Peek(running)
	assert.True(t, ok, "the live runner was sampled")
	assert.Equal(t, uint32(3), u.Samples)
	assert.NotZero(t, u.PeakRSSBytes)
	_, ok = ms.Peek(exited)
	assert.False(t, ok)
}

func TestSampleOnceOnlyOwnPolicies(t *testing.T) {
	st, host, _ := journal(t, "octo/app", 2)
	other := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(t.Context(), other))
	theirs := storetest.NewPolicy().Repository("octo/other").Host(other.ID).Autoscale("away", 1).Active().Build()
	require.NoError(t, st.InsertPolicy(t.Context(), theirs))
	a := storetest.NewAttempt().Policy(theirs.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(os.Getpid()).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a))

	ms := meter.New("")
	assert.Empty(t, ms.SampleOnce(st, host.ID))
	_, ok := ms.CurrentRSS(a.ID)
	assert.False(t, ok, "another host's attempt is not sampled here")
}

func TestSampleOnceReusedPID(t *testing.T) {
	st, host, policy := journal(t, "octo/app", 1)
	self, err := platform.StartTime(os.Getpid())
	require.NoError(t, err)
	// Our own pid, but another start stamp: the runner is gone and the pid
	// now names another process.
	a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).
		ProcessID(os.Getpid()).ProcessStart(self + 1).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a))

	ms := meter.New("")
	assert.Equal(t, []rm.PolicyID{policy.ID}, ms.SampleOnce(st, host.ID))
	_, ok := ms.CurrentRSS(a.ID)
	assert.False(t, ok, "another process's tree is not metered as the runner's")
}

func TestSampleOnceUnreadableProcessTable(t *testing.T) {
	st, host, policy := journal(t, "octo/app", 1)
	a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(4242).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a))
	ms := meter.New("")
	ms.SetSampler(func([]int) map[int]platform.TreeUsage { return nil })
	assert.Empty(t, ms.SampleOnce(st, host.ID), "a table that could not be read shows no runner gone")
}

// TestEndedKeepsPeaksOfJobs: the pass tells the meters how each attempt
// ended; only an attempt that ran a job keeps its peak for its policy,
// once, across restarts. An idle exit or a failure keeps none, unless a
// later word corrects it to CompletedJob.
func TestEndedKeepsPeaksOfJobs(t *testing.T) {
	policy := rm.NewPolicyID()
	file := filepath.Join(t.TempDir(), "state", "memory-peaks.toml")
	ms := meter.New(file)
	job, idle, failed, running := rm.NewAttemptID(), rm.NewAttemptID(), rm.NewAttemptID(), rm.NewAttemptID()
	now := time.Now()
	ms.Record(job, policy, now, tree(6<<30, 0))
	ms.Record(idle, policy, now, tree(1<<20, 0))
	ms.Record(failed, policy, now, tree(2<<20, 0))
	ms.Record(running, policy, now, tree(3<<30, 0))
	rss, ok := ms.CurrentRSS(job)
	require.True(t, ok)
	assert.Equal(t, uint64(6<<30), rss)

	ms.Ended(job, rm.Outcome{Kind: rm.CompletedJob})
	ms.Ended(idle, rm.Outcome{Kind: rm.ExitedIdleWithoutWork})
	ms.Ended(failed, rm.FailedWith(rm.ProcessExitedUnexpectedly, "exit code 1"))
	assert.Equal(t, []uint64{6 << 30}, ms.PeaksOf(policy), "an idle exit and a runner failure say nothing of the jobs")
	_, ok = ms.CurrentRSS(job)
	assert.False(t, ok, "gone once its peak is kept")
	ms.Ended(job, rm.Outcome{Kind: rm.CompletedJob})
	assert.Equal(t, []uint64{6 << 30}, ms.PeaksOf(policy), "kept once")

	// GitHub's word that the idle one ran a job after all, after its
	// conclusion: its peak is kept then.
	_, ok = ms.Peek(idle)
	require.True(t, ok, "an idle exit's meter waits for a correction")
	ms.Ended(idle, rm.Outcome{Kind: rm.CompletedJob})
	assert.Equal(t, []uint64{6 << 30, 1 << 20}, ms.PeaksOf(policy))

	// The running one is not ended: nothing kept yet.
	_, ok = ms.CurrentRSS(running)
	assert.True(t, ok)
	// Kept across a restart.
	assert.Equal(t, []uint64{6 << 30, 1 << 20}, meter.New(file).PeaksOf(policy))
}

func TestEndedUnmeteredAttempt(t *testing.T) {
	ms := meter.New("")
	ms.Ended(rm.NewAttemptID(), rm.Outcome{Kind: rm.CompletedJob}) // never sampled (a launch that failed)
	noPolicy := rm.NewAttemptID()
	ms.Record(noPolicy, rm.PolicyID{}, time.Now(), tree(1<<30, 0))
	ms.Ended(noPolicy, rm.Outcome{Kind: rm.CompletedJob})
	_, ok := ms.CurrentRSS(noPolicy)
	assert.False(t, ok, "gone")
	assert.Empty(t, ms.PeaksOf(rm.PolicyID{}), "a meter of no policy keeps no peak")
}

func TestPeaksKept(t *testing.T) {
	policy := rm.NewPolicyID()
	file := filepath.Join(t.TempDir(), "memory-peaks.toml")
	ms := meter.New(file)
	var want []uint64
	for i := range meter.PeaksKept + 5 {
		a := rm.NewAttemptID()
		peak := uint64(i+1) << 20
		ms.Record(a, policy, time.Now(), tree(peak, 0))
		ms.Ended(a, rm.Outcome{Kind: rm.CompletedJob})
		want = append(want, peak)
	}
	want = want[len(want)-meter.PeaksKept:]
	assert.Equal(t, want, ms.PeaksOf(policy), "the newest 20, oldest first")
	assert.Equal(t, want, meter.New(file).PeaksOf(policy))
}

// failing is a journal whose reads of live attempts fail while down is
// set.
type failing struct {
	store.Store
	down bool
}

var errDown = errors.New("journal down")

func (f *failing) LiveAttempts(ctx context.Context, host rm.HostID) ([]rm.Attempt, error) {
	if f.down {
		return nil, errDown
	}
	return f.Store.LiveAttempts(ctx, host)
}

// TestSampleOnceFailedReadChangesNothing: while the journal cannot be
// read, nothing is sampled and no runner is announced gone; once it reads
// again, both resume.
func TestSampleOnceFailedReadChangesNothing(t *testing.T) {
	st, host, policy := journal(t, "acme/repo", 2)
	self, err := platform.StartTime(os.Getpid())
	require.NoError(t, err)
	child := exec.Command(os.Args[0], "-test.run=^$")
	require.NoError(t, child.Run()) // its pid names nothing now
	a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).
		ProcessID(os.Getpid()).ProcessStart(self).Build()
	gone := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(2).
		ProcessID(child.Process.Pid).Build()
	for _, x := range []rm.Attempt{a, gone} {
		require.NoError(t, st.RecordAttempt(t.Context(), x))
	}
	ms := meter.New("")
	j := &failing{Store: st, down: true}
	assert.Empty(t, ms.SampleOnce(j, host.ID), "no runner is gone on a journal that cannot be read")
	_, ok := ms.Peek(a.ID)
	assert.False(t, ok, "nothing sampled")

	j.down = false
	assert.Equal(t, []rm.PolicyID{policy.ID}, ms.SampleOnce(j, host.ID))
	u, ok := ms.Peek(a.ID)
	require.True(t, ok)
	assert.Equal(t, uint32(1), u.Samples)

	// Down again: what was sampled stays as it is.
	j.down = true
	assert.Empty(t, ms.SampleOnce(j, host.ID))
	u, ok = ms.Peek(a.ID)
	require.True(t, ok)
	assert.Equal(t, uint32(1), u.Samples)
}

func TestExpectedPeak(t *testing.T) {
	const est = 2 << 30
	seq := func(n int, unit uint64) []uint64 {
		var s []uint64
		for i := n; i >= 1; i-- { // newest first, to show order does not matter
			s = append(s, uint64(i)*unit)
		}
		return s
	}
	tests := []struct {
		name  string
		peaks []uint64
		want  uint64
	}{
		{"None", nil, est},
		{"One", []uint64{1000}, 1100},
		{"Two", []uint64{1000, 2000}, 2200},
		{"NineIsTheMax", seq(9, 100), 990},
		{"Ten", seq(10, 100), 990},
		{"Twenty", seq(20, 100), 1980},
		{"OneOutlierOfTwenty", append(repeat(100, 19), 10_000), 110},
		{"TwoOutliersOfTwenty", append([]uint64{10_000, 9_000}, repeat(100, 18)...), 110},
		{"ThreeHeavyOfTwenty", append([]uint64{10_000, 9_000, 8_000}, repeat(100, 17)...), 8800},
		{"Saturates", []uint64{math.MaxUint64}, math.MaxUint64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := meter.New("")
			p := rm.NewPolicyID()
			if tt.peaks != nil {
				ms.SetPeaks(p, tt.peaks)
			}
			assert.Equal(t, tt.want, ms.ExpectedPeak(p, est))
			if tt.peaks != nil {
				assert.Equal(t, tt.peaks, ms.PeaksOf(p), "the banked order is untouched")
			}
		})
	}
}

func repeat(v uint64, n int) []uint64 {
	s := make([]uint64, n)
	for i := range s {
		s[i] = v
	}
	return s
}
