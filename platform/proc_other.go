//go:build !linux

package platform

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/shirou/gopsutil/v4/process"
)

// SampleTrees returns the memory (resident set) and CPU time of each root's
// whole process tree — the root and all its descendants — from one look at
// the process table. A root that does not exist is absent from the map; a
// process that vanishes during the look is skipped. The map is nil only when
// the process table itself could not be listed: then nothing is known and
// no root should be taken for gone.
//
// RSS is the sum over the tree's processes, so pages shared between them are
// counted once per process (as ps and top do). CPU time is that of the live
// processes: a child that exited takes its time out of the total.
//
// Off Linux the look goes through gopsutil, one query per process and
// figure; Linux reads /proc directly (ProcScanner).
func SampleTrees(pids []int) map[int]TreeUsage {
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

// StartTime returns the start stamp of process pid: on Linux its start time
// in clock ticks since boot, elsewhere its creation time in Unix
// milliseconds. With the pid it names one process for good: a pid reused by
// a later process carries another stamp. A process that exited but was not
// yet reaped (a zombie) still has its stamp. Returns an error wrapping
// ErrProcessGone when there is no such process.
func StartTime(pid int) (uint64, error) {
	_, start, err := find(pid)
	return start, err
}

// Alive reports whether the process named by (pid, start) still runs: the
// pid exists, carries that start stamp (see StartTime), and is not a zombie
// (exited, waiting to be reaped).
func Alive(pid int, start uint64) bool {
	p, got, err := find(pid)
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

// find returns the process pid and its start stamp.
func find(pid int) (*process.Process, uint64, error) {
	if pid <= 0 {
		return nil, 0, fmt.Errorf("process %d: %w", pid, ErrProcessGone)
	}
	p, err := process.NewProcess(int32(pid))
	if errors.Is(err, process.ErrorProcessNotRunning) {
		return nil, 0, fmt.Errorf("process %d: %w", pid, ErrProcessGone)
	}
	if err != nil {
		return nil, 0, fmt.Errorf("process %d: %w", pid, err)
	}
	ms, err := p.CreateTime()
	if err != nil {
		if ok, _ := process.PidExists(int32(pid)); !ok {
			return nil, 0, fmt.Errorf("process %d: %w", pid, ErrProcessGone)
		}
		return nil, 0, fmt.Errorf("process %d: start time: %w", pid, err)
	}
	return p, uint64(ms), nil
}
