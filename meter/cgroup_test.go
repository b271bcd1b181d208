package meter_test

import (
	"bytes"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// groups is a launcher's cgroups as the meters see them, set by the test.
type groups struct {
	where   string
	mu      sync.Mutex
	usage   map[rm.AttemptID]rm.GroupUsage
	memory  map[rm.AttemptID]rm.GroupMemory
	running map[rm.AttemptID]bool
	reads   int
}

func (g *groups) GroupUsage(a rm.AttemptID) (rm.GroupUsage, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.reads++
	u, ok := g.usage[a]
	return u, ok
}

func (g *groups) GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	m, ok := g.memory[a]
	return m, ok
}

func (g *groups) RunnerRunning(a rm.AttemptID, pid int, start uint64) (bool, bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r, ok := g.running[a]
	return r, ok
}

func (g *groups) SetMemoryLimit(rm.AttemptID, uint64) error { return nil }

func (g *groups) CgroupsInUse() string {
	if g.where == "" {
		return "cgroup v2 /test (membership)"
	}
	return g.where
}

var (
	_ rm.GroupMeter      = (*groups)(nil)
	_ rm.MemoryContainer = (*groups)(nil)
)

func TestMeterFromGroups(t *testing.T) {
	st, host, policy := journal(t, "acme/repo", 4)
	grouped := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(1001).ProcessStart(7).Build()
	plain := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(2).ProcessID(1002).ProcessStart(8).Build()
	for _, a := range []rm.Attempt{grouped, plain} {
		require.NoError(t, st.RecordAttempt(t.Context(), a))
	}
	g := &groups{
		usage:   map[rm.AttemptID]rm.GroupUsage{grouped.ID: {MemoryBytes: 300 << 20, CPUTime: time.Second}},
		running: map[rm.AttemptID]bool{grouped.ID: true},
	}
	var logs bytes.Buffer
	ms := meter.New("", meter.WithGroups(g), meter.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	assert.Contains(t, logs.String(), "metering: each attempt from its cgroup")
	assert.Contains(t, logs.String(), "cgroup v2 /test")
	var looked [][]int
	ms.SetSampler(func(pids []int) map[int]platform.TreeUsage {
		looked = append(looked, pids)
		return map[int]platform.TreeUsage{1002: tree(50<<20, 100)}
	})

	require.Empty(t, ms.SampleOnce(st, host.ID))
	assert.Equal(t, [][]int{{1002}}, looked, "only the attempt without a group costs a look at the process table")
	u, ok := ms.Peek(grouped.ID)
	require.True(t, ok)
	assert.Equal(t, uint64(300<<20), u.PeakRSSBytes)
	assert.Equal(t, rm.UsageFromCgroup, u.Source)
	u, ok = ms.Peek(plain.ID)
	require.True(t, ok)
	assert.Equal(t, uint64(50<<20), u.PeakRSSBytes)
	assert.Equal(t, rm.UsageFromProcessTree, u.Source)

	// Every attempt in a group: no look at the table at all.
	looked = nil
	g.mu.Lock()
	g.usage[plain.ID] = rm.GroupUsage{MemoryBytes: 60 << 20}
	g.running[plain.ID] = true
	g.mu.Unlock()
	require.Empty(t, ms.SampleOnce(st, host.ID))
	assert.Empty(t, looked)

	// The launcher says the grouped runner exited: announced at once.
	g.mu.Lock()
	g.running[grouped.ID] = false
	g.mu.Unlock()
	assert.Equal(t, []rm.PolicyID{policy.ID}, ms.SampleOnce(st, host.ID))
}

// Two launchers with groups (native runners and VMs): each attempt is
// read from the group of the launcher that holds it, and its exit asked
// of that launcher; the process table is not looked at.
func TestMeterFromGroupsOfTwoLaunchers(t *testing.T) {
	st, host, policy := journal(t, "acme/repo", 4)
	runner := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(1001).ProcessStart(7).Build()
	qemu := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(2).ProcessID(1002).ProcessStart(8).Build()
	for _, a := range []rm.Attempt{runner, qemu} {
		require.NoError(t, st.RecordAttempt(t.Context(), a))
	}
	native := &groups{where: "native groups",
		usage:   map[rm.AttemptID]rm.GroupUsage{runner.ID: {MemoryBytes: 100 << 20, CPUTime: time.Second}},
		running: map[rm.AttemptID]bool{runner.ID: true}}
	vms := &groups{where: "vm groups",
		usage:   map[rm.AttemptID]rm.GroupUsage{qemu.ID: {MemoryBytes: 400 << 20, CPUTime: 2 * time.Second}},
		running: map[rm.AttemptID]bool{qemu.ID: true}}
	var logs bytes.Buffer
	ms := meter.New("", meter.WithGroups(native), meter.WithGroups(vms), meter.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	assert.Contains(t, logs.String(), "native groups; vm groups")
	var looked [][]int
	ms.SetSampler(func(pids []int) map[int]platform.TreeUsage {
		looked = append(looked, pids)
		return map[int]platform.TreeUsage{}
	})

	require.Empty(t, ms.SampleOnce(st, host.ID))
	assert.Empty(t, looked, "both attempts are in groups")
	for a, want := range map[rm.AttemptID]uint64{runner.ID: 100 << 20, qemu.ID: 400 << 20} {
		u, ok := ms.Peek(a)
		require.True(t, ok)
		assert.Equal(t, want, u.PeakRSSBytes)
		assert.Equal(t, rm.UsageFromCgroup, u.Source)
	}

	// The VM launcher says its QEMU exited: announced at once, though the
	// native launcher knows nothing of it.
	vms.mu.Lock()
	vms.running[qemu.ID] = false
	vms.mu.Unlock()
	assert.Equal(t, []rm.PolicyID{policy.ID}, ms.SampleOnce(st, host.ID))
}

func TestMeterOOMKilledPeakCounts(t *testing.T) {
	st, host, policy := journal(t, "acme/repo", 4)
	a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(1001).ProcessStart(7).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a))
	g := &groups{
		usage:   map[rm.AttemptID]rm.GroupUsage{a.ID: {MemoryBytes: 200 << 20}},
		running: map[rm.AttemptID]bool{a.ID: true},
		memory:  map[rm.AttemptID]rm.GroupMemory{a.ID: {PeakBytes: 512 << 20, LimitBytes: 512 << 20, OOMKills: 1}},
	}
	ms := meter.New("", meter.WithGroups(g))
	ms.SetSampler(func([]int) map[int]platform.TreeUsage { return map[int]platform.TreeUsage{} })
	require.Empty(t, ms.SampleOnce(st, host.ID))

	// Killed at its limit between two samples: the kernel's peak is its peak.
	u, ok := ms.Peek(a.ID)
	require.True(t, ok)
	assert.Equal(t, uint64(512<<20), u.PeakRSSBytes, "the samples saw 200 MiB; the job reached the limit")
	b, err := a.Conclude(rm.FailedWith(rm.OOMKilled, "killed at its memory limit"), time.Now())
	require.NoError(t, err)
	require.NoError(t, st.RecordAttempt(t.Context(), b))
	ms.Ended(a.ID, b.Outcome)
	assert.Equal(t, []uint64{512 << 20}, ms.PeaksOf(policy.ID), "an OOM-killed job's peak is kept: the next limit grows")
}

