package doctor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store"
)

// lookupWindow is how far back, by creation, the ended attempts whose
// registrations are looked up reach. GitHub removes an ephemeral runner
// that has not connected for more than a day by itself
// (docs.github.com/en/actions/concepts/runners/communicating-with-self-hosted-runners),
// and a self-hosted job runs at most 5 days
// (docs.github.com/en/actions/reference/usage-limits-for-self-hosted-runners):
// an attempt created longer than 5 + 1 days ago, and a day of margin, has
// no registration left at GitHub that the service would not remove itself.
const lookupWindow = 7 * 24 * time.Hour

// maxLookups bounds the lookups of one scale-set policy in one run. The
// Actions service costs no REST quota, but it is GitHub's, and the client
// asks it one call at a time: 200 answers take seconds, not minutes.
const maxLookups = 200

// scaleSetRegistrations looks up, by name at the Actions service, each
// runner name of policy p the journal knows that may still be registered:
// the live attempts of this host whose runner process is gone (with no
// daemon running, also those that never had one), then the newest ended
// attempts created in the last lookupWindow, at most maxLookups in all.
// A registration found is a leftover; fix removes it through the loops'
// own removal (GitHub refuses a busy runner's: it is reported and stays).
//
// Scale-set runners are not in GitHub's REST runner list
// (actions/actions-runner-controller #2990) and the Actions service lists
// none (actions/scaleset v0.4.0 client.go has GetRunner, GetRunnerByName
// and RemoveRunner only: lines 641, 671, 708), so a registration whose
// name the journal never wrote cannot be found; the check says so.
func (lo leftovers) scaleSetRegistrations(ctx context.Context, st store.Store, client *github.Client, host rm.Host, p rm.Policy) Check {
	const name = "registrations"
	prefix := rm.RunnerNamePrefix(host.ID)
	what := fmt.Sprintf("registrations of policy %s (scale set %q in %s)", p.Name, p.Target.ScaleSet, p.Target.Scope)
	reg, err := github.NewScaleSetRegistrations(client, p.Target, github.ScaleSetOptions{NamePrefix: prefix})
	if err != nil {
		return warn(name, what, err.Error())
	}
	type candidate struct {
		a    rm.Attempt
		live bool
	}
	var cands []candidate
	for _, a := range lo.live[p.ID] {
		if strings.HasPrefix(a.RunnerName, prefix) && lo.processGone(p, a) {
			cands = append(cands, candidate{a, true})
		}
	}
	ended, err := st.Attempts(ctx, store.AttemptFilter{
		Policy: p.ID, States: []rm.AttemptState{rm.StateFinished, rm.StateFailed},
		Since: time.Now().Add(-lookupWindow), Limit: maxLookups + 1,
	})
	if err != nil {
		return warn(name, what, "read the ended attempts: "+err.Error())
	}
	capped := false
	for _, a := range ended {
		if !strings.HasPrefix(a.RunnerName, prefix) {
			continue // another host's, from before the policy moved here
		}
		if len(cands) == maxLookups {
			capped = true
			break
		}
		cands = append(cands, candidate{a, false})
	}

	type leftover struct {
		a    rm.Attempt
		r    rm.Runner
		live bool
	}
	var left []leftover
	var names []string
	looked := 0
	for _, c := range cands {
		r, found, err := reg.LookupRunner(ctx, 0, c.a.RunnerName)
		if err != nil {
			return warn(name, fmt.Sprintf("%s: looked up %d of %d runner names at the Actions service", what, looked, len(cands)), err.Error())
		}
		looked++
		if found {
			left = append(left, leftover{c.a, r, c.live})
			n := r.Name
			if c.live {
				n += " (live in the journal, its runner process gone)"
			}
			names = append(names, n)
		}
	}
	what = fmt.Sprintf("%s: looked up %d runner names at the Actions service", what, looked)
	if capped {
		what += fmt.Sprintf(" (the bound: ended attempts older than the newest %d were not)", looked)
	}
	what += fmt.Sprintf(": %d leftover", len(left))
	const unseen = "a registration whose name the journal never wrote cannot be found: the Actions service lists no runners"
	switch {
	case len(left) == 0:
		return ok(name, what+" ("+unseen+")")
	case !lo.fix:
		hint := "remove them with doctor --fix (daemon stopped): "
		if lo.daemonUp {
			hint = "the running daemon removes those of attempts it concludes; stop it and run doctor --fix for the rest: "
		}
		return warn(name, what, hint+strings.Join(names, ", "))
	}
	removed := 0
	var busy, errs []string
	for _, l := range left {
		switch err := reg.RemoveRunner(ctx, l.r.ID); {
		case err == nil:
			removed++
		case errors.Is(err, rm.ErrRunnerBusy):
			busy = append(busy, l.r.Name)
		default:
			errs = append(errs, err.Error())
		}
	}
	what = fmt.Sprintf("%s: removed %d", what, removed)
	var hints []string
	if len(busy) > 0 {
		hints = append(hints, "GitHub refuses to remove a runner running a job; it goes when the job ends: "+strings.Join(busy, ", "))
	}
	if len(errs) > 0 {
		hints = append(hints, strings.Join(errs, "; "))
	}
	if len(hints) > 0 {
		return warn(name, what, strings.Join(hints, "\n"))
	}
	return ok(name, what)
}

// processGone reports whether live attempt a of policy p has no runner
// process: one recorded that is no longer alive, or, with no daemon
// running, none recorded yet while pending or registering (registered,
// then the daemon died before the launch). A container attempt without a
// recorded process is left: its container may run on, and doctor's
// container check looks at it.
func (lo leftovers) processGone(p rm.Policy, a rm.Attempt) bool {
	if a.PID > 0 {
		return !platform.Alive(a.PID, a.ProcessStart)
	}
	beforeLaunch := a.State == rm.StatePending || a.State == rm.StateRegistering
	return beforeLaunch && !lo.daemonUp && !p.RunnerInImage()
}
