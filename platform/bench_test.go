//go:build linux

package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
)

// The budget (DESIGN.md §10): one look at a table of about 2,000 processes
// with 50 roots costs at most 1.5× BenchmarkProcFloor and is at least 10×
// faster than BenchmarkGopsutilNaive. Run:
//
//	go test -run '^$' -bench . -benchtime 20x ./platform/
const (
	fleetRoots    = 50
	fleetChildren = 39 // per root: 50 × (1 + 39) = 2,000 processes
)

// startFleet starts fleetRoots idle sh trees of fleetChildren sleeps each
// and returns the roots once every tree is complete. Cleanup stops them
// (each sh forwards SIGTERM to its sleeps and reaps them) and fails the
// benchmark if any process survived, zombies included.
func startFleet(b *testing.B) []int {
	b.Helper()
	return startFleetWith(b, func(_ int, cmd *exec.Cmd) error { return cmd.Start() })
}

// startFleetWith is startFleet with each root started by start.
func startFleetWith(b *testing.B, start func(i int, cmd *exec.Cmd) error) []int {
	b.Helper()
	script := fmt.Sprintf(`pids=""
trap 'kill $pids 2>/dev/null; wait; exit 0' TERM
i=0
while [ $i -lt %d ]; do sleep 600 & pids="$pids $!"; i=$((i+1)); done
wait
`, fleetChildren)
	var cmds []*exec.Cmd
	var roots []int
	b.Cleanup(func() { stopFleet(b, cmds) })
	for range fleetRoots {
		cmd := exec.Command("sh", "-c", script)
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := start(len(cmds), cmd); err != nil {
			b.Fatalf("start fleet root %d of %d: %v (ulimit -u?)", len(cmds)+1, fleetRoots, err)
		}
		cmds = append(cmds, cmd)
		roots = append(roots, cmd.Process.Pid)
	}
	var s ProcScanner
	deadline := time.Now().Add(2 * time.Minute)
	for {
		complete := 0
		for _, u := range s.Sample(roots) {
			if u.Processes == 1+fleetChildren {
				complete++
			}
		}
		if complete == fleetRoots {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d fleet trees complete after 2 minutes", complete, fleetRoots)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return roots
}

// stopFleet stops the roots and checks that every process of their trees
// is gone.
func stopFleet(b *testing.B, cmds []*exec.Cmd) {
	type ident struct {
		pid   int
		start uint64
	}
	// Everything under the roots, named by pid and start stamp.
	var s ProcScanner
	var procs []ident
	s.mu.Lock()
	if err := s.scan(); err != nil {
		b.Errorf("scan before stopping the fleet: %v", err)
	}
	s.index.build(s.entries)
	for _, cmd := range cmds {
		root, ok := s.index.slot[cmd.Process.Pid]
		if !ok {
			continue
		}
		stack := []int32{root}
		for len(stack) > 0 {
			i := stack[len(stack)-1]
			stack = append(stack[:len(stack)-1], s.index.kids[s.index.first[i]:s.index.first[i+1]]...)
			if start, err := s.StartTime(s.entries[i].pid); err == nil {
				procs = append(procs, ident{s.entries[i].pid, start})
			}
		}
	}
	s.mu.Unlock()

	var wg sync.WaitGroup
	for _, cmd := range cmds {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		wg.Go(func() {
			done := make(chan struct{})
			go func() { _ = cmd.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
				<-done
				b.Errorf("fleet root %d ignored SIGTERM; killed its group", cmd.Process.Pid)
			}
		})
	}
	wg.Wait()
	left := 0
	for _, p := range procs {
		if start, err := s.StartTime(p.pid); err == nil && start == p.start {
			left++
		} else if err != nil && !errors.Is(err, rm.ErrProcessGone) {
			b.Errorf("check process %d: %v", p.pid, err)
		}
	}
	if left > 0 {
		b.Errorf("%d of %d fleet processes outlived the fleet", left, len(procs))
	}
}

// procFloor is the least any sampler must do: list /proc and read every
// /proc/<pid>/stat, with the same system calls ProcScanner makes and
// nothing else. It returns how many stat files it read.
func procFloor(dirents, stat, path []byte) int {
	dir, err := unix.Open("/proc", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		panic(err)
	}
	defer unix.Close(dir)
	read := 0
	for {
		n, err := unix.Getdents(dir, dirents)
		if err != nil || n <= 0 {
			return read
		}
		for buf := dirents[:n]; len(buf) > 0; {
			reclen := int(*(*uint16)(unsafe.Pointer(&buf[16])))
			name := buf[19:reclen]
			name = name[:bytes.IndexByte(name, 0)]
			buf = buf[reclen:]
			if _, ok := parsePID(name); !ok {
				continue
			}
			path = append(append(append(path[:0], name...), "/stat"...), 0)
			fd, err := openat(dir, path)
			if err != nil {
				continue
			}
			if m, _ := unix.Read(fd, stat); m > 0 {
				read++
			}
			unix.Close(fd)
		}
	}
}

// processCPU is the user + system time this process used so far. Beside
// ns/op (wall time, which a busy machine inflates), the benchmarks report
// cpu-ns/op: what one look costs in CPU.
func processCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, since time.Duration) {
	b.ReportMetric(float64(processCPU()-since)/float64(b.N), "cpu-ns/op")
}

func BenchmarkProcFloor(b *testing.B) {
	startFleet(b)
	dirents, stat, path := make([]byte, 64<<10), make([]byte, 4<<10), make([]byte, 0, 32)
	procs := 0
	cpu := processCPU()
	for b.Loop() {
		procs = procFloor(dirents, stat, path)
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(procs), "procs")
}

// BenchmarkProcFloorStdlib is the floor written plainly (os.ReadDir,
// os.ReadFile), to show what the raw system calls save.
func BenchmarkProcFloorStdlib(b *testing.B) {
	startFleet(b)
	procs := 0
	cpu := processCPU()
	for b.Loop() {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			b.Fatal(err)
		}
		procs = 0
		for _, e := range entries {
			if _, ok := parsePID([]byte(e.Name())); !ok {
				continue
			}
			if _, err := os.ReadFile("/proc/" + e.Name() + "/stat"); err == nil {
				procs++
			}
		}
	}
	reportCPU(b, cpu)
	b.ReportMetric(float64(procs), "procs")
}

