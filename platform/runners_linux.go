package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// RunnerProcesses lists the processes whose environment carries AttemptEnv,
// in one look at the procfs mounted at procRoot ("" means /proc; tests give
// a fixture tree). This process is left out; processes of other users
// (their environment unreadable) and those that vanish during the look are
// skipped. Other systems return an error wrapping errors.ErrUnsupported.
func RunnerProcesses(procRoot string) ([]rm.RunnerProcess, error) {
	if procRoot == "" {
		procRoot = "/proc"
	}
	entries, err := os.ReadDir(procRoot)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	var out []rm.RunnerProcess
	for _, e := range entries {
		pid, ok := parsePID([]byte(e.Name()))
		if !ok || pid == self {
			continue
		}
		if p, ok := readRunnerProcess(filepath.Join(procRoot, e.Name()), pid); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// readRunnerProcess reads one process of procfs directory dir, if its
// environment carries AttemptEnv.
func readRunnerProcess(dir string, pid int) (rm.RunnerProcess, bool) {
	env, err := os.ReadFile(filepath.Join(dir, "environ"))
	if err != nil {
		return rm.RunnerProcess{}, false
	}
	v, ok := AttemptOf(env)
	if !ok {
		return rm.RunnerProcess{}, false
	}
	b, err := os.ReadFile(filepath.Join(dir, "stat"))
	if err != nil {
		return rm.RunnerProcess{}, false
	}
	st, ok := parseStat(b)
	pgid, pok := statPGID(b)
	if !ok || !pok {
		return rm.RunnerProcess{}, false
	}
	p := rm.RunnerProcess{PID: pid, PGID: pgid, Start: st.start}
	p.Attempt, _ = rm.ParseAttemptID(v)
	p.Cwd, _ = os.Readlink(filepath.Join(dir, "cwd"))
	p.Exe, _ = os.Readlink(filepath.Join(dir, "exe"))
	return p, true
}

// statPGID reads the process group (the third field after the command
// name) of a /proc/<pid>/stat line.
func statPGID(b []byte) (int, bool) {
	rp := bytes.LastIndexByte(b, ')')
	if rp < 0 {
		return 0, false
	}
	f := bytes.Fields(b[rp+1:])
	if len(f) < 3 {
		return 0, false
	}
	v, err := strconv.Atoi(string(f[2]))
	return v, err == nil && v > 0
}

// StopRunnerProcess stops the process group p leads: SIGTERM now and, when
// grace (0: DefaultRunnerStopGrace) has passed with the group still there,
// SIGKILL, from a timer of this process (unless the pid names another
// process by then); it returns once SIGTERM is sent.
// It refuses a process that does not lead its group, and groups 0 and 1.
// A group already gone is not an error.
func StopRunnerProcess(p rm.RunnerProcess, grace time.Duration) error {
	if !p.Leader() || p.PGID <= 1 {
		return fmt.Errorf("process %d does not lead a process group of its own: not stopping it", p.PID)
	}
	if grace <= 0 {
		grace = DefaultRunnerStopGrace
	}
	if err := syscall.Kill(-p.PGID, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	time.AfterFunc(grace, func() {
		// A pid is not given to a new process while any member of the
		// group it names lives: if the pid names another process now,
		// the group is gone and the pid reused.
		if start, err := StartTime(p.PID); err == nil && start != p.Start {
			return
		}
		_ = syscall.Kill(-p.PGID, syscall.SIGKILL)
	})
	return nil
}
