package doctor

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
)

// stopGrace is how long a leftover runner's group has between SIGTERM and
// SIGKILL.
const stopGrace = 10 * time.Second

// processes finds runner processes of dataDir that no live attempt owns;
// fix stops their process groups (SIGTERM, then SIGKILL) and waits for
// them to go.
func (lo leftovers) processes(procRoot, dataDir string) Check {
	const name = "runner-processes"
	all, err := platform.RunnerProcesses(procRoot)
	if errors.Is(err, errors.ErrUnsupported) {
		return ok(name, "runner processes: not looked for on this system (run stops leftovers at its start)")
	}
	if err != nil {
		return warn(name, "runner processes", err.Error())
	}
	var procs, left []rm.RunnerProcess
	for _, p := range platform.RunnersUnder(all, datadir.New(dataDir).Attempts()) {
		if !p.Leader() {
			continue // a job's process goes with its runner's group
		}
		procs = append(procs, p)
		if !lo.ids[p.Attempt] {
			left = append(left, p)
		}
	}
	what := fmt.Sprintf("runner processes: %d running, %d that no live attempt owns", len(procs), len(left))
	switch {
	case len(left) == 0:
		return ok(name, what)
	case lo.daemonUp:
		return warn(name, what, "the running daemon stops them at its next start")
	case !lo.fix:
		var pids []string
		for _, p := range left {
			pids = append(pids, strconv.Itoa(p.PID))
		}
		return warn(name, what, "stop them with doctor --fix (pids "+strings.Join(pids, ", ")+")")
	}
	var errs []string
	for _, p := range left {
		if err := platform.StopRunnerProcess(p, stopGrace); err != nil {
			errs = append(errs, fmt.Sprintf("pid %d: %v", p.PID, err))
		}
	}
	// The SIGKILL comes from a timer of this process: wait for the groups'
	// leaders to go, a little past the grace.
	deadline := time.Now().Add(stopGrace + 2*time.Second)
	stopped := 0
	for _, p := range left {
		for platform.Alive(p.PID, p.Start) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !platform.Alive(p.PID, p.Start) {
			stopped++
		}
	}
	what = fmt.Sprintf("%s: stopped %d", what, stopped)
	if stopped < len(left) {
		return fail(name, what, strings.Join(errs, "; "))
	}
	return ok(name, what)
}
