package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// ActivityLimit is how many entries the activity view lists, newest first.
const ActivityLimit = 200

// maxSeen bounds the errors and refusals the UI keeps of what it saw.
const maxSeen = 100

// ActivityEntry is one line of the activity view: something that happened,
// when, to which policy and runner.
type ActivityEntry struct {
	At     time.Time
	Policy string
	// Runner is the runner's whole name ("" for a policy's or the UI's
	// own entries).
	Runner string
	What   string
	// Bad marks a failure, an error or a refusal; What says which in words.
	Bad bool
}

// activityPane is the activity view's part of the model: the journal's
// attempts' changes of state and notes, and the errors and refusals the UI
// saw, newest first, full screen.
type activityPane struct {
	// ActivityView shows the activity full screen.
	ActivityView bool
	activityTop  int
	// seen are the errors and refusals met while the UI ran (a policy's
	// error or refusal as the daemon reported it, a failed read, a refused
	// command), stamped when first seen, oldest first.
	seen []ActivityEntry
	// seenPolicy is each policy's last error and refusal as noted in seen,
	// so a standing one is noted once.
	seenPolicy map[rm.PolicyID][2]string
}

// openActivity opens the activity view (again: closes it).
func (m Model) openActivity() (Model, []Command) {
	if m.Detail || m.PolicyDetail {
		return m, nil
	}
	open := !m.ActivityView
	m = m.closeViews()
	m.ActivityView, m.activityTop = open, 0
	return m, nil
}

// note keeps an entry of what the UI saw, the newest maxSeen.
func (m Model) note(e ActivityEntry) Model {
	if n := len(m.seen); n > 0 && m.seen[n-1].What == e.What && m.seen[n-1].Policy == e.Policy {
		return m // the same error again: noted once
	}
	seen := append(m.seen[:len(m.seen):len(m.seen)], e) // a copy: models share nothing they change
	if len(seen) > maxSeen {
		seen = seen[len(seen)-maxSeen:]
	}
	m.seen = seen
	return m
}

// notePolicies notes each policy's error and refusal when it changes.
func (m Model) notePolicies(ps []status.Policy) Model {
	was := m.seenPolicy
	m.seenPolicy = make(map[rm.PolicyID][2]string, len(ps))
	for _, p := range ps {
		last := was[p.ID]
		if p.LastError != "" && p.LastError != last[0] {
			m = m.note(ActivityEntry{At: m.Now, Policy: p.Name, What: "error: " + p.LastError, Bad: true})
		}
		if p.LastRefusal != "" && p.LastRefusal != last[1] {
			m = m.note(ActivityEntry{At: m.Now, Policy: p.Name, What: "refused: " + p.LastRefusal, Bad: true})
		}
		m.seenPolicy[p.ID] = [2]string{p.LastError, p.LastRefusal}
	}
	return m
}

// Activity is the activity view's entries, newest first, at most
// ActivityLimit: each journal attempt's steps (registering, starting,
// idle, busy with its job, its end with the outcome) and the manager's
// last note on it, and what the UI saw (policies' errors and refusals,
// failed reads and commands).
func (m Model) Activity() []ActivityEntry {
	names := m.policyNames()
	out := slices.Clone(m.seen)
	for i := range m.History {
		a := &m.History[i]
		policy := m.policyLabel(names, a.Policy)
		add := func(at time.Time, what string, bad bool) {
			if !at.IsZero() {
				out = append(out, ActivityEntry{At: at, Policy: policy, Runner: a.RunnerName, What: what, Bad: bad})
			}
		}
		add(a.RegisterAt, "registering", false)
		add(a.StartedAt, "starting", false)
		add(a.IdleAt, "idle", false)
		if j := jobName(a.Job); j != "" {
			add(a.BusyAt, "busy: "+j, false)
		} else {
			add(a.BusyAt, "busy", false)
		}
		if a.State.Ended() {
			add(a.EndedAt, string(a.State)+": "+a.Outcome.String(), a.State == rm.StateFailed)
		}
		if a.LastMessage != "" {
			at := cmp.Or(a.UpdatedAt, a.EndedAt, a.BusyAt, a.IdleAt, a.StartedAt, a.CreatedAt)
			add(at, "note: "+a.LastMessage, false)
		}
	}
	slices.SortStableFunc(out, func(a, b ActivityEntry) int { return b.At.Compare(a.At) })
	return out[:min(len(out), ActivityLimit)]
}

// activityText is an entry as the printout has it: the whole of it, the
// time in UTC to the second.
func activityText(e ActivityEntry) string {
	parts := []string{e.At.UTC().Format(time.RFC3339), orDash(e.Policy)}
	if e.Runner != "" {
		parts = append(parts, e.Runner)
	}
	return strings.Join(append(parts, e.What), "  ")
}

// ActivityText is the activity view as plain text, one entry a line,
// newest first, nothing cut: what the copy key prints.
func (m Model) ActivityText() []string {
	es := m.Activity()
	lines := make([]string, 0, len(es)+1)
	lines = append(lines, fmt.Sprintf("runner-manager activity on %s at %s, newest first", cmp.Or(m.Status.Host.Name, "this host"), m.Now.UTC().Format(time.RFC3339)))
	for _, e := range es {
		lines = append(lines, activityText(e))
	}
	return lines
}

// drawActivity draws the activity view between rows y0 and y1.
func drawActivity(p painter, m Model, y0, y1 int) {
	es := m.Activity()
	drawTitle(p, y0, fmt.Sprintf("Activity: the latest %d, newest first", len(es)), true)
	y := y0 + 1
	const (
		timeW   = 8
		policyW = 12
		runnerW = 14
	)
	head := pad("TIME", timeW, false, false) + " " + pad("POLICY", policyW, false, false) + " " +
		pad("RUNNER", runnerW, false, false) + " WHAT"
	p.text(1, y, head, styleBold, p.w-1)
	y++
	if len(es) == 0 {
		p.text(1, y, "nothing yet: the journal has no attempts and nothing went wrong", styleDim, p.w-1)
		return
	}
	for i := min(m.activityTop, len(es)-1); i < len(es) && y < y1; i++ {
		e := es[i]
		line := pad(clock(e.At, m.Now), timeW, false, false) + " " + pad(orDash(e.Policy), policyW, false, false) + " " +
			pad(orDash(e.Runner), runnerW, false, true) + " " + e.What
		st := styleNormal
		if e.Bad {
			st = styleError
		}
		p.text(1, y, fit(line, p.w-2, false), st, p.w-1)
		y++
	}
}
