//go:build !linux

package platform

// SampleTrees returns the memory (resident set) and CPU time of each root's
// whole process tree — the root and all its descendants — from one look at
// the process table. A root that does not exist is absent from the map (an
// exited root not yet reaped, a zombie, is still there, using no memory); a
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
func SampleTrees(pids []int) map[int]TreeUsage { return gopsutilSampleTrees(pids) }

// StartTime returns the start stamp of process pid: on Linux its start time
// in clock ticks since boot, elsewhere its creation time in Unix
// milliseconds. With the pid it names one process for good: a pid reused by
// a later process carries another stamp. A process that exited but was not
// yet reaped (a zombie) still has its stamp. Returns an error wrapping
// rm.ErrProcessGone when there is no such process.
func StartTime(pid int) (uint64, error) { return gopsutilStartTime(pid) }

// Alive reports whether the process named by (pid, start) still runs: the
// pid exists, carries that start stamp (see StartTime), and is not a zombie
// (exited, waiting to be reaped).
func Alive(pid int, start uint64) bool { return gopsutilAlive(pid, start) }
