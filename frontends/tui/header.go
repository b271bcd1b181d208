package tui

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/status"
)

// headerRows is how many rows the header takes without the fleet row
// (fleet.go).
const headerRows = 3

// drawHeader draws the top three rows: the host and GitHub's budget, then
// the host's memory and admission.
func drawHeader(p painter, m Model) {
	drawTopLine(p, m)
	st := m.Status
	switch {
	case !m.HaveStatus:
		p.text(0, 1, "waiting for the live figures…", styleDim, p.w)
	case st.Memory.TotalBytes == 0:
		p.text(0, 1, "memory  no live figures (is the daemon running?)", styleDim, p.w)
		p.text(0, 2, joinFit(p.w, append(waitsParts(st.Policies), refusalText(st.Refusals))...), styleNormal, p.w)
	default:
		drawMemory(p, m)
	}
	if fleetShown(m) {
		drawFleet(p, m, headerRows)
	}
}

// drawTopLine draws the first row: the name, the host, and at the right
// GitHub's budget and the clock, room going to the budget first, then the
// host, then the clock. The host's fields go whole, the last first, rather
// than being cut inside a word.
func drawTopLine(p painter, m Model) {
	st := m.Status
	n := p.text(0, 0, "runner-manager", styleTitle, p.w)
	budget, budgetStyle := "GitHub –", styleNormal
	if b := st.Budget; !b.SeenAt.IsZero() {
		budget = fmt.Sprintf("GitHub %d/%d", b.Remaining, b.Limit)
		if !b.Reset.IsZero() {
			budget += " reset " + b.Reset.In(m.Now.Location()).Format("15:04")
		}
		if b.Limit > 0 && b.Remaining*10 < b.Limit {
			budget, budgetStyle = budget+" low", styleWarn // the warning, in words too
		}
	}
	host := hostFields(m)
	clk := "  " + clock(m.Now, m.Now)
	bw := textWidth(budget)
	if n+textWidth(strings.Join(host, ""))+2+bw+textWidth(clk) > p.w {
		clk = ""
	}
	if n+2+bw > p.w {
		budget, bw = "", 0
	}
	cw := textWidth(clk)
	p.text(p.w-bw-cw, 0, budget, budgetStyle, bw)
	p.text(p.w-cw, 0, clk, styleNormal, cw)
	room, x := p.w-n-bw-cw-2, n
	for _, f := range host {
		if textWidth(f) > room {
			break
		}
		x += p.text(x, 0, f, styleBold, room)
		room -= textWidth(f)
	}
}

// hostFields are the top line's words about the host, each with the
// space before it, in the order they give way: its name, OS and
// architecture, CPUs, the runner's version, the runner's update.
func hostFields(m Model) []string {
	st := m.Status
	if !m.HaveStatus || st.Host.Name == "" {
		return nil
	}
	fields := []string{"  " + st.Host.Name, fmt.Sprintf(" %s/%s", st.Host.OS, st.Host.Arch)}
	if st.Host.CPUs > 0 {
		fields = append(fields, fmt.Sprintf(" %dcpu", st.Host.CPUs))
	}
	if r := runnerBrief(st.Runner); r != "" {
		version, update, ok := strings.Cut(r, " · ")
		fields = append(fields, version)
		if ok {
			fields = append(fields, " · "+update)
		}
	}
	return fields
}

