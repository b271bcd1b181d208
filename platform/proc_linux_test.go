package platform_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform"

	rm "github.com/runner-manager/runner-manager"
)

// tick is USER_HZ: the unit of the time fields of a stat file.
const tick = 10 * time.Millisecond

func TestProcScannerFixture(t *testing.T) {
	page := uint64(os.Getpagesize())
	s := &platform.ProcScanner{Root: "testdata/proc"}
	got := s.Sample([]int{1, 2, 100, 104, 105, 200, 300, 999, 0, -1})

	want := map[int]platform.TreeUsage{
		// 1 holds everything but 105, whose parent 104 vanished.
		1:   {RSSBytes: (3000 + 1000 + 200 + 300 + 0 + 60) * page, CPUTime: (500 + 150 + 10 + 30 + 2 + 7) * tick, Processes: 6},
		2:   {RSSBytes: 0, CPUTime: 5 * tick, Processes: 1},
		100: {RSSBytes: (1000 + 200 + 300 + 0) * page, CPUTime: (150 + 10 + 30 + 2) * tick, Processes: 4},
		105: {RSSBytes: 500 * page, CPUTime: 42 * tick, Processes: 1},
		200: {RSSBytes: 60 * page, CPUTime: 7 * tick, Processes: 1},
	}
	assert.Equal(t, want, got, "absent: 104 (no stat), 300 (truncated stat), 999, 0, -1 (no such process)")
}

func TestProcScannerMissingRoot(t *testing.T) {
	s := &platform.ProcScanner{Root: filepath.Join(t.TempDir(), "nothing")}
	assert.Nil(t, s.Sample([]int{1}), "an unreadable table gives nil, not an empty map")

	s = &platform.ProcScanner{Root: t.TempDir()}
	got := s.Sample([]int{1})
	assert.NotNil(t, got)
	assert.Empty(t, got)
}

// fakeProc writes a procfs fixture of the given processes.
type fakeProc struct {
	t    *testing.T
	root string
}

func newFakeProc(t *testing.T) *fakeProc { return &fakeProc{t: t, root: t.TempDir()} }

