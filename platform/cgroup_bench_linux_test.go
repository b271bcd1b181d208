//go:build linux

package platform

import (
	"os/exec"
	"testing"

	rm "github.com/runner-manager/runner-manager"
)

// BenchmarkContainedSample is one sampling pass over 50 attempts on a host
// of 2,000 processes, each attempt's tree (a root and 39 children) in a
// cgroup of its own, three ways side by side on the same fleet:
//
//   - ProcFloor: a bare read of every /proc/<pid>/stat, the least any walk
//     of the process table costs;
//   - ProcTrees: the /proc fallback (SampleTrees over the 50 roots);
//   - Cgroups: each attempt's group read (Usage) and its runner's identity
//     checked in the process table (Alive): O(attempts);
//   - CgroupsWatched: what the meters do for runners the launcher started
//     or adopted: the group read, and the runner's exit notification
//     looked at instead of the process table (RunnerRunning).
//
// The budget: the cgroup pass ≤ 0.1 × ProcFloor. Run:
//
//	go test -run '^$' -bench ContainedSample -benchtime 200x ./platform/
func BenchmarkContainedSample(b *testing.B) {
	c, err := OpenCgroups(CgroupScope(b.TempDir()))
	if err != nil {
		b.Skipf("no cgroups here: %v", err)
	}
	b.Logf("cgroups: %s", c)
	groups := make([]*Cgroup, fleetRoots)
	ids := make([]rm.AttemptID, fleetRoots)
	b.Cleanup(func() {
		for _, g := range groups {
			if g != nil {
				_, _ = g.Empty(0)
				_ = g.Remove()
			}
		}
		_ = c.Close()
	})
	roots := startFleetWith(b, func(i int, cmd *exec.Cmd) error {
		ids[i] = rm.NewAttemptID()
		g, err := c.Create(ids[i])
		if err != nil {
			return err
		}
		groups[i] = g
		return g.Start(cmd)
	})
	starts := make([]uint64, len(roots))
	for i, pid := range roots {
		if starts[i], err = StartTime(pid); err != nil {
			b.Fatal(err)
		}
	}

	// The launcher's exit notifications: a channel per runner, closed at
	// its exit (backend/native watches a pidfd); the roots outlive the
	// benchmark.
	dones := make([]chan struct{}, len(roots))
	for i := range roots {
		dones[i] = make(chan struct{})
	}

	b.Run("ProcFloor", func(b *testing.B) {
		dirents, stat, path := make([]byte, 64<<10), make([]byte, 4<<10), make([]byte, 0, 32)
		procs := 0
		cpu := processCPU()
		for b.Loop() {
			procs = procFloor(dirents, stat, path)
		}
		reportCPU(b, cpu)
		b.ReportMetric(float64(procs), "procs")
	})
	b.Run("ProcTrees", func(b *testing.B) {
		b.ReportAllocs()
		var got map[int]TreeUsage
		cpu := processCPU()
		for b.Loop() {
			got = SampleTrees(roots)
		}
		reportCPU(b, cpu)
		if len(got) != fleetRoots {
			b.Fatalf("sampled %d of %d roots", len(got), fleetRoots)
		}
	})
	b.Run("Cgroups", func(b *testing.B) {
		b.ReportAllocs()
		var u rm.GroupUsage
		cpu := processCPU()
		for b.Loop() {
			for i, a := range ids {
				g, ok := c.Find(a)
				if !ok {
					b.Fatalf("attempt %s has no group", a)
				}
				if u, err = g.Usage(); err != nil {
					b.Fatal(err)
				}
				if !Alive(roots[i], starts[i]) {
					b.Fatalf("root %d is gone", roots[i])
				}
			}
		}
		reportCPU(b, cpu)
		if u.CPUTime <= 0 || u.MemoryBytes == 0 {
			b.Fatalf("a group's usage is empty: %+v", u)
		}
		if n, err := groups[0].Processes(); err != nil || n != 1+fleetChildren {
			b.Fatalf("a group holds %d processes (%v), want %d", n, err, 1+fleetChildren)
		}
	})
	b.Run("CgroupsWatched", func(b *testing.B) {
		b.ReportAllocs()
		cpu := processCPU()
		for b.Loop() {
			for i, a := range ids {
				g, ok := c.Find(a)
				if !ok {
					b.Fatalf("attempt %s has no group", a)
				}
				if _, err := g.Usage(); err != nil {
					b.Fatal(err)
				}
				select {
				case <-dones[i]:
					b.Fatalf("root %d is gone", roots[i])
				default:
				}
			}
		}
		reportCPU(b, cpu)
	})
}
