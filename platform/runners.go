package platform

import (
	"bytes"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// AttemptEnv is the variable the launcher sets in every runner's
// environment to the attempt it runs (its children inherit it): the mark
// by which RunnerProcesses finds a runner whose attempt the journal may no
// longer know.
const AttemptEnv = "RUNNER_MANAGER_ATTEMPT"

// RunnersUnder keeps the runner processes that work under dir (a data
// directory's attempts/) and name an attempt.
func RunnersUnder(procs []rm.RunnerProcess, dir string) []rm.RunnerProcess {
	var out []rm.RunnerProcess
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
