package tui

import (
	"cmp"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
)

// attemptsPane is the attempts table's part of the model.
type attemptsPane struct {
	// SelAttempt is the selected row (also the one the detail view shows),
	// kept by identity so a refresh that reorders the list keeps it.
	SelAttempt rm.AttemptID
	// Confirm is the attempt whose stop waits for y/n (zero: none).
	Confirm     rm.AttemptID
	ConfirmName string

	attemptIdx int
}

// AttemptRow is one line of the attempts pane: the journal's record merged
// with the live figures.
type AttemptRow struct {
	ID         rm.AttemptID
	Policy     rm.PolicyID
	PolicyName string
	State      rm.AttemptState
	Runner     string
	Job        string
	CreatedAt  time.Time
	EndedAt    time.Time
	// Live figures; HasUsage is false for an attempt the daemon does not
	// report (ended, or no daemon).
	HasUsage bool
	RSS      uint64
	CPU      uint32
	Peak     uint64
	// Record is the journal's row, nil if the journal has not shown it yet.
	Record *rm.Attempt
}

func (r AttemptRow) id() rm.AttemptID { return r.ID }

// name is how the UI calls the attempt: its runner's name, else its id.
func (r AttemptRow) name() string {
	if r.Runner == "" {
		return r.ID.String()
	}
	return r.Runner
}

// elapsed is how long the attempt lived, or has lived so far.
func (r AttemptRow) elapsed(now time.Time) time.Duration {
	if r.CreatedAt.IsZero() {
		return 0
	}
	if r.State.Ended() && !r.EndedAt.IsZero() {
		return r.EndedAt.Sub(r.CreatedAt)
	}
	return now.Sub(r.CreatedAt)
}

