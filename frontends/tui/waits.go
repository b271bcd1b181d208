package tui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/runner-manager/runner-manager/status"
)

// waits is what the header tells of demand: the jobs GitHub has for the
// active policies' targets, the runners admission lets them have, and how
// many jobs wait and why. A target's policies share one loop and show the
// same demand, so each target counts once.
type waits struct {
	Demand, Admitted, Waiting int
	// Reason is the first wait reason met, by policy name.
	Reason string
}

// waitsOf sums the policies' figures.
func waitsOf(policies []status.Policy) waits {
	var w waits
	seen := make(map[string]bool)
	for _, p := range sortedByName(policies) {
		if p.Paused {
			continue
		}
		w.Admitted += p.Admitted
		if seen[p.Target] {
			continue
		}
		seen[p.Target] = true
		w.Demand += p.Demand + p.Queued
		w.Waiting += p.Waiting
		if w.Reason == "" && p.Waiting > 0 {
			w.Reason = p.WaitReason
		}
	}
	return w
}

// waitsText is the header's demand line: "demand 12 · admitted 5 ·
// waiting 7 (memory: needs 6.0G, 2.1G free)".
func waitsText(policies []status.Policy) string {
	return strings.Join(waitsParts(policies), " · ")
}

// waitsParts are waitsText's parts, for joinFit.
func waitsParts(policies []status.Policy) []string {
	w := waitsOf(policies)
	waiting := fmt.Sprintf("waiting %d", w.Waiting)
	if w.Waiting > 0 && w.Reason != "" {
		waiting += " (" + w.Reason + ")"
	}
	return []string{fmt.Sprintf("demand %d", w.Demand), fmt.Sprintf("admitted %d", w.Admitted), waiting}
}

// joinFit joins parts with " · " while they fit in w cells. The first part
// that does not fit is cut at a word's end (cutWords) if more than its
// first word is left, else goes whole, with the ones after it; the first
// part always shows, cut to fit.
func joinFit(w int, parts ...string) string {
	out := ""
	for i, p := range parts {
		sep := ""
		if i > 0 {
			sep = " · "
		}
		room := w - textWidth(out) - textWidth(sep)
		if textWidth(p) <= room {
			out += sep + p
			continue
		}
		// A part cut to its first word ("reserve…") says nothing: it goes.
		cut := cutWords(p, room)
		switch {
		case i == 0 && cut == "":
			out = fit(p, w, false)
		case i == 0 || strings.Contains(cut, " "):
			out += sep + cut
		}
		break
	}
	return out
}

// cutWords cuts s to at most w cells at the end of a word, marking the cut
// with an ellipsis; "" when not even its first word fits.
func cutWords(s string, w int) string {
	if textWidth(s) <= w {
		return s
	}
	best := ""
	for i, r := range s {
		if r != ' ' {
			continue
		}
		head := strings.TrimRight(s[:i], " ·,:;(")
		if head == "" || textWidth(head)+1 > w {
			break
		}
		best = head + "…"
	}
	return best
}

// sortedByName returns the policies by name, so the reason shown does not
// change with the order a source lists them in.
func sortedByName(policies []status.Policy) []status.Policy {
	out := slices.Clone(policies)
	slices.SortStableFunc(out, func(a, b status.Policy) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// countsText is a policy row's L/I/B/MAX cell, numbers of four digits and
// more shortened ("1.2k") so the cell keeps to its column.
func countsText(r PolicyRow) string {
	s := fmt.Sprintf("%s/%s/%s/%s", shortCount(r.Live), shortCount(r.Idle), shortCount(r.Busy), shortCount(r.Max))
	if r.Pending {
		s += "*"
	}
	return s
}

// shortCount prints n in at most four cells: 999, 1.2k, 12k, 123k, 1.2M.
func shortCount(n int) string {
	switch {
	case n < 1000:
		return itoa(n)
	case n < 10_000:
		return fmt.Sprintf("%.1fk", float64(n)/1000)
	case n < 1_000_000:
		return fmt.Sprintf("%dk", n/1000)
	}
	return fmt.Sprintf("%.1fM", float64(n)/1_000_000)
}

// waitCell is a policy row's last cell while its jobs wait: "waiting 7:
// memory: needs 6.0G, 2.1G free". It starts with a word, so that the
// DEMAND figure before it does not read as one with its count.
func waitCell(p status.Policy) string {
	if p.WaitReason == "" {
		return fmt.Sprintf("waiting %d", p.Waiting)
	}
	return fmt.Sprintf("waiting %d: %s", p.Waiting, p.WaitReason)
}
