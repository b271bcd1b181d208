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
	"github.com/runner-manager/runner-manager/store/storetest"
)

func tree(rss uint64, cpuMs int64) platform.TreeUsage {
	return platform.TreeUsage{RSSBytes: rss, CPUTime: time.Duration(cpuMs) * time.Millisecond, Processes: 2}
}

// journal is a journal with this host and one active policy of it.
func journal(t *testing.T, repo string, max int) (*store.SQLite, rm.Host, rm.Policy) {
	t.Helper()
	st := storetest.MustOpen(t)
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
	u, ok := ms.Take(a)
	require.True(t, ok, "measured")
	assert.Equal(t, rm.AttemptUsage{
		PeakRSSBytes:      500,
		CPUAvgMillicores:  875,
		CPUPeakMillicores: 2000,
		Samples:           4,
	}, u)
	_, ok = ms.Take(a)
	assert.False(t, ok, "taken once")
	_, ok = ms.CurrentRSS(a)
	assert.False(t, ok, "a meter of no policy goes once taken")
}

func TestMeterSingleSample(t *testing.T) {
	ms := meter.New("")
	a := rm.NewAttemptID()
	ms.Record(a, rm.PolicyID{}, time.Now(), tree(42, 1_000))
	u, ok := ms.Take(a)
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
	_, ok = ms.Take(a)
	assert.True(t, ok, "a peek takes nothing")
}

func TestMeterBackwardsClock(t *testing.T) {
	ms := meter.New("")
	a := rm.NewAttemptID()
	now := time.Now()
	ms.Record(a, rm.PolicyID{}, now, tree(1, 0))
	ms.Record(a, rm.PolicyID{}, now.Add(-time.Second), tree(1, 1_000))
	u, ok := ms.Take(a)
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
	_, ok := ms.Take(live)
	assert.True(t, ok, "live: kept")
	_, ok = ms.Take(stale)
	assert.False(t, ok, "stale: forgotten")
	_, ok = ms.Take(recent)
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
	assert.Equal(t, []rm.ScaleTarget{policy.Target}, ms.SampleOnce(st, host.ID))
	assert.Empty(t, ms.SampleOnce(st, host.ID), "not announced again at once")
	// Still live a while later (its pass could not conclude it): again.
	ms.AgeExited(meter.AnnounceAgain)
	assert.Equal(t, []rm.ScaleTarget{policy.Target}, ms.SampleOnce(st, host.ID))

	u, ok := ms.Take(running)
	assert.True(t, ok, "the live runner was sampled")
	assert.Equal(t, uint32(3), u.Samples)
	assert.NotZero(t, u.PeakRSSBytes)
	_, ok = ms.Take(exited)
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
	assert.Equal(t, []rm.ScaleTarget{policy.Target}, ms.SampleOnce(st, host.ID))
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

func TestBankEnded(t *testing.T) {
	st, _, policy := journal(t, "acme/repo", 2)
	ended := func(state rm.AttemptState, o rm.Outcome) rm.AttemptID {
		a := storetest.NewAttempt().Policy(policy.ID).State(state).Outcome(o).Build()
		require.NoError(t, st.RecordAttempt(t.Context(), a))
		return a.ID
	}
	job := ended(rm.StateFinished, rm.Outcome{Kind: rm.CompletedJob})
	idle := ended(rm.StateFinished, rm.Outcome{Kind: rm.ExitedIdleWithoutWork})
	failed := ended(rm.StateFailed, rm.FailedWith(rm.ProcessExitedUnexpectedly, "exit code 1"))
	// Still running, but missing from a live set (as a failed read would
	// leave it): not concluded, so not banked yet.
	running := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), running))

	file := filepath.Join(t.TempDir(), "state", "memory-peaks.toml")
	ms := meter.New(file)
	now := time.Now()
	ms.Record(job, policy.ID, now, tree(6<<30, 0))
	ms.Record(idle, policy.ID, now, tree(1<<20, 0))
	ms.Record(failed, policy.ID, now, tree(2<<20, 0))
	ms.Record(running.ID, policy.ID, now, tree(3<<30, 0))
	rss, ok := ms.CurrentRSS(job)
	require.True(t, ok)
	assert.Equal(t, uint64(6<<30), rss)

	ms.BankEnded(st, nil)
	assert.Equal(t, []uint64{6 << 30}, ms.PeaksOf(policy.ID), "an idle exit and a runner failure say nothing of the jobs")
	// Reported once whether banked before or after.
	_, ok = ms.Take(job)
	assert.True(t, ok)
	_, ok = ms.Take(job)
	assert.False(t, ok)
	_, ok = ms.CurrentRSS(job)
	assert.False(t, ok, "gone once banked and reported")

	// The running one was left for later, and is banked once it ends.
	finished := storetest.NewAttempt().ID(running.ID).Policy(policy.ID).State(rm.StateFinished).Outcome(rm.Outcome{Kind: rm.CompletedJob}).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), finished))
	ms.BankEnded(st, nil)
	ms.BankEnded(st, nil)
	assert.Equal(t, []uint64{6 << 30, 3 << 30}, ms.PeaksOf(policy.ID), "banked once")
	// Kept across a restart.
	assert.Equal(t, []uint64{6 << 30, 3 << 30}, meter.New(file).PeaksOf(policy.ID))
}