// AttemptRows returns the attempts pane's rows, filtered: live attempts
// first, then ended ones, each newest first.
func (m Model) AttemptRows() []AttemptRow {
	names := make(map[rm.PolicyID]string, len(m.Status.Policies))
	for _, p := range m.Status.Policies {
		names[p.ID] = p.Name
	}
	rows := make([]AttemptRow, 0, len(m.History)+len(m.Status.Attempts))
	index := make(map[rm.AttemptID]int, cap(rows))
	for i := range m.History {
		a := &m.History[i]
		index[a.ID] = len(rows)
		rows = append(rows, AttemptRow{
			ID: a.ID, Policy: a.Policy, State: a.State, Runner: a.RunnerName,
			Job: jobName(a.Job), CreatedAt: a.CreatedAt, EndedAt: a.EndedAt,
			Peak: a.Usage.PeakRSSBytes, Record: a,
		})
	}
	for _, s := range m.Status.Attempts {
		i, ok := index[s.ID]
		if !ok {
			i = len(rows)
			index[s.ID] = i
			rows = append(rows, AttemptRow{ID: s.ID, Policy: s.Policy, State: s.State, Runner: s.RunnerName, CreatedAt: s.CreatedAt})
		}
		r := &rows[i]
		// The journal is the truth about an ending; otherwise the
		// daemon's figures are the fresher.
		if !r.State.Ended() {
			r.State = s.State
		}
		r.Job = cmp.Or(r.Job, s.JobLabel())
		r.Runner = cmp.Or(r.Runner, s.RunnerName)
		if r.State.Live() {
			r.HasUsage, r.RSS, r.CPU = true, s.RSSBytes, s.CPUMillicores
		}
		r.Peak = max(r.Peak, s.PeakRSSBytes)
	}
	terms := filterTerms(m.Filter)
	out := rows[:0]
	for _, r := range rows {
		r.PolicyName = m.policyLabel(names, r.Policy)
		if matches(terms, string(r.State), r.PolicyName, r.Runner, r.Job) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b AttemptRow) int {
		if a.State.Live() != b.State.Live() {
			if a.State.Live() {
				return -1
			}
			return 1
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	return out
}

// policyLabel is how the attempts pane names a policy: its name as status
// has it, else as the journal does, "home (removed)" for a removed
// policy's history (as `runner-manager attempts` says), else its id's
// first characters.
func (m Model) policyLabel(names map[rm.PolicyID]string, id rm.PolicyID) string {
	if name := names[id]; name != "" {
		return name
	}
	if p, ok := m.Policies[id]; ok {
		if !p.RemovedAt.IsZero() {
			return p.Name + " (removed)"
		}
		return p.Name
	}
	if id.IsZero() {
		return ""
	}
	return id.String()[:8]
}

// SelectedAttempt returns the selected attempt row, if any.
func (m Model) SelectedAttempt() (AttemptRow, bool) {
	return selected(m.AttemptRows(), m.SelAttempt, AttemptRow.id)
}

// jobName is how a list shows a job: its workflow's short name and the
// job's display name, "ci / build".
func jobName(j rm.Job) string {
	w := shortWorkflow(j.Workflow)
	switch {
	case j.Name != "" && w != "":
		return w + " / " + j.Name
	case j.Name != "":
		return j.Name
	case w != "":
		return w
	case j.Known():
		return "job " + j.ID
	}
	return ""
}

// shortWorkflow shortens a workflow ref,
// "octo/app/.github/workflows/ci.yml@refs/heads/main", to "ci"; a plain
// name stays as it is.
func shortWorkflow(w string) string {
	if !strings.Contains(w, "/.github/workflows/") {
		return w
	}
	w, _, _ = strings.Cut(w, "@")
	w = w[strings.LastIndexByte(w, '/')+1:]
	return strings.TrimSuffix(strings.TrimSuffix(w, ".yml"), ".yaml")
}

// askStop asks to confirm stopping the selected attempt, if it is live.
func (m Model) askStop() (Model, []Command) {
	if !m.Detail && m.Pane != PaneAttempts {
		return m.infof("select an attempt first: tab to the attempts pane"), nil
	}
	a, ok := m.SelectedAttempt()
	if !ok {
		return m.infof("no attempt selected"), nil
	}
	if !a.State.Live() {
		return m.infof("%s has already ended (%s)", a.Runner, a.State), nil
	}
	m.Confirm, m.ConfirmName = a.ID, a.name()
	return m, nil
}

// confirmKey answers the stop question: y stops, any other key cancels.
func (m Model) confirmKey(k Key) (Model, []Command) {
	id, name := m.Confirm, m.ConfirmName
	m.Confirm, m.ConfirmName = rm.AttemptID{}, ""
	if k.Code == KeyRune && (k.Rune == 'y' || k.Rune == 'Y') {
		return m.progressf("stopping %s…", name), []Command{StopAttempt{ID: id, Runner: name}}
	}
	return m.infof("stop cancelled"), nil
}

// stopDone reports a stop's result, and whether it worked.
func (m Model) stopDone(c StopAttempt, err error) (Model, bool) {
	if err != nil {
		return m.errorf("stop %s: %s", c.Runner, oneLine(err)), false
	}
	return m.infof("stop requested: %s", c.Runner), true
}

var attemptCols = []column{
	{title: "STATE", w: 8},
	{title: "POLICY", w: 13, flex: 1, maxw: 18, minw: 6},
	{title: "RUNNER", w: 11, flex: 3, maxw: 37, minw: 8, tail: true},
	{title: "JOB", w: 10, flex: 4, minw: 6},
	{title: "ELAPSED", w: 7, right: true},
	{title: "RSS", w: 5, right: true, drop: 3},
	{title: "CPU", w: 4, right: true, drop: 2},
	{title: "PEAK", w: 5, right: true, drop: 1},
}

// drawAttempts draws the attempts table from row y, n of its rows at most.
func drawAttempts(p painter, m Model, y, n int) {
	rows := m.AttemptRows()
	focused := m.Pane == PaneAttempts
	empty := "(no attempts yet)"
	if m.Filter != "" && (len(m.History) > 0 || len(m.Status.Attempts) > 0) {
		empty = "(no attempt matches the filter)"
	}
	l := list{
		title: paneTitle("Attempts", len(rows), -1, m.Filter), focused: focused,
		cols: attemptCols, rows: len(rows), sel: m.attemptIdx, empty: empty,
	}
	l.draw(p, y, n, func(y, i int, ws []int) {
		r := rows[i]
		vals := []string{string(r.State), r.PolicyName, r.Runner, r.Job, fmtDuration(r.elapsed(m.Now)), "-", "-", "-"}
		if r.HasUsage {
			vals[5], vals[6] = bytesize.Compact(r.RSS), fmtCPU(r.CPU)
		}
		if r.Peak > 0 {
			vals[7] = bytesize.Compact(r.Peak)
		}
		drawRow(p, y, formatRow(attemptCols, ws, vals), stateStyle(r.State), r.ID == m.SelAttempt, focused)
	})
}

// stateStyle colours an attempt's state: green busy, cyan idle, yellow on
// its way up, red failed, dim finished.
func stateStyle(s rm.AttemptState) Style {
	switch s {
	case rm.StateBusy:
		return Style{FG: ColorGreen}
	case rm.StateIdle:
		return Style{FG: ColorCyan}
	case rm.StatePending, rm.StateRegistering, rm.StateStarting:
		return Style{FG: ColorYellow}
	case rm.StateFailed:
		return Style{FG: ColorRed}
	case rm.StateFinished:
		return styleDim
	}
	return styleNormal
}
