package app

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// runnerProc is a runner process of the data directory found in /proc.
type runnerProc struct {
	pid, pgid int
	attempt   rm.AttemptID
}

// findRunnerProcs lists the process-group leaders whose environment names
// an attempt (RUNNER_MANAGER_ATTEMPT, set by the launcher) and whose
// working directory is under <data>/attempts.
func findRunnerProcs(dataDir string) ([]runnerProc, error) {
	root := filepath.Join(dataDir, "attempts") + string(filepath.Separator)
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []runnerProc
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
		if err != nil || !strings.HasPrefix(cwd+string(filepath.Separator), root) {
			continue
		}
		env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
		if err != nil {
			continue
		}
		var id rm.AttemptID
		for _, kv := range bytes.Split(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("RUNNER_MANAGER_ATTEMPT=")); ok {
				id, _ = rm.ParseAttemptID(string(v))
			}
		}
		if id.IsZero() {
			continue
		}
		pgid, err := syscall.Getpgid(pid)
		if err != nil || pgid != pid {
			continue
		}
		out = append(out, runnerProc{pid: pid, pgid: pgid, attempt: id})
	}
	return out, nil
}

// leftoverProcesses finds runner processes no live attempt owns; fix stops
// their process groups (SIGTERM, then SIGKILL after 10 s).
func leftoverProcesses(dataDir string, live map[rm.AttemptID]bool, fix, daemonUp bool) []check {
	procs, err := findRunnerProcs(dataDir)
	if err != nil {
		return []check{{Warn: true, What: "runner processes", Fix: err.Error()}}
	}
	var left []runnerProc
	for _, p := range procs {
		if !live[p.attempt] {
			left = append(left, p)
		}
	}
	what := fmt.Sprintf("runner processes: %d running, %d that no live attempt owns", len(procs), len(left))
	switch {
	case len(left) == 0:
		return []check{{OK: true, What: what}}
	case daemonUp:
		return []check{{Warn: true, What: what, Fix: "the running daemon stops them at its next start"}}
	case !fix:
		var pids []string
		for _, p := range left {
			pids = append(pids, strconv.Itoa(p.pid))
		}
		return []check{{Warn: true, What: what, Fix: "stop them with doctor --fix (pids " + strings.Join(pids, ", ") + ")"}}
	}
	stopped := 0
	for _, p := range left {
		_ = syscall.Kill(-p.pgid, syscall.SIGTERM)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) && syscall.Kill(p.pid, 0) == nil && !isZombie(p.pid) {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(p.pid, 0) == nil && !isZombie(p.pid) {
			_ = syscall.Kill(-p.pgid, syscall.SIGKILL)
		}
		stopped++
	}
	return []check{{OK: true, What: fmt.Sprintf("%s: stopped %d", what, stopped)}}
}

func isZombie(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'Z'
}