func TestBankEndedUnknownAttempt(t *testing.T) {
	st, _, policy := journal(t, "acme/repo", 2)
	ms := meter.New("")
	cleaned := rm.NewAttemptID() // never in the journal, or cleaned from it
	ms.Record(cleaned, policy.ID, time.Now(), tree(1<<30, 0))
	ms.BankEnded(st, nil)
	assert.Empty(t, ms.PeaksOf(policy.ID), "nothing says it ran a job")
	_, ok := ms.Take(cleaned)
	assert.True(t, ok)
	_, ok = ms.CurrentRSS(cleaned)
	assert.False(t, ok, "judged, then reported: gone")
}

func TestPeaksKept(t *testing.T) {
	st, _, policy := journal(t, "acme/repo", 2)
	file := filepath.Join(t.TempDir(), "memory-peaks.toml")
	ms := meter.New(file)
	var want []uint64
	for i := range meter.PeaksKept + 5 {
		a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateFinished).Build()
		require.NoError(t, st.RecordAttempt(t.Context(), a))
		peak := uint64(i+1) << 20
		ms.Record(a.ID, policy.ID, time.Now(), tree(peak, 0))
		ms.BankEnded(st, nil)
		want = append(want, peak)
	}
	want = want[len(want)-meter.PeaksKept:]
	assert.Equal(t, want, ms.PeaksOf(policy.ID), "the newest 20, oldest first")
	assert.Equal(t, want, meter.New(file).PeaksOf(policy.ID))
}

// failing is a journal whose reads of policies or of a policy's attempts
// fail, counting the attempts it is asked about.
type failing struct {
	store.Store
	policies, active bool
	asked            int
}

var errDown = errors.New("journal down")

func (f *failing) Policies(ctx context.Context) ([]rm.Policy, error) {
	if f.policies {
		return nil, errDown
	}
	return f.Store.Policies(ctx)
}

func (f *failing) ActiveAttempts(ctx context.Context, p rm.PolicyID) ([]rm.Attempt, error) {
	if f.active {
		return nil, errDown
	}
	return f.Store.ActiveAttempts(ctx, p)
}

func (f *failing) Attempt(ctx context.Context, id rm.AttemptID) (rm.Attempt, error) {
	f.asked++
	return f.Store.Attempt(ctx, id)
}

func TestSampleOnceFailedReadConcludesNothing(t *testing.T) {
	for _, tt := range []struct {
		name             string
		policies, active bool
	}{
		{"Policies", true, false},
		{"ActiveAttempts", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st, host, policy := journal(t, "acme/repo", 2)
			self, err := platform.StartTime(os.Getpid())
			require.NoError(t, err)
			a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).
				ProcessID(os.Getpid()).ProcessStart(self).Build()
			require.NoError(t, st.RecordAttempt(t.Context(), a))
			ms := meter.New("")
			assert.Empty(t, ms.SampleOnce(st, host.ID))
			peak, ok := ms.CurrentRSS(a.ID)
			require.True(t, ok, "sampled while it ran")

			a.State, a.Outcome = rm.StateFinished, rm.Outcome{Kind: rm.CompletedJob}
			require.NoError(t, st.RecordAttempt(t.Context(), a))
			down := &failing{Store: st, policies: tt.policies, active: tt.active}
			assert.Empty(t, ms.SampleOnce(down, host.ID))
			assert.Empty(t, ms.PeaksOf(policy.ID), "a failed read concludes nothing")
			assert.Zero(t, down.asked, "not even asked")

			up := &failing{Store: st}
			assert.Empty(t, ms.SampleOnce(up, host.ID))
			assert.Equal(t, []uint64{peak}, ms.PeaksOf(policy.ID), "banked once the journal reads again")
			assert.Equal(t, 1, up.asked)
		})
	}
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
