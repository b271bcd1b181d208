package platform_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v4/process"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/platform"

	rm "github.com/runner-manager/runner-manager"
)

const helperEnv = "RM_TREE_HELPER"

// TestTreeHelperProcess is not a test: it is the child the tree tests start
// (this test binary re-executed with RM_TREE_HELPER set). Modes:
//
//	alloc:<MiB>:<ms>  touch every page of MiB mebibytes, burn ms of CPU,
//	                  then idle
//	burn              burn CPU without end
//	idle              do nothing
//
// It prints "ready <pid>" once set up and exits when its stdin closes.
func TestTreeHelperProcess(t *testing.T) {
	mode := os.Getenv(helperEnv)
	if mode == "" {
		t.Skip("the child of the process-tree tests; runs only re-executed")
	}
	var stop atomic.Bool
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		stop.Store(true)
	}()
	var keep []byte
	burning := false
	switch f := strings.Split(mode, ":"); f[0] {
	case "alloc":
		n, _ := strconv.Atoi(f[1])
		ms, _ := strconv.Atoi(f[2])
		keep = make([]byte, n*mib)
		for i := 0; i < len(keep); i += 4096 {
			keep[i] = 1
		}
		burnCPU(time.Duration(ms)*time.Millisecond, &stop)
	case "burn":
		burning = true
	case "idle":
	default:
		fmt.Fprintln(os.Stderr, "unknown helper mode", mode)
		os.Exit(2)
	}
	fmt.Printf("ready %d\n", os.Getpid())
	if burning {
		burnCPU(time.Hour, &stop)
	}
	for !stop.Load() {
		time.Sleep(10 * time.Millisecond)
	}
	runtime.KeepAlive(keep)
	os.Exit(0)
}

// burnCPU spins until this process used d of CPU time, or stop.
func burnCPU(d time.Duration, stop *atomic.Bool) {
	x := uint64(1)
	for !stop.Load() {
		for range 1 << 16 {
			x = x*6364136223846793005 + 1442695040888963407
		}
		var ru unix.Rusage
		_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
		if time.Duration(ru.Utime.Nano()+ru.Stime.Nano()) >= d {
			break
		}
	}
	if x == 0 {
		fmt.Print("") // keep x live
	}
}

// tree is a real process tree: a sh root whose children are helpers.
type tree struct {
	root    int
	helpers []int    // helper pids, ascending
	starts  []uint64 // their start stamps
	cmd     *exec.Cmd
	stdin   io.WriteCloser
}

// startTree starts sh with one helper child per mode and waits until every
// helper is ready. Cleanup stops the tree (the helpers exit when stdin
// closes; sh forwards SIGTERM to them) and checks every process was reaped:
// orphans would be zombies where pid 1 does not reap.
func startTree(t *testing.T, modes ...string) *tree {
	t.Helper()
	exe, err := os.Executable()
	require.NoError(t, err)
	var script strings.Builder
	// sh gives background children /dev/null for stdin: hand them the
	// pipe through fd 3.
	script.WriteString("exec 3<&0\npids=\"\"\ntrap 'kill $pids 2>/dev/null; wait; exit 0' TERM\n")
	for _, m := range modes {
		fmt.Fprintf(&script, "%s=%s \"$0\" -test.run='^TestTreeHelperProcess$' <&3 3<&- &\npids=\"$pids $!\"\n", helperEnv, m)
	}
	script.WriteString("wait\n")
	cmd := exec.Command("sh", "-c", script.String(), exe)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	tr := &tree{root: cmd.Process.Pid, cmd: cmd, stdin: stdin}
	t.Cleanup(func() { tr.stop(t) })

	ready := make(chan int)
	go func() {
		defer close(ready)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if pid, ok := strings.CutPrefix(sc.Text(), "ready "); ok {
				n, _ := strconv.Atoi(pid)
				ready <- n
			}
		}
	}()
	deadline := time.After(60 * time.Second)
	byPid := map[int]bool{}
	for len(byPid) < len(modes) {
		select {
		case pid, ok := <-ready:
			require.True(t, ok, "the tree ended before its helpers were ready")
			byPid[pid] = true
		case <-deadline:
			t.Fatalf("helpers not ready after 60s")
		}
	}
	// Helpers get ready in any order: tests tell them apart by what they
	// use, which is what is under test anyway.
	for pid := range byPid {
		tr.helpers = append(tr.helpers, pid)
	}
	slices.Sort(tr.helpers)
	for _, pid := range tr.helpers {
		start, err := platform.StartTime(pid)
		require.NoError(t, err)
		tr.starts = append(tr.starts, start)
	}
	return tr
}

