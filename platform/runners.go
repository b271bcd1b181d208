package platform

import (
	"bytes"
	"path/filepath"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// AttemptEnv is the variable the launcher sets in every runner's
// environment to the attempt it runs (its children inherit it): the mark
// by which RunnerProcesses finds a runner whose attempt the journal may no
// longer know.
const AttemptEnv = "RUNNER_MANAGER_ATTEMPT"

// RunnerProcess is a process found on the host whose environment carries
// AttemptEnv: a runner started by a launcher, or a process of its job.
type RunnerProcess struct {
	PID int
	// PGID is its process group: the listener a launcher started leads
	// its own, its job's processes share it.
	PGID int
	// Start is its start stamp (see StartTime): with PID it names the
	// process for good.
	Start uint64
	// Attempt is the attempt AttemptEnv names; zero if the value does not
	// parse as an attempt id.
	Attempt rm.AttemptID
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

// RunnersUnder keeps the runner processes that work under dir (a data
// directory's attempts/) and name an attempt.
func RunnersUnder(procs []RunnerProcess, dir string) []RunnerProcess {
	var out []RunnerProcess
	for _, p := range procs {
		if !p.Attempt.IsZero() && p.WorksUnder(dir) {
			out = append(out, p)
		}
	}
	return out
}

// AttemptOf returns the value of AttemptEnv in a process environment as
// the system keeps it (NUL-separated NAME=value entries, as
// /proc/<pid>/environ holds it), and whether it is there.
func AttemptOf(environ []byte) (string, bool) {
	prefix := []byte(AttemptEnv + "=")
	for kv := range bytes.SplitSeq(environ, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, prefix); ok {
			return string(v), true
		}
	}
	return "", false
}

// DefaultRunnerStopGrace is how long StopRunnerProcess lets a runner's group
// end after SIGTERM before it sends SIGKILL, when given no grace.
const DefaultRunnerStopGrace = 10 * time.Second