func BenchmarkSampleTrees(b *testing.B) {
	roots := startFleet(b)
	b.ReportAllocs()
	var got map[int]TreeUsage
	cpu := processCPU()
	for b.Loop() {
		got = SampleTrees(roots)
	}
	reportCPU(b, cpu)
	b.StopTimer()
	if len(got) != fleetRoots {
		b.Fatalf("sampled %d of %d roots", len(got), fleetRoots)
	}
	for root, u := range got {
		if u.Processes != 1+fleetChildren {
			b.Fatalf("root %d: %d processes, want %d", root, u.Processes, 1+fleetChildren)
		}
	}
	b.ReportMetric(float64(len(defaultScanner.entries)), "procs")
}

// BenchmarkGopsutilNaive is the portable way, which other systems run
// (gopsutilSampleTrees): process.Processes() plus Ppid, MemoryInfo and Times
// per process, with gopsutil's defaults (no boot-time cache), then the same
// tree walk.
func BenchmarkGopsutilNaive(b *testing.B) {
	roots := startFleet(b)
	b.ReportAllocs()
	var got map[int]TreeUsage
	cpu := processCPU()
	for b.Loop() {
		got = gopsutilSampleTrees(roots)
	}
	reportCPU(b, cpu)
	b.StopTimer()
	if len(got) != fleetRoots {
		b.Fatalf("sampled %d of %d roots", len(got), fleetRoots)
	}
	for root, u := range got {
		if u.Processes != 1+fleetChildren {
			b.Fatalf("root %d: %d processes, want %d", root, u.Processes, 1+fleetChildren)
		}
	}
}
