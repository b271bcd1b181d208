package doctor

import (
	"fmt"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// goneRunners finds the live attempts of this host (by their runner
// names' prefix) whose runner process is gone (processGone): a crash left
// them live in the journal, where they hold their policy's slots and make
// `policy rm` refuse it. Fix does not conclude them: an outcome rests on
// GitHub's word and the runner's own trace, which the engine weighs; `run
// --once` does, and the check says so. A running daemon concludes them
// itself.
func (lo leftovers) goneRunners(host rm.Host, mine []rm.Policy) Check {
	const name = "live-attempts"
	prefix := rm.RunnerNamePrefix(host.ID)
	live, gone := 0, []string{}
	for _, p := range mine {
		for _, a := range lo.live[p.ID] {
			if !strings.HasPrefix(a.RunnerName, prefix) {
				continue // another host's (a fleet policy's, or from before a move)
			}
			live++
			if lo.processGone(p, a) {
				gone = append(gone, a.ID.String()+" ("+p.Name+", "+string(a.State)+")")
			}
		}
	}
	what := fmt.Sprintf("live attempts: %d, %d whose runner process is gone", live, len(gone))
	switch {
	case len(gone) == 0:
		return ok(name, what)
	case lo.daemonUp:
		return ok(name, what+" (the running daemon concludes them)")
	}
	hint := "`runner-manager run --once` concludes them and removes what they left (registration, directory); until then they hold their policy's slots and `policy rm` refuses it"
	if lo.fix {
		hint = "doctor --fix does not conclude attempts: " + hint
	}
	return warn(name, what, hint+": "+strings.Join(gone, ", "))
}
