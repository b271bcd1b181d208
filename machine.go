package runnermanager

import (
	"path/filepath"
	"strings"
	"time"
)

// Machine is what the manager reads of the machine it runs on, and does to
// runner processes no launcher holds: memory and disk for admission and
// the status, CPU for the status, this process's identity for the host
// lease, and the runner processes a crash left behind. platform.Machine is
// the real one; a fake makes a small machine in a test.
type Machine interface {
	// Memory is the machine's total memory and the memory available to
	// new work without swapping, in bytes.
	Memory() (total, available uint64, err error)
	// DiskFree is the bytes an unprivileged user can still write on the
	// filesystem holding path.
	DiskFree(path string) (uint64, error)
	// CPUPercent is the share of all CPUs' time spent busy since the
	// previous look, 0 to 100; false on the first look and where the
	// system does not tell.
	CPUPercent() (float64, bool)
	// Identify names this process, for a lease in a shared journal.
	Identify() (ProcessIdentity, error)
	// Alive reports whether (pid, start) is a process running now.
	Alive(pid int, start uint64) bool
	// RunnerProcesses lists the processes a launcher marked as an
	// attempt's (its runner and its job's) that work under dir, an
	// attempts directory, in one look at the process table. An error
	// wrapping errors.ErrUnsupported where the system does not show other
	// processes' environments.
	RunnerProcesses(dir string) ([]RunnerProcess, error)
	// StopRunnerProcess stops the process group p leads: SIGTERM now,
	// SIGKILL once grace has passed with the group still there. It refuses
	// a process that does not lead its group; a group already gone is no
	// error.
	StopRunnerProcess(p RunnerProcess, grace time.Duration) error
}

// ProcessIdentity names a process among the machines sharing a journal:
// who holds a lease, and whether that holder can still be alive.
type ProcessIdentity struct {
	PID int
	// Start is the process's start stamp; 0 if unread.
	Start    uint64
	Hostname string
	// BootID changes at each boot of the machine: a holder of an older
	// boot is dead whatever its pid; "" when unknown.
	BootID string
}

// RunnerProcess is a process found on the machine whose environment marks
// it as an attempt's: a runner a launcher started, or a process of its job.
type RunnerProcess struct {
	PID int
	// PGID is its process group: the listener a launcher started leads
	// its own, its job's processes share it.
	PGID int
	// Start is its start stamp: with PID it names the process for good.
	Start uint64
	// Attempt is the attempt its environment names; zero if the value does
	// not parse as an attempt id.
	Attempt AttemptID
	// Cwd is its working directory and Exe its executable, as the system
	// gives them ("" when unreadable).
	Cwd, Exe string
}

// Leader reports whether the process leads its process group: stopping a
// runner stops its group, and its job's processes go with it.
func (p RunnerProcess) Leader() bool { return p.PID == p.PGID }

// WorksUnder reports whether the process works in dir or below it. A
// process whose working directory was deleted works under no directory:
// it belongs to a data directory that is gone (and perhaps to a daemon
// still running there), not to one made again at the same path.
func (p RunnerProcess) WorksUnder(dir string) bool {
	if p.Cwd == "" || strings.HasSuffix(p.Cwd, " (deleted)") || dir == "" {
		return false
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return false
	}
	sep := string(filepath.Separator)
	return strings.HasPrefix(p.Cwd+sep, strings.TrimSuffix(abs, sep)+sep)
}