func (f *fakeProc) add(pid, ppid int, comm string, state byte, utime, stime, start, rssPages uint64) {
	f.t.Helper()
	dir := filepath.Join(f.root, fmt.Sprint(pid))
	require.NoError(f.t, os.MkdirAll(dir, 0o755))
	line := fmt.Sprintf("%d (%s) %c %d %d %d 0 -1 4194304 0 0 0 0 %d %d 0 0 20 0 1 0 %d 1000 %d 18446744073709551615 0 0 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		pid, comm, state, ppid, pid, pid, utime, stime, start, rssPages)
	require.NoError(f.t, os.WriteFile(filepath.Join(dir, "stat"), []byte(line), 0o644))
}

func TestProcScannerTrees(t *testing.T) {
	page := uint64(os.Getpagesize())
	t.Run("deep", func(t *testing.T) {
		// A chain 1000 → 1001 → … → 1399, each using 1 tick and 2 pages.
		f := newFakeProc(t)
		const n = 400
		for i := range n {
			f.add(1000+i, 999+i, "sh", 'S', 1, 0, 1, 2)
		}
		got := (&platform.ProcScanner{Root: f.root}).Sample([]int{1000, 1000 + n/2, 1000 + n - 1})
		assert.Equal(t, map[int]platform.TreeUsage{
			1000:         {RSSBytes: 2 * n * page, CPUTime: n * tick, Processes: n},
			1000 + n/2:   {RSSBytes: 2 * n / 2 * page, CPUTime: n / 2 * tick, Processes: n / 2},
			1000 + n - 1: {RSSBytes: 2 * page, CPUTime: tick, Processes: 1},
		}, got)
	})
	t.Run("wide", func(t *testing.T) {
		f := newFakeProc(t)
		f.add(10, 1, "make", 'S', 3, 4, 1, 5)
		for i := range 200 {
			f.add(100+i, 10, "cc 1 (x)", 'R', 1, 1, 2, 1)
		}
		got := (&platform.ProcScanner{Root: f.root}).Sample([]int{10})
		assert.Equal(t, map[int]platform.TreeUsage{
			10: {RSSBytes: 205 * page, CPUTime: 407 * tick, Processes: 201},
		}, got)
	})
	t.Run("overlapping", func(t *testing.T) {
		// A root inside another root's tree counts in both.
		f := newFakeProc(t)
		f.add(10, 1, "a", 'S', 1, 0, 1, 1)
		f.add(11, 10, "b", 'S', 2, 0, 1, 1)
		f.add(12, 11, "c", 'S', 4, 0, 1, 1)
		got := (&platform.ProcScanner{Root: f.root}).Sample([]int{10, 11, 11})
		assert.Equal(t, 7*tick, got[10].CPUTime)
		assert.Equal(t, 6*tick, got[11].CPUTime)
		assert.Len(t, got, 2)
	})
	t.Run("cycle", func(t *testing.T) {
		// Parent links read while pids were reused can loop; each process
		// still counts once.
		f := newFakeProc(t)
		f.add(10, 12, "a", 'S', 1, 0, 1, 1)
		f.add(11, 10, "b", 'S', 2, 0, 1, 1)
		f.add(12, 11, "c", 'S', 4, 0, 1, 1)
		f.add(13, 13, "self-parent", 'S', 8, 0, 1, 1)
		got := (&platform.ProcScanner{Root: f.root}).Sample([]int{10, 13})
		assert.Equal(t, platform.TreeUsage{RSSBytes: 3 * page, CPUTime: 7 * tick, Processes: 3}, got[10])
		assert.Equal(t, platform.TreeUsage{RSSBytes: page, CPUTime: 8 * tick, Processes: 1}, got[13])
	})
	t.Run("changes", func(t *testing.T) {
		// The scanner reuses its buffers: a later look must not see the
		// earlier table.
		f := newFakeProc(t)
		s := &platform.ProcScanner{Root: f.root}
		for i := range 50 {
			f.add(100+i, 99+i, "sh", 'S', 1, 0, 1, 1)
		}
		require.Equal(t, 50, s.Sample([]int{100})[100].Processes)
		require.NoError(t, os.RemoveAll(filepath.Join(f.root, "125")))
		f.add(100, 1, "sh", 'S', 9, 0, 1, 1)
		assert.Equal(t, platform.TreeUsage{RSSBytes: 25 * page, CPUTime: (9 + 24) * tick, Processes: 25}, s.Sample([]int{100})[100])
		assert.Equal(t, 24, s.Sample([]int{126})[126].Processes)
	})
}

func TestProcScannerAllocations(t *testing.T) {
	// The look itself reuses its buffers: allocations do not grow with the
	// table (only the result map, and the root path, are new).
	f := newFakeProc(t)
	for i := range 300 {
		f.add(100+i, 100+i/10, "sh", 'S', 1, 1, 1, 1)
	}
	s := &platform.ProcScanner{Root: f.root}
	roots := []int{100, 105}
	require.Len(t, s.Sample(roots), 2)
	allocs := testing.AllocsPerRun(20, func() { s.Sample(roots) })
	assert.LessOrEqual(t, allocs, 4.0)
}

func TestProcScannerConcurrent(t *testing.T) {
	s := &platform.ProcScanner{Root: "testdata/proc"}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 50 {
				assert.Equal(t, 4, s.Sample([]int{100})[100].Processes)
			}
		})
	}
	wg.Wait()
}

func TestProcScannerIdentity(t *testing.T) {
	s := &platform.ProcScanner{Root: "testdata/proc"}
	tests := []struct {
		name  string
		pid   int
		start uint64
		err   error // nil: StartTime gives start
		alive bool
	}{
		{name: "running", pid: 100, start: 5000, alive: true},
		{name: "odd name", pid: 101, start: 5001, alive: true},
		{name: "zombie", pid: 103, start: 5003, alive: false},
		{name: "vanished", pid: 104, err: rm.ErrProcessGone},
		{name: "none", pid: 999, err: rm.ErrProcessGone},
		{name: "zero", pid: 0, err: rm.ErrProcessGone},
		{name: "negative", pid: -1, err: rm.ErrProcessGone},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			start, err := s.StartTime(tt.pid)
			if tt.err != nil {
				require.ErrorIs(t, err, tt.err)
				assert.False(t, s.Alive(tt.pid, 0))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.start, start)
			assert.Equal(t, tt.alive, s.Alive(tt.pid, start))
			assert.False(t, s.Alive(tt.pid, start+1), "another start stamp is another process")
		})
	}
	t.Run("unparseable", func(t *testing.T) {
		_, err := s.StartTime(300)
		require.Error(t, err)
		assert.NotErrorIs(t, err, rm.ErrProcessGone)
		assert.False(t, s.Alive(300, 0))
	})
}
