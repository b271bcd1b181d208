package tui

import (
	"cmp"
	"fmt"
	"slices"

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
	w := waitsOf(policies)
	s := fmt.Sprintf("demand %d · admitted %d · waiting %d", w.Demand, w.Admitted, w.Waiting)
	if w.Waiting > 0 && w.Reason != "" {
		s += " (" + w.Reason + ")"
	}
	return s
}

// joinFit joins parts with " · " while they fit in w cells; the first
// part always goes, cut to fit.
func joinFit(w int, parts ...string) string {
	out := fit(parts[0], w, false)
	for _, p := range parts[1:] {
		if textWidth(out)+3+textWidth(p) > w {
			break
		}
		out += " · " + p
	}
	return out
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

// waitCell is a policy row's last cell while its jobs wait: "7 wait:
// memory: needs 6.0G, 2.1G free".
func waitCell(p status.Policy) string {
	if p.WaitReason == "" {
		return fmt.Sprintf("%d wait", p.Waiting)
	}
	return fmt.Sprintf("%d wait: %s", p.Waiting, p.WaitReason)
}