// memoryOnly is a launcher that accounts its attempts' memory in groups
// of its own but gives the meters no usage (a container launcher).
type memoryOnly struct {
	memory map[rm.AttemptID]rm.GroupMemory
}

func (memoryOnly) SetMemoryLimit(rm.AttemptID, uint64) error { return nil }

func (m memoryOnly) GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool) {
	g, ok := m.memory[a]
	return g, ok
}

// An attempt of another launcher (WithGroupMemory) killed at its limit
// banks its limit too; the group meters' (WithGroups) are asked first.
func TestMeterOOMKilledPeakOfAnotherLauncher(t *testing.T) {
	st, host, policy := journal(t, "acme/repo", 4)
	boxed := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(1001).ProcessStart(7).Build()
	both := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(2).ProcessID(1002).ProcessStart(8).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), boxed))
	require.NoError(t, st.RecordAttempt(t.Context(), both))
	g := &groups{running: map[rm.AttemptID]bool{},
		memory: map[rm.AttemptID]rm.GroupMemory{both.ID: {PeakBytes: 1 << 30, LimitBytes: 1 << 30, OOMKills: 1}}}
	boxes := memoryOnly{memory: map[rm.AttemptID]rm.GroupMemory{
		boxed.ID: {PeakBytes: 300 << 20, LimitBytes: 384 << 20, OOMKills: 2},
		both.ID:  {PeakBytes: 300 << 20, LimitBytes: 384 << 20, OOMKills: 2},
	}}
	ms := meter.New("", meter.WithGroups(g), meter.WithGroupMemory(boxes))
	ms.SetSampler(func([]int) map[int]platform.TreeUsage {
		return map[int]platform.TreeUsage{1001: {RSSBytes: 100 << 20}, 1002: {RSSBytes: 100 << 20}}
	})
	require.Empty(t, ms.SampleOnce(st, host.ID))

	u, ok := ms.Peek(both.ID)
	require.True(t, ok)
	assert.Equal(t, uint64(1<<30), u.PeakRSSBytes, "the group meter's word comes first")
	u, ok = ms.Peek(boxed.ID)
	require.True(t, ok)
	assert.Equal(t, uint64(384<<20), u.PeakRSSBytes, "the container's limit, which the job reached")
	b, err := boxed.Conclude(rm.FailedWith(rm.OOMKilled, "killed at its memory limit"), time.Now())
	require.NoError(t, err)
	require.NoError(t, st.RecordAttempt(t.Context(), b))
	ms.Ended(boxed.ID, b.Outcome)
	assert.Equal(t, []uint64{384 << 20}, ms.PeaksOf(policy.ID))
}

func TestMeterLogsProcessTreeSource(t *testing.T) {
	var logs bytes.Buffer
	meter.New("", meter.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
	assert.Contains(t, logs.String(), "from its runner's process tree")
}