func (tr *tree) stop(t *testing.T) {
	tr.stdin.Close()
	_ = syscall.Kill(tr.root, syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = tr.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-tr.root, syscall.SIGKILL)
		<-done
		t.Errorf("tree %d did not stop on SIGTERM; killed its group", tr.root)
	}
	for i, pid := range tr.helpers {
		if start, err := platform.StartTime(pid); err == nil && start == tr.starts[i] {
			t.Errorf("helper %d outlived its tree (state %c)", pid, procState(t, pid))
		}
	}
}

// procState reads a process's state letter from /proc, '?' when gone.
func procState(t *testing.T, pid int) byte {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return '?'
	}
	i := bytes.LastIndexByte(b, ')')
	require.Greater(t, len(b), i+2)
	return b[i+2]
}

func TestSampleTreesRealTree(t *testing.T) {
	tr := startTree(t, "alloc:64:300", "burn")
	alloc, burner := tr.helpers[0], tr.helpers[1]
	if procRSS(t, alloc) < procRSS(t, burner) {
		alloc, burner = burner, alloc
	}

	got := platform.SampleTrees([]int{tr.root, alloc, burner})
	require.Contains(t, got, tr.root)
	u1 := got[tr.root]
	assert.Equal(t, 3, u1.Processes, "sh and its two helpers")
	assert.Greater(t, u1.RSSBytes, uint64(64*mib), "the tree holds the 64 MiB its child touched")
	assert.GreaterOrEqual(t, got[alloc].RSSBytes, uint64(64*mib))
	assert.GreaterOrEqual(t, u1.RSSBytes, got[alloc].RSSBytes+got[burner].RSSBytes)
	assert.GreaterOrEqual(t, u1.CPUTime, 280*time.Millisecond, "the tree counts its child's CPU")
	assert.GreaterOrEqual(t, got[alloc].CPUTime, 280*time.Millisecond, "utime and stime each lose up to a tick")
	assert.Equal(t, 1, got[alloc].Processes)

	// The same figures as gopsutil reads them for the idle allocator.
	p, err := process.NewProcess(int32(alloc))
	require.NoError(t, err)
	mem, err := p.MemoryInfo()
	require.NoError(t, err)
	times, err := p.Times()
	require.NoError(t, err)
	assert.InDelta(t, float64(mem.RSS), float64(got[alloc].RSSBytes), 2*mib)
	assert.InDelta(t, (times.User + times.System), got[alloc].CPUTime.Seconds(), 0.05)

	// The burner keeps the tree's CPU time growing.
	require.Eventually(t, func() bool {
		return platform.SampleTrees([]int{tr.root})[tr.root].CPUTime >= u1.CPUTime+200*time.Millisecond
	}, 30*time.Second, 20*time.Millisecond)
}

// procRSS reads one process's RSS as SampleTrees does for a childless root.
func procRSS(t *testing.T, pid int) uint64 {
	u, ok := platform.SampleTrees([]int{pid})[pid]
	require.True(t, ok)
	return u.RSSBytes
}

func TestSampleTreesChildExits(t *testing.T) {
	tr := startTree(t, "alloc:1:400", "idle")
	var burner, idle int
	for _, pid := range tr.helpers {
		if platform.SampleTrees([]int{pid})[pid].CPUTime >= 370*time.Millisecond {
			burner = pid
		} else {
			idle = pid
		}
	}
	require.NotZero(t, burner)
	require.NotZero(t, idle)

	u1 := platform.SampleTrees([]int{tr.root})[tr.root]
	require.Equal(t, 3, u1.Processes)
	require.GreaterOrEqual(t, u1.CPUTime, 380*time.Millisecond, "utime and stime each lose up to a tick")

	require.NoError(t, syscall.Kill(burner, syscall.SIGTERM))
	var u2 platform.TreeUsage
	require.Eventually(t, func() bool {
		u2 = platform.SampleTrees([]int{tr.root})[tr.root]
		return u2.Processes == 2 // exited and reaped by sh
	}, 30*time.Second, 10*time.Millisecond)
	assert.Less(t, u2.CPUTime, u1.CPUTime-300*time.Millisecond, "the exited child took its CPU time out of the total")
	assert.Less(t, u2.RSSBytes, u1.RSSBytes)
	assert.NotContains(t, platform.SampleTrees([]int{burner}), burner)
	assert.Contains(t, platform.SampleTrees([]int{idle}), idle)
}

