//go:build linux

package native

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// attemptMarker is the environment entry the launcher gives every runner
// (native_env.go); each process the runner starts inherits it unless it
// clears its environment.
const attemptMarker = "RUNNER_MANAGER_ATTEMPT="

// reapUncontained stops what an attempt without a cgroup left behind: the
// members of its runner's process group (when this launcher launched or
// adopted the runner) and every process whose environment carries the
// attempt's marker, found in one look at /proc. That finds `cmd &`,
// `setsid cmd &` and double-forked daemons alike, but not a process that
// cleared its environment after leaving the process group. SIGTERM, up to
// grace, SIGKILL, and a second look for what was forked meanwhile.
func reapUncontained(a rm.AttemptID, runner procIdent, grace time.Duration) ([]platform.Leftover, error) {
	found := attemptProcesses(a, runner)
	if len(found) == 0 {
		return nil, nil
	}
	var left []platform.Leftover
	for _, p := range found {
		left = append(left, p.Leftover)
	}
	signalAlive(found, unix.SIGTERM)
	if waitGone(found, grace) {
		return left, nil
	}
	for range 3 {
		signalAlive(found, unix.SIGKILL)
		waitGone(found, time.Second)
		found = attemptProcesses(a, runner)
		if len(found) == 0 {
			return left, nil
		}
	}
	return left, fmt.Errorf("%d processes of attempt %s still alive after SIGKILL", len(found), a)
}

// foundProcess is a process of the attempt, named for good.
type foundProcess struct {
	platform.Leftover
	start uint64
}

// attemptProcesses lists the live processes of the attempt: in its
// runner's process group, or carrying its marker.
func attemptProcesses(a rm.AttemptID, runner procIdent) []foundProcess {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	marker := []byte(attemptMarker + a.String())
	// The group is the runner's while its leader is the runner or gone:
	// a pid that leads a live group is never reused.
	group := 0
	if runner.pid > 1 {
		if st, err := platform.StartTime(runner.pid); err != nil || st == runner.start {
			group = runner.pid
		}
	}
	self := os.Getpid()
	var out []foundProcess
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 1 || pid == self {
			continue
		}
		ours := false
		if group > 0 {
			if pg, err := unix.Getpgid(pid); err == nil && pg == group {
				ours = true
			}
		}
		if !ours {
			env, err := os.ReadFile("/proc/" + e.Name() + "/environ")
			ours = err == nil && hasEnvEntry(env, marker)
		}
		if !ours {
			continue
		}
		start, err := platform.StartTime(pid)
		if err != nil || !platform.Alive(pid, start) {
			continue // gone, or a zombie
		}
		comm, _ := os.ReadFile("/proc/" + e.Name() + "/comm")
		out = append(out, foundProcess{platform.Leftover{PID: pid, Command: string(bytes.TrimSpace(comm))}, start})
	}
	return out
}

// hasEnvEntry reports whether a NUL-separated environment holds entry.
func hasEnvEntry(env, entry []byte) bool {
	for kv := range bytes.SplitSeq(env, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}

// signalAlive signals each process still alive as itself.
func signalAlive(ps []foundProcess, sig unix.Signal) {
	for _, p := range ps {
		if platform.Alive(p.PID, p.start) {
			_ = unix.Kill(p.PID, sig)
		}
	}
}

// goneLookEvery is how often waitGone looks.
const goneLookEvery = 10 * time.Millisecond

// waitGone waits up to d for every process to exit.
func waitGone(ps []foundProcess, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for {
		alive := false
		for _, p := range ps {
			if platform.Alive(p.PID, p.start) {
				alive = true
				break
			}
		}
		if !alive {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(goneLookEvery)
	}
}
