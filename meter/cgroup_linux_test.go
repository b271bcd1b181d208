//go:build linux

package meter_test

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// allocEnv makes this test binary allocate and touch that many bytes,
// write $OUT/alloc.ready and sleep (TestAllocatingJobProcess).
const allocEnv = "METER_TEST_ALLOCATE"

// TestAllocatingJobProcess is the job's allocating process of
// TestMeterCountsALeavingChild; skipped in a normal run.
func TestAllocatingJobProcess(t *testing.T) {
	n, err := strconv.ParseUint(os.Getenv(allocEnv), 10, 64)
	if err != nil {
		t.Skip("the allocating job process of TestMeterCountsALeavingChild")
	}
	mem := make([]byte, n)
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 1
	}
	if err := os.WriteFile(filepath.Join(os.Getenv("OUT"), "alloc.ready"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Hour)
	runtime.KeepAlive(mem)
}

// leavingListener is a runner whose job starts an allocating process in
// a session of its own, forked away from the runner (setsid -f: it is
// init's child, outside the runner's tree), and waits for $OUT/stop.
const leavingListener = `#!/bin/sh
METER_TEST_ALLOCATE="$BYTES" setsid -f "$HELPER" -test.run='^TestAllocatingJobProcess$' >/dev/null 2>&1
while [ ! -e "$OUT/stop" ]; do sleep 0.05; done
exit 0
`

func installScript(t testing.TB, script string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "runner")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "bin", "Runner.Listener"), []byte(script), 0o755))
	return dir
}

// launchAttempt launches a runner for a new busy attempt of policy and
// records it in the journal.
func launchAttempt(t testing.TB, st store.Store, l *native.Launcher, policy rm.Policy, runner string, env ...string) (rm.Attempt, rm.Process) {
	t.Helper()
	a := storetest.NewAttempt().Policy(policy.ID).State(rm.StateBusy).GitHubRunnerID(1).Build()
	p, err := l.Launch(t.Context(), rm.LaunchSpec{Attempt: a.ID, RunnerDir: runner, JITConfig: "jit", Env: env})
	require.NoError(t, err)
	a.PID, a.ProcessStart = p.PID(), p.Start()
	require.NoError(t, st.RecordAttempt(t.Context(), a))
	return a, p
}

func TestMeterCountsALeavingChild(t *testing.T) {
	const alloc = 200 << 20
	for _, cgroup := range []bool{true, false} {
		name := map[bool]string{true: "Cgroup", false: "Fallback"}[cgroup]
		t.Run(name, func(t *testing.T) {
			st, host, policy := journal(t, "acme/repo", 1)
			var opts []native.Option
			if !cgroup {
				opts = append(opts, native.WithoutCgroups())
			}
			l := native.NewLauncher(t.TempDir(), opts...)
			t.Cleanup(func() { _ = l.Close() })
			if cgroup && l.CgroupsInUse() == "" {
				t.Skip("no cgroup can be made here (not root, nothing delegated): only the fallback is tested")
			}
			out := t.TempDir()
			a, p := launchAttempt(t, st, l, policy, installScript(t, leavingListener),
				"OUT="+out, "HELPER="+os.Args[0], fmt.Sprintf("BYTES=%d", alloc))
			t.Cleanup(func() {
				_ = os.WriteFile(filepath.Join(out, "stop"), nil, 0o644)
				<-p.Done()
				_ = l.Cleanup(a.ID, false)
			})
			ms := meter.New("", meter.WithGroups(l))
			require.Eventually(t, func() bool { _, err := os.Stat(filepath.Join(out, "alloc.ready")); return err == nil },
				30*time.Second, 10*time.Millisecond)
			require.Empty(t, ms.SampleOnce(st, host.ID))
			u, ok := ms.Peek(a.ID)
			require.True(t, ok)
			if cgroup {
				assert.Equal(t, rm.UsageFromCgroup, u.Source)
				assert.GreaterOrEqual(t, u.PeakRSSBytes, uint64(alloc), "the child that left the runner's tree is in the attempt's peak")
			} else {
				t.Logf("fallback: the peak is %d MiB; the child's 200 MiB outside the runner's tree is not counted", u.PeakRSSBytes>>20)
				assert.Equal(t, rm.UsageFromProcessTree, u.Source)
				assert.Less(t, u.PeakRSSBytes, uint64(alloc), "without a cgroup a process that left the tree is not seen")
			}
		})
	}
}

// fleetListener is a runner with 39 idle children: 50 of them make a
// host of 2,000 processes.
const fleetListener = `#!/bin/sh
trap 'kill $pids 2>/dev/null; exit 0' TERM
pids=""
i=0
while [ $i -lt 39 ]; do sleep 600 & pids="$pids $!"; i=$((i+1)); done
wait
`

// BenchmarkSampleOnceContained is the whole metering pass (journal reads,
// sampling, identity checks, the meters' update) over 50 attempts of 10
// policies on a host of 2,000 processes, each attempt a real runner
// launched by the native launcher in a cgroup of its own: from the groups
// and, side by side on the same runners, from the process table.
//
//	go test -run '^$' -bench SampleOnceContained -benchtime 100x ./meter/
func BenchmarkSampleOnceContained(b *testing.B) {
	st := sqlitetest.MustOpen(b)
	host := storetest.NewHost().Build()
	if err := st.PutHost(b.Context(), host); err != nil {
		b.Fatal(err)
	}
	l := native.NewLauncher(b.TempDir())
	if l.CgroupsInUse() == "" {
		b.Skip("no cgroups here")
	}
	runner := installScript(b, fleetListener)
	var procs []rm.Process
	var ids []rm.AttemptID
	b.Cleanup(func() {
		for i, p := range procs {
			_ = p.Stop(b.Context(), 5*time.Second)
			_ = l.Cleanup(ids[i], false)
		}
		_ = l.Close()
	})
	for i := range 10 {
		p := storetest.NewPolicy().Repository("acme/repo").Host(host.ID).Autoscale("set"+string(rune('a'+i)), 5).Active().Build()
		if err := st.InsertPolicy(b.Context(), p); err != nil {
			b.Fatal(err)
		}
		for range 5 {
			a, proc := launchAttempt(b, st, l, p, runner)
			procs, ids = append(procs, proc), append(ids, a.ID)
		}
	}
	deadline := time.Now().Add(2 * time.Minute)
	for _, p := range procs {
		for platform.SampleTrees([]int{p.PID()})[p.PID()].Processes < 40 {
			if time.Now().After(deadline) {
				b.Fatal("the runners' children did not all start")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	for _, src := range []string{rm.UsageFromProcessTree, rm.UsageFromCgroup} {
		b.Run(src, func(b *testing.B) {
			var opts []meter.Option
			if src == rm.UsageFromCgroup {
				opts = append(opts, meter.WithGroups(l))
			}
			ms := meter.New("", opts...)
			if gone := ms.SampleOnce(st, host.ID); len(gone) != 0 {
				b.Fatalf("runners seen gone: %v", gone)
			}
			cpu := processCPU()
			for b.Loop() {
				ms.SampleOnce(st, host.ID)
			}
			b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
			b.StopTimer()
			u, _ := ms.Peek(ids[0])
			if u.Source != src {
				b.Fatalf("metered from %q, want %q", u.Source, src)
			}
		})
	}
}

// processCPU is the user + system time this process used so far: beside
// wall time, which a busy machine inflates, what a pass costs in CPU.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
