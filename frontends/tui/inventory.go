package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// inventoryPane is the inventory view's part of the model: the runners
// GitHub has registered in each scope the policies serve, and whose each
// one is, full screen.
type inventoryPane struct {
	// InventoryView shows the inventory full screen.
	InventoryView bool
	inventoryTop  int
}

// openInventory opens the inventory view (again: closes it).
func (m Model) openInventory() (Model, []Command) {
	if m.Detail || m.PolicyDetail {
		return m, nil
	}
	open := !m.InventoryView
	m = m.closeViews()
	m.InventoryView, m.inventoryTop = open, 0
	return m, nil
}

// daemonAttached reports whether the last figures came from the daemon
// (not the journal alone).
func (m Model) daemonAttached() bool { return m.HaveStatus && !m.partial }

// InventoryLine is one line of the inventory view.
type InventoryLine struct {
	Text  string
	Style Style
	// Title is a scope's heading, drawn bold.
	Title bool
}

// inventoryCols are the widths of the runner rows' columns but the name.
const (
	ownerW  = 14
	githubW = 13
)

// Inventory is the inventory view's lines, for a terminal w cells wide
// (0: nothing cut, as the copy key prints them): each listed scope with
// its runners, this host's first, then the fleet's by host, then the
// unknown ones; then the scale sets, whose runners GitHub does not list.
// Without a daemon it says that the lists come from one.
func (m Model) Inventory(w int) []InventoryLine {
	if !m.daemonAttached() {
		var out []InventoryLine
		for _, l := range []InventoryLine{
			{Text: "No daemon attached: GitHub's runner lists come from the daemon, which reads them for its own work.", Style: styleWarn},
			{Text: "Start it (runner-manager run) to see them here; the TUI never asks GitHub itself.", Style: styleDim},
		} {
			if w <= 0 {
				out = append(out, l)
				continue
			}
			for _, part := range wrap(l.Text, max(10, w-2)) {
				out = append(out, InventoryLine{Text: part, Style: l.Style})
			}
		}
		return out
	}
	var out []InventoryLine
	nameW := inventoryNameW(w)
	// add adds a heading or a note, wrapped at words to w, its next lines
	// indented.
	add := func(text string, st Style, title bool) {
		if w <= 0 {
			out = append(out, InventoryLine{Text: text, Style: st, Title: title})
			return
		}
		for i, part := range wrap(text, max(10, w-4)) {
			if i > 0 {
				part = "  " + part
			}
			out = append(out, InventoryLine{Text: part, Style: st, Title: title})
		}
	}
	scopes := map[string][]string{} // scope → the policies serving it
	var scaleSets []string
	for _, p := range m.Status.Policies {
		scope, _, _ := strings.Cut(p.Target, " ")
		scopes[scope] = append(scopes[scope], p.Name)
		if strings.Contains(p.Target, "scale-set=") {
			scaleSets = append(scaleSets, p.Name)
		}
	}
	for _, sr := range m.Status.Registrations {
		rs := slices.Clone(sr.Runners)
		slices.SortStableFunc(rs, func(a, b status.Registration) int {
			ka, kb := ownerRank(a), ownerRank(b)
			return cmp.Or(cmp.Compare(ka, kb), strings.Compare(ownerOf(a).HostName, ownerOf(b).HostName), strings.Compare(a.Name, b.Name))
		})
		counts := map[string]int{}
		var order []string
		for _, r := range rs {
			o := ownerOf(r).String()
			if counts[o] == 0 {
				order = append(order, o)
			}
			counts[o]++
		}
		var tally []string
		for _, o := range order {
			tally = append(tally, fmt.Sprintf("%d %s", counts[o], o))
		}
		head := fmt.Sprintf("%s · %s", sr.Scope, plural(len(rs), "runner"))
		if len(tally) > 0 {
			head += " (" + strings.Join(tally, ", ") + ")"
		}
		head += " · listed " + fmtDuration(m.Now.Sub(sr.At)) + " ago"
		if ps := scopes[sr.Scope]; len(ps) > 0 {
			head += " · policies " + strings.Join(ps, ", ")
		}
		add(head, styleBold, true)
		if len(rs) == 0 {
			out = append(out, InventoryLine{Text: "  none registered", Style: styleDim})
		}
		for _, r := range rs {
			out = append(out, m.registrationLine(r, nameW))
		}
	}
	if len(m.Status.Registrations) == 0 {
		add("The daemon has read no runner list yet: it lists a classic policy's scope while its runners live.", styleDim, false)
	}
	if len(scaleSets) > 0 {
		add("Scale sets ("+strings.Join(scaleSets, ", ")+"): GitHub lists no scale set's runners; the daemon looks up its own one by one (the attempts pane).", styleDim, false)
	}
	return out
}