func TestSampleTreesRoots(t *testing.T) {
	t.Run("none", func(t *testing.T) {
		got := platform.SampleTrees(nil)
		assert.NotNil(t, got)
		assert.Empty(t, got)
	})
	t.Run("self", func(t *testing.T) {
		u, ok := platform.SampleTrees([]int{os.Getpid()})[os.Getpid()]
		require.True(t, ok)
		assert.GreaterOrEqual(t, u.Processes, 1)
		assert.Greater(t, u.RSSBytes, uint64(mib))
		assert.Positive(t, u.CPUTime)
	})
	t.Run("exited", func(t *testing.T) {
		cmd := exec.Command("sh", "-c", "exit 0")
		require.NoError(t, cmd.Run())
		assert.NotContains(t, platform.SampleTrees([]int{cmd.Process.Pid}), cmd.Process.Pid)
	})
}

func TestStartTimeAndAlive(t *testing.T) {
	// The /proc reader and the portable one (what other systems run).
	impls := []struct {
		name      string
		startTime func(int) (uint64, error)
		alive     func(int, uint64) bool
	}{
		{"proc", platform.StartTime, platform.Alive},
		{"gopsutil", platform.GopsutilStartTime, platform.GopsutilAlive},
	}
	for _, impl := range impls {
		t.Run(impl.name, func(t *testing.T) {
			self, err := impl.startTime(os.Getpid())
			require.NoError(t, err)
			assert.True(t, impl.alive(os.Getpid(), self))
			assert.False(t, impl.alive(os.Getpid(), self+1))

			cmd := exec.Command("sleep", "600")
			require.NoError(t, cmd.Start())
			waited := false
			t.Cleanup(func() {
				if !waited {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			})
			pid := cmd.Process.Pid
			start, err := impl.startTime(pid)
			require.NoError(t, err)
			assert.GreaterOrEqual(t, start, self, "started after this test binary")
			assert.True(t, impl.alive(pid, start))

			// Killed but not reaped: a zombie keeps its stamp and is not alive.
			require.NoError(t, cmd.Process.Kill())
			require.Eventually(t, func() bool { return procState(t, pid) == 'Z' }, 10*time.Second, 5*time.Millisecond)
			assert.False(t, impl.alive(pid, start))
			zstart, err := impl.startTime(pid)
			require.NoError(t, err)
			assert.Equal(t, start, zstart)

			// Reaped: gone.
			_ = cmd.Wait()
			waited = true
			_, err = impl.startTime(pid)
			require.ErrorIs(t, err, rm.ErrProcessGone)
			assert.False(t, impl.alive(pid, start))
			_, err = impl.startTime(0)
			require.ErrorIs(t, err, rm.ErrProcessGone)
		})
	}
}

func TestGopsutilSampleTrees(t *testing.T) {
	// The portable reader gives the /proc reader's figures for a quiet tree.
	tr := startTree(t, "alloc:32:200", "idle")
	roots := append([]int{tr.root, 999999999}, tr.helpers...)
	fast := platform.SampleTrees(roots)
	slow := platform.GopsutilSampleTrees(roots)
	require.Len(t, fast, 3, "all but the missing root")
	require.Len(t, slow, 3)
	for root, f := range fast {
		s, ok := slow[root]
		require.True(t, ok)
		assert.Equal(t, f.Processes, s.Processes)
		assert.InDelta(t, float64(f.RSSBytes), float64(s.RSSBytes), 4*mib)
		assert.InDelta(t, f.CPUTime.Seconds(), s.CPUTime.Seconds(), 0.1)
	}
	assert.Greater(t, slow[tr.root].RSSBytes, uint64(32*mib))
	assert.GreaterOrEqual(t, slow[tr.root].CPUTime, 180*time.Millisecond)
}
