package tui

import (
	"cmp"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// policiesPane is the policies table's part of the model.
type policiesPane struct {
	// SelPolicy is the selected row, kept by identity so a refresh that
	// reorders the list keeps the selection.
	SelPolicy rm.PolicyID
	// Edits are policy changes sent and not yet reflected in Status.
	Edits map[rm.PolicyID]PolicyEdit
	// SortBy is the policies' sort column (policySorts), cycled by a key.
	SortBy int

	policyIdx int
}

// PolicyEdit is a policy change the source has not confirmed yet; the UI
// shows it at once and drops it when Status agrees or after a while.
type PolicyEdit struct {
	Max       int
	HasMax    bool
	Paused    bool
	HasPaused bool
	Until     time.Time
}

// PolicyRow is one line of the policies pane: the live figures with the
// edits not yet confirmed applied.
type PolicyRow struct {
	status.Policy
	// Pending is true while an edit of this policy is unconfirmed.
	Pending bool
}

func (r PolicyRow) id() rm.PolicyID { return r.ID }

// PolicyRows returns the policies pane's rows, filtered, by name.
func (m Model) PolicyRows() []PolicyRow {
	rows := make([]PolicyRow, 0, len(m.Status.Policies))
	terms := filterTerms(m.Filter)
	for _, p := range m.Status.Policies {
		r := PolicyRow{Policy: p}
		if e, ok := m.Edits[p.ID]; ok {
			if e.HasMax {
				r.Max = e.Max
			}
			if e.HasPaused {
				r.Paused = e.Paused
			}
			r.Pending = true
		}
		if matches(terms, r.Name, r.Target, r.Mode) {
			rows = append(rows, r)
		}
	}
	by := policySorts[m.SortBy%len(policySorts)]
	slices.SortStableFunc(rows, func(a, b PolicyRow) int { return cmp.Or(by.cmp(a, b), cmp.Compare(a.Name, b.Name)) })
	return rows
}

// SelectedPolicy returns the selected policy row, if any.
func (m Model) SelectedPolicy() (PolicyRow, bool) {
	return selected(m.PolicyRows(), m.SelPolicy, PolicyRow.id)
}

// expireEdits drops the edits the source has not confirmed in time.
func (m Model) expireEdits() {
	for id, e := range m.Edits {
		if m.Now.After(e.Until) {
			delete(m.Edits, id)
		}
	}
}

// confirmEdits drops the edits the source's policies now show.
func (m Model) confirmEdits(policies []status.Policy) {
	for _, p := range policies {
		e, ok := m.Edits[p.ID]
		if ok && (!e.HasMax || e.Max == p.Max) && (!e.HasPaused || e.Paused == p.Paused) {
			delete(m.Edits, p.ID)
		}
	}
}

// putEdit records e, or forgets the policy's edit when e changes nothing.
func (m Model) putEdit(id rm.PolicyID, e PolicyEdit) {
	if !e.HasMax && !e.HasPaused {
		delete(m.Edits, id)
		return
	}
	m.Edits[id] = e
}

// pauseVerb is how messages name pausing (or resuming): "pause" gives
// "paused" and "pausing", "resume" "resumed" and "resuming".
func pauseVerb(paused bool) string {
	if paused {
		return "pause"
	}
	return "resume"
}

// policyDone reports a policy edit's result; a failed edit no longer
// shows. It reports whether the edit worked.
func (m Model) policyDone(c Command, err error) (Model, bool) {
	switch c := c.(type) {
	case SetPaused:
		verb := pauseVerb(c.Paused)
		if err != nil {
			e := m.Edits[c.Policy]
			e.HasPaused = false
			m.putEdit(c.Policy, e)
			return m.errorf("%s %s: %s", verb, c.Name, oneLine(err)), false
		}
		return m.infof("%sd %s", verb, c.Name), true
	case SetMax:
		if err != nil {
			e := m.Edits[c.Policy]
			e.HasMax = false
			m.putEdit(c.Policy, e)
			return m.errorf("max of %s: %s", c.Name, oneLine(err)), false
		}
		return m.infof("max of %s is %d", c.Name, c.Max), true
	}
	return m, false
}

func (m Model) selectedPolicyForEdit() (PolicyRow, Model, bool) {
	if m.Detail || m.Pane != PanePolicies {
		return PolicyRow{}, m.infof("select a policy first: tab to the policies pane"), false
	}
	p, ok := m.SelectedPolicy()
	if !ok {
		return PolicyRow{}, m.infof("no policy selected"), false
	}
	return p, m, true
}

func (m Model) togglePause() (Model, []Command) {
	p, m, ok := m.selectedPolicyForEdit()
	if !ok {
		return m, nil
	}
	e := m.Edits[p.ID]
	e.Paused, e.HasPaused, e.Until = !p.Paused, true, m.Now.Add(editFor)
	m.Edits[p.ID] = e
	verb := pauseVerb(!p.Paused)
	return m.progressf("%sing %s…", verb[:len(verb)-1], p.Name), []Command{SetPaused{Policy: p.ID, Name: p.Name, Paused: !p.Paused}}
}

// changeMax returns the action that moves the selected policy's max by
// delta, never below its min idle nor 1.
func changeMax(delta int) func(Model) (Model, []Command) {
	return func(m Model) (Model, []Command) {
		p, m, ok := m.selectedPolicyForEdit()
		if !ok {
			return m, nil
		}
		next := p.Max + delta
		if next < max(1, p.MinIdle) {
			if p.MinIdle > 1 {
				return m.errorf("max of %s cannot go below its min idle %d", p.Name, p.MinIdle), nil
			}
			return m.errorf("max of %s cannot go below 1: pause it (p) to stop new runners", p.Name), nil
		}
		e := m.Edits[p.ID]
		e.Max, e.HasMax, e.Until = next, true, m.Now.Add(editFor)
		m.Edits[p.ID] = e
		return m, []Command{SetMax{Policy: p.ID, Name: p.Name, Max: next}}
	}
}

var policyCols = []column{
	{title: "NAME", w: 8, flex: 1, maxw: 24, minw: 6},
	{title: "TARGET", w: 14, flex: 2, minw: 8},
	{title: "MODE", w: 9, minw: 5, drop: 1},
	{title: "STATE", w: 6},
	{title: "L/I/B/MAX", w: 12, right: true, minw: 9},
	{title: "SPARES", w: 6, right: true, drop: 2},
	{title: "DEMAND", w: 6, right: true},
	{title: "NOTE", w: 12, flex: 3, minw: 6},
}

// spareHeld is why a policy's spares stay below their target, without
// the "spares: " its refusal starts with where the row says so already.
func spareHeld(note string) string { return strings.TrimPrefix(note, "spares: ") }

// spareCell is a policy's warm spares, live/target ("-": it keeps none).
func spareCell(r status.Policy) string {
	if r.SpareCap == 0 && r.Spares == 0 {
		return "-"
	}
	return itoa(r.Spares) + "/" + itoa(r.SpareTarget)
}

// drawPolicies draws the policies table from row y, n of its rows at most.
func drawPolicies(p painter, m Model, rows []PolicyRow, y, n int) {
	focused := m.Pane == PanePolicies
	empty := "(reading…)"
	switch {
	case len(m.Status.Policies) > 0:
		empty = "(no policy matches the filter)"
	case m.HaveStatus:
		empty = "(no policies: add one with runner-manager policy add)"
	}
	l := list{
		title: paneTitle("Policies", len(rows), len(m.Status.Policies), m.Filter) + sortTitle(m.SortBy), focused: focused,
		cols: policyCols, rows: len(rows), sel: m.policyIdx, empty: empty,
	}
	l.draw(p, y, n, func(y, i int, ws []int) {
		r := rows[i]
		counts := countsText(r)
		state, st := "active", styleNormal
		if r.Paused {
			state, st = "paused", styleDim
		}
		selected := r.ID == m.SelPolicy
		mode := r.Mode
		if r.Fleet {
			mode = "fleet"
		}
		vals := []string{r.Name, shortTarget(r.Target), mode, state, counts, spareCell(r.Policy), itoa(r.Demand + r.Queued), ""}
		drawRow(p, y, formatRow(policyCols, ws, vals), st, selected, focused)

		// The last column, in a style of its own: as status's note, why
		// jobs wait, else an error, else a refusal, else why spares are
		// held back.
		last, lastStyle := r.LastRefusal, st
		if last == "" && r.SpareNote != "" {
			last = "spares held: " + spareHeld(r.SpareNote)
		}
		if r.Waiting > 0 {
			last, lastStyle = waitCell(r.Policy), styleWarn
		}
		if r.LastError != "" {
			last, lastStyle = "error: "+r.LastError, styleError
		}
		if w := ws[len(ws)-1]; last != "" && w > 0 {
			lastStyle.Reverse = selected && focused
			p.text(columnX(ws, len(ws)-1), y, cmp.Or(cutWords(last, w), fit(last, w, false)), lastStyle, w)
		}
	})
}

// shortTarget shortens a ScaleTarget's String form for a narrow column:
// "repo:octo/app group=Default scale-set=home" becomes "octo/app home";
// labels print in brackets, a group other than Default after an '@'.
func shortTarget(s string) string {
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return s
	}
	out := []string{strings.TrimPrefix(fields[0], "repo:")}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		switch {
		case !ok:
			out = append(out, f)
		case k == "group" && v == "Default":
		case k == "group":
			out = append(out, "@"+v)
		case k == "scale-set":
			out = append(out, v)
		case k == "labels":
			out = append(out, "["+v+"]")
		default:
			out = append(out, f)
		}
	}
	return strings.Join(out, " ")
}