// inventoryNameW is the width of the runners' names in a view w cells
// wide (0: uncut).
func inventoryNameW(w int) int {
	if w <= 0 {
		return 0
	}
	return clamp(w-3-ownerW-githubW-1-2-22, 10, 40) // a runner name of ours is 38
}

// ownerOf is r's owner, unknown where not judged.
func ownerOf(r status.Registration) status.Owner {
	if r.Owner == nil {
		return status.Owner{}
	}
	return *r.Owner
}

// ownerRank orders this host's runners first, the fleet's, then unknown.
func ownerRank(r status.Registration) int {
	switch ownerOf(r).Kind {
	case status.OwnerThisHost:
		return 0
	case status.OwnerFleet:
		return 1
	}
	return 2
}

// registrationLine is one runner: whose, what GitHub says of it, its
// name, and its attempt in the journal.
func (m Model) registrationLine(r status.Registration, nameW int) InventoryLine {
	o := ownerOf(r)
	gh := "offline"
	switch {
	case r.Online && r.Busy:
		gh = "online, busy"
	case r.Online:
		gh = "online, idle"
	}
	journal := "not in the journal"
	switch {
	case o.Kind != status.OwnerUnknown && !o.Attempt.IsZero():
		journal = fmt.Sprintf("%s %s", m.policyLabel(m.policyNames(), o.Policy), o.State)
	case o.Kind != status.OwnerUnknown:
		journal = "no live attempt"
	}
	name := r.Name
	if nameW > 0 {
		name = pad(name, nameW, false, true)
	}
	st := styleNormal
	switch {
	case o.Kind == status.OwnerUnknown:
		st = styleWarn
	case !r.Online:
		st = styleDim
	}
	return InventoryLine{Text: "  " + pad(o.String(), ownerW, false, false) + pad(gh, githubW, false, false) + " " + name + "  " + journal, Style: st}
}

// InventoryText is the inventory as plain text, nothing cut: what the
// copy key prints.
func (m Model) InventoryText() []string {
	lines := []string{fmt.Sprintf("runner-manager: GitHub's runners seen from %s at %s", cmp.Or(m.Status.Host.Name, "this host"), m.Now.UTC().Format("2006-01-02T15:04:05Z"))}
	for _, l := range m.Inventory(0) {
		lines = append(lines, l.Text)
	}
	return lines
}

// inventoryTitle counts the runners by whose they are.
func inventoryTitle(m Model) string {
	if !m.daemonAttached() {
		return "GitHub's runners: no daemon attached"
	}
	n, unknown := 0, 0
	for _, sr := range m.Status.Registrations {
		for _, r := range sr.Runners {
			n++
			if ownerOf(r).Kind == status.OwnerUnknown {
				unknown++
			}
		}
	}
	return fmt.Sprintf("GitHub's runners: %s in %s, %d unknown", plural(n, "runner"), plural(len(m.Status.Registrations), "scope"), unknown)
}

// drawInventory draws the inventory view between rows y0 and y1.
func drawInventory(p painter, m Model, y0, y1 int) {
	drawTitle(p, y0, inventoryTitle(m), true)
	lines := m.Inventory(p.w)
	y := y0 + 1
	if m.daemonAttached() {
		head := "  " + pad("WHOSE", ownerW, false, false) + pad("AT GITHUB", githubW, false, false) + " " +
			pad("NAME", inventoryNameW(p.w), false, false) + "  IN THE JOURNAL"
		p.text(1, y, head, styleBold, p.w-1)
		y++
	}
	for i := min(m.inventoryTop, max(0, len(lines)-1)); i < len(lines) && y < y1; i++ {
		p.text(1, y, fit(lines[i].Text, p.w-2, false), lines[i].Style, p.w-1)
		y++
	}
}

// policyNames maps the policies of the status to their names.
func (m Model) policyNames() map[rm.PolicyID]string {
	names := make(map[rm.PolicyID]string, len(m.Status.Policies))
	for _, p := range m.Status.Policies {
		names[p.ID] = p.Name
	}
	return names
}

// plural is "1 runner", "2 runners".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