// drawMemory draws the memory rows: used and committed memory as bars
// with the reserve shaded, then admission's figures.
func drawMemory(p painter, m Model) {
	st := m.Status
	mem := st.Memory
	bw := clamp(p.w/3, 10, 50)
	used := mem.TotalBytes - min(mem.AvailableBytes, mem.TotalBytes)
	n := p.text(0, 1, "used   ", styleBold, p.w)
	n += drawBar(p, n, 1, bw, used, mem.TotalBytes, mem.ReserveBytes, '█')
	parts := []string{fmt.Sprintf("%s of %s", bytesize.Compact(used), bytesize.Compact(mem.TotalBytes))}
	usedStyle := styleNormal
	if used+mem.ReserveBytes > mem.TotalBytes {
		usedStyle = styleWarn
		parts[0] += " (into the reserve)" // the warning's colour, in words
	}
	parts = append(parts, "reserve "+bytesize.Compact(mem.ReserveBytes))
	if c := st.HostCPUPercent; c != nil {
		// In cores, as the attempts' CPU is; a percentage only where the
		// host's CPU count is not known.
		if n := st.Host.CPUs; n > 0 {
			parts = append(parts, fmt.Sprintf("cpu %s of %d cores", fmtCPU(uint32(*c*float64(n)*10)), n))
		} else {
			parts = append(parts, fmt.Sprintf("cpu %.0f%%", *c))
		}
	}
	lowDisk := mem.DiskFloorBytes > 0 && mem.DiskFreeBytes < mem.DiskFloorBytes
	if mem.DiskFreeBytes > 0 || lowDisk {
		disk := "disk " + bytesize.Compact(mem.DiskFreeBytes) + " free"
		if lowDisk {
			disk += " (below the floor " + bytesize.Compact(mem.DiskFloorBytes) + ")" // DISK's red, in words
		}
		parts = append(parts, disk)
	}
	if w := st.Warm; w != nil && w.Slots > 0 {
		parts = append(parts, "warm "+bytesize.Compact(uint64(max(w.Bytes, 0)))+" of "+bytesize.Compact(uint64(max(w.CapBytes, 0))))
	}
	info := " " + joinFit(p.w-n-1, parts...)
	p.text(n, 1, info, usedStyle, p.w-n)

	n = p.text(0, 2, "commit ", styleBold, p.w)
	n += drawBar(p, n, 2, bw, mem.CommittedBytes, mem.TotalBytes, mem.ReserveBytes, '▓')
	committed := bytesize.Compact(mem.CommittedBytes)
	if mem.CommittedBytes+mem.ReserveBytes > mem.TotalBytes {
		committed += " (into the reserve)" // the bar's red, in words
	}
	parts = append([]string{committed}, waitsParts(st.Policies)...)
	p.text(n, 2, " "+joinFit(p.w-n-1, append(parts, refusalText(st.Refusals))...), styleNormal, p.w-n)
	if lowDisk {
		p.text(0, 2, "DISK   ", styleError, 7) // in place of the row's label, whole
	}
}

// drawBar draws a memory bar of w cells for value out of total, the last
// reserve of it shaded, and returns the cells used.
func drawBar(p painter, x, y, w int, value, total, reserve uint64, full rune) int {
	p.text(x, y, "[", styleDim, 1)
	floor := float64(total - min(reserve, total))
	for i := range w {
		at := (float64(i) + 0.5) / float64(w) * float64(total)
		switch {
		case at < float64(value) && at >= floor:
			p.c.SetContent(x+1+i, y, full, styleError)
		case at < float64(value):
			p.c.SetContent(x+1+i, y, full, styleNormal)
		case at >= floor:
			p.c.SetContent(x+1+i, y, '░', styleDim)
		default:
			p.c.SetContent(x+1+i, y, '·', styleDim)
		}
	}
	p.text(x+1+w, y, "]", styleDim, 1)
	return w + 2
}

// refusalText counts admission's refusals by reason.
func refusalText(refusals map[string]int) string {
	if len(refusals) == 0 {
		return "no refusals"
	}
	parts := make([]string, 0, len(refusals))
	for _, k := range slices.Sorted(maps.Keys(refusals)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, refusals[k]))
	}
	return "refused " + strings.Join(parts, ", ")
}

// runnerBrief is the installed runner for the top line: its version, the
// days GitHub's schedule leaves it, an update on trial or failed
// (status.Runner; `status` prints it whole).
func runnerBrief(r *status.Runner) string {
	if r == nil || r.Version == "" {
		return ""
	}
	s := "  runner " + r.Version
	if r.DaysLeft != nil {
		if d := *r.DaysLeft; d < 0 {
			s += " refused"
		} else {
			s += fmt.Sprintf(" %dd left", d)
		}
	}
	switch {
	case r.Trial != "":
		s += " · " + r.Trial + " on trial"
	case r.Bad != nil:
		s += " · update " + r.Bad.Version + " failed"
	case !r.AutoUpdate:
		s += " · updates off"
	}
	return s
}
