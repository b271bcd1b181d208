//go:build linux

package native_test

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
)

// BenchmarkNativeLaunch measures the manager's share of an attempt's
// start: from Launch called with the JIT configuration in hand to Launch
// returned with the listener running (os/exec's Start returns once execve
// succeeded). Each launch is timed alone; besides the mean (ns/op) it
// reports the p50, p99 and max of the launches in milliseconds (run
// -benchtime 200x or more for a p99 that is not the max). The goal
// (issue 25): p50 ≤ 20 ms, p99 ≤ 60 ms.
//
// The launcher is the daemon's by default: the job report on. What is
// timed is all Launch does: the attempt root, from an install the size of
// a real runner's bin/ (about 500 files), either built at launch ("cold":
// hard links, a dozen files and directories) or a spare root that the
// previous attempt's Cleanup prepared renamed into place ("warm", as in
// steady operation); the job report's hooks written into it; the
// attempt's cgroup; the runner's environment; the fork and exec; the read
// of its start time.
//
// The cgroup step happens only where the host lets the manager make
// cgroups (root, or a delegated subtree): "cgroup" makes the attempt's
// group at launch and starts the runner inside it (clone3 into a v2
// group; where v1 hierarchies are used, the fork from a thread moved into
// them and back), and is skipped, saying why, where no group can be
// made; "nocgroup" is the launcher without (WithoutCgroups), as where the
// host allows none. "disk" keeps install and data directory in the temp
// dir, "tmpfs" in /dev/shm: making a file costs what the filesystem asks.
//
// One launch runs first, untimed: the cgroups opened (the daemon opens
// them at start), a spare ready for "warm". Waiting for the listener to
// exit and Cleanup are not timed.
//
//	go test -run '^$' -bench NativeLaunch -benchtime 200x ./backend/native/
func BenchmarkNativeLaunch(b *testing.B) {
	shm, err := os.MkdirTemp("/dev/shm", "bench-")
	if err == nil {
		b.Cleanup(func() { os.RemoveAll(shm) })
	}
	for _, fs := range []string{"disk", "tmpfs"} {
		for _, root := range []string{"cold", "warm"} {
			for _, cgroup := range []bool{true, false} {
				name := fs + "/" + root + "/" + map[bool]string{true: "cgroup", false: "nocgroup"}[cgroup]
				b.Run(name, func(b *testing.B) {
					dir := b.TempDir()
					if fs == "tmpfs" {
						if shm == "" {
							b.Skip("no /dev/shm")
						}
						dir, err = os.MkdirTemp(shm, "")
						if err != nil {
							b.Fatal(err)
						}
					}
					benchLaunch(b, filepath.Join(dir, "runner"), filepath.Join(dir, "data"), root == "warm", cgroup)
				})
			}
		}
	}
}

func benchLaunch(b *testing.B, installed, data string, warm, cgroup bool) {
	for i := range 500 {
		path := filepath.Join(installed, "bin", fmt.Sprintf("dir%d", i%8), fmt.Sprintf("lib%d.dll", i))
		if i%8 == 0 {
			path = filepath.Join(installed, "bin", fmt.Sprintf("lib%d.dll", i))
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(path, make([]byte, 1024), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(installed, "bin", "Runner.Listener"), []byte("#!/bin/sh\nexit 0\n"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, d := range []string{"externals/node20", "externals/git"} {
		if err := os.MkdirAll(filepath.Join(installed, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []string{"run.sh", "config.sh", "env.sh", ".env", ".path"} {
		if err := os.WriteFile(filepath.Join(installed, f), []byte("#\n"), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	var logs logBuffer
	opts := []native.Option{native.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), native.WithJobReport("bench")}
	if !cgroup {
		opts = append(opts, native.WithoutCgroups())
	}
	l := native.NewLauncher(data, opts...)
	b.Cleanup(func() { _ = l.Close() })
	if in := l.CgroupsInUse(); cgroup && in == "" {
		b.Skipf("no cgroup can be made here (not root, nothing delegated): only nocgroup measures; launcher said: %s", logs.String())
	} else if cgroup {
		b.Logf("cgroups: %s", in)
	}
	cleaner := l
	if !warm {
		// Knows no install, so prepares no spare; finds the same cgroups.
		cleaner = native.NewLauncher(data, opts...)
		b.Cleanup(func() { _ = cleaner.Close() })
	}
	spares := filepath.Join(data, "attempts", ".spare")
	launch := func() time.Duration {
		id := rm.NewAttemptID()
		start := time.Now()
		p, err := l.Launch(b.Context(), rm.LaunchSpec{Attempt: id, RunnerDir: installed, JITConfig: "jit"})
		took := time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		<-p.Done()
		if err := cleaner.Cleanup(id, false); err != nil {
			b.Fatal(err)
		}
		if n, _ := os.ReadDir(spares); warm && len(n) == 0 {
			b.Fatal("Cleanup prepared no spare root: the next launch would be cold")
		}
		b.StartTimer()
		return took
	}
	launch()
	var took []time.Duration
	b.ResetTimer()
	for b.Loop() {
		took = append(took, launch())
	}
	b.StopTimer()
	slices.Sort(took)
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	b.ReportMetric(ms(nearestRank(took, 50)), "p50-ms")
	b.ReportMetric(ms(nearestRank(took, 99)), "p99-ms")
	b.ReportMetric(ms(took[len(took)-1]), "max-ms")
}

// nearestRank is the p-th percentile of sorted by nearest rank.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	i := (len(sorted)*p + 99) / 100
	return sorted[min(max(i, 1), len(sorted))-1]
}
