package daemon

import (
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/status"
)

// registrations is the status's view of the GitHub client's newest runner
// lists (github.Client.RunnerLists): what the loops last read, whoever
// registered the runners; nil when none was read.
func registrations(lists []github.RunnerList) []status.ScopeRunners {
	if len(lists) == 0 {
		return nil
	}
	out := make([]status.ScopeRunners, 0, len(lists))
	for _, l := range lists {
		sr := status.ScopeRunners{Scope: l.Scope.String(), At: l.At, Runners: make([]status.Registration, 0, len(l.Runners))}
		for _, r := range l.Runners {
			sr.Runners = append(sr.Runners, status.Registration{ID: r.ID, Name: r.Name, Online: r.Online, Busy: r.Busy, Labels: r.Labels})
		}
		out = append(out, sr)
	}
	return out
}
