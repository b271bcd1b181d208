package reconcile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// attemptEnv is the variable the launcher sets in every runner's
// environment (its children inherit it).
const attemptEnv = "RUNNER_MANAGER_ATTEMPT="

// findRunnerProcesses lists the processes whose environment names an
// attempt and whose working directory is under <dataDir>/attempts/: one
// look at /proc. Processes of other users (unreadable environ) and those
// that vanish meanwhile are skipped.
func findRunnerProcesses(dataDir string) ([]RunnerProcess, error) {
	if dataDir == "" {
		return nil, nil
	}
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, err
	}
	under := filepath.Join(abs, "attempts") + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	self := os.Getpid()
	var out []RunnerProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		dir := filepath.Join("/proc", e.Name())
		cwd, err := os.Readlink(filepath.Join(dir, "cwd"))
		if err != nil || !strings.HasPrefix(cwd, under) || strings.HasSuffix(cwd, " (deleted)") {
			// A runner working in a deleted directory is of a data
			// directory that is gone (and perhaps of a daemon still
			// running there): not this one's to stop.
			continue
		}
		env, err := os.ReadFile(filepath.Join(dir, "environ"))
		if err != nil {
			continue
		}
		var id rm.AttemptID
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte(attemptEnv)); ok {
				id, _ = rm.ParseAttemptID(string(v))
				break
			}
		}
		if id.IsZero() {
			continue
		}
		pgid, err := syscall.Getpgid(pid)
		if err != nil {
			continue
		}
		start, err := platform.StartTime(pid)
		if err != nil {
			continue
		}
		out = append(out, RunnerProcess{PID: pid, PGID: pgid, Start: start, Attempt: id})
	}
	return out, nil
}

// stopGroupAfter sends SIGTERM to a process group and SIGKILL after grace
// if its leader is still there.
func stopGroupAfter(pgid int, grace time.Duration) error {
	if pgid <= 1 {
		return errors.New("refusing to signal process group 0 or 1")
	}
	if err := syscall.Kill(-pgid, syscall.SIGTERM); err != nil {
		if errors.Is(err, syscall.ESRCH) {
			return nil
		}
		return err
	}
	time.AfterFunc(grace, func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	return nil
}
