package platform

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shirou/gopsutil/v4/process"

	rm "github.com/runner-manager/runner-manager"
)

// The portable process table, through gopsutil: one query per process and
// figure, so it costs far more than ProcScanner (see bench_test.go). It is
// what SampleTrees, StartTime and Alive use off Linux; it builds everywhere
// so Linux tests hold it to ProcScanner's figures.

func gopsutilSampleTrees(pids []int) map[int]TreeUsage {
	procs, err := process.Processes()
	if err != nil {
		return nil
	}
	entries := make([]procEntry, 0, len(procs))
	for _, p := range procs {
		ppid, err := p.Ppid()
		if err != nil {
			continue
		}
		mem, err := p.MemoryInfo()
		if err != nil {
			continue
		}
		times, err := p.Times()
		if err != nil {
			continue
		}
		entries = append(entries, procEntry{
			pid:  int(p.Pid),
			ppid: int(ppid),
			rss:  mem.RSS,
			cpu:  time.Duration((times.User + times.System) * float64(time.Second)),
		})
	}
	var x treeIndex
	return x.sample(entries, pids)
}

func gopsutilStartTime(pid int) (uint64, error) {
	_, start, err := gopsutilFind(pid)
	return start, err
}

func gopsutilAlive(pid int, start uint64) bool {
	p, got, err := gopsutilFind(pid)
	if err != nil || got != start {
		return false
	}
	// Not every system reports a status (Windows does not); a process
	// without one that has its start stamp is taken as running.
	if status, err := p.Status(); err == nil && slices.Contains(status, process.Zombie) {
		return false
	}
	return true
}

// gopsutilFind returns the process pid and its start stamp (creation time
// in Unix milliseconds).
func gopsutilFind(pid int) (*process.Process, uint64, error) {
	if pid <= 0 {
		return nil, 0, fmt.Errorf("process %d: %w", pid, rm.ErrProcessGone)
	}
	p, err := process.NewProcess(int32(pid))
	if errors.Is(err, process.ErrorProcessNotRunning) {
		return nil, 0, fmt.Errorf("process %d: %w", pid, rm.ErrProcessGone)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("process %d: %w", pid, err)
	}
	ms, err := p.CreateTime()
	if err != nil {
		if ok, _ := process.PidExists(int32(pid)); !ok {
			return nil, 0, fmt.Errorf("process %d: %w", pid, rm.ErrProcessGone)
		}
		return nil, 0, fmt.Errorf("process %d: start time: %w", pid, err)
	}
	return p, uint64(ms), nil
}
