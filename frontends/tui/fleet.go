package tui

import (
	"fmt"
	"slices"

	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/status"
)

// fleetShown: the header has a fleet row when more than one host shares
// the store; a single host's header says it all already.
func fleetShown(m Model) bool {
	return m.HaveStatus && m.Status.Fleet != nil && len(m.Status.Fleet.Hosts) > 1
}

// headerHeight is how many rows the header takes: the fleet row under the
// memory rows when it is shown.
func headerHeight(m Model) int {
	if fleetShown(m) {
		return headerRows + 1
	}
	return headerRows
}

// drawFleet draws the fleet row: each host with its memory, live attempts
// and version, a stale one with how long it has been silent, in the
// warning style. What does not fit goes in steps (versions, then memory)
// and then hosts, counted at the end ("+2 more"); stale hosts come first.
func drawFleet(p painter, m Model, y int) {
	// The stale hosts first: the ones a person must not miss.
	hosts := slices.Clone(m.Status.Fleet.Hosts)
	slices.SortStableFunc(hosts, func(a, b status.FleetHost) int {
		switch {
		case a.Stale == b.Stale:
			return 0
		case a.Stale:
			return -1
		}
		return 1
	})
	stale := 0
	for _, h := range hosts {
		if h.Stale {
			stale++
		}
	}
	head := fmt.Sprintf("fleet  %d hosts", len(hosts))
	if stale > 0 {
		head += fmt.Sprintf(", %d stale", stale)
	}
	for detail := 2; detail >= 0; detail-- {
		parts := make([]string, len(hosts))
		total := textWidth(head)
		for i, h := range hosts {
			parts[i] = fleetHostText(m, h, detail)
			total += 3 + textWidth(parts[i])
		}
		if total <= p.w || detail == 0 {
			drawFleetParts(p, m, y, head, hosts, parts)
			return
		}
	}
}

func drawFleetParts(p painter, m Model, y int, head string, hosts []status.FleetHost, parts []string) {
	// shown: the most hosts that fit with, for those left out, their count.
	shown, used := 0, textWidth(head)
	for shown < len(parts) {
		w := used + 3 + textWidth(parts[shown])
		if left := len(parts) - shown - 1; left > 0 {
			w += textWidth(moreText(left))
		}
		if w > p.w {
			break
		}
		used += 3 + textWidth(parts[shown])
		shown++
	}
	n := p.text(0, y, head, styleBold, p.w)
	for i := range shown {
		n += p.text(n, y, " · ", styleDim, p.w-n)
		st := styleNormal
		switch {
		case hosts[i].Stale:
			st = styleWarn
		case hosts[i].ID == m.Status.Host.ID:
			st = styleBold
		}
		n += p.text(n, y, parts[i], st, p.w-n)
	}
	if shown < len(parts) {
		p.text(n, y, moreText(len(parts)-shown), styleDim, p.w-n)
	}
}

func moreText(n int) string { return fmt.Sprintf(" · +%d more", n) }

// fleetHostText is one host of the fleet row, with detail 2 (memory and
// version), 1 (memory) or 0 (neither).
func fleetHostText(m Model, h status.FleetHost, detail int) string {
	s := h.Name
	if detail >= 1 && h.MemoryBytes > 0 {
		s += " " + bytesize.Compact(h.MemoryBytes)
	}
	if h.Stale {
		if h.SeenAt == nil {
			return s + " stale, never seen"
		}
		return s + " stale " + fmtDuration(m.Now.Sub(*h.SeenAt))
	}
	s += fmt.Sprintf(" %d live", h.LiveAttempts)
	if detail >= 2 && h.Version != "" {
		s += " " + h.Version
	}
	return s
}
