package tui

import (
	"fmt"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// The smallest terminal the view lays out in; smaller ones get a note.
const (
	MinWidth  = 50
	MinHeight = 12
)

// headerRows is how many rows the header takes.
const headerRows = 3

var (
	styleNormal   = Style{}
	styleBold     = Style{Bold: true}
	styleDim      = Style{FG: ColorGray}
	styleTitle    = Style{FG: ColorCyan, Bold: true}
	styleError    = Style{FG: ColorRed, Bold: true}
	styleWarn     = Style{FG: ColorYellow, Bold: true}
	styleSelected = Style{Reverse: true}
)

// Draw paints m on c: the whole screen, every time. It reads the canvas's
// size, not the model's, so a canvas of any size is drawn consistently.
func Draw(c Canvas, m Model) {
	p := newPainter(c)
	for y := range p.h {
		p.fill(0, y, p.w, ' ', styleNormal)
	}
	if p.w < MinWidth || p.h < MinHeight {
		msg := fmt.Sprintf("terminal too small: %d×%d, need %d×%d", p.w, p.h, MinWidth, MinHeight)
		p.text(0, 0, msg, styleWarn, p.w)
		return
	}
	drawHeader(p, m)
	if m.Detail {
		drawDetail(p, m, headerRows, p.h-1)
	} else {
		drawLists(p, m, headerRows, p.h-1)
	}
	drawStatusLine(p, m, p.h-1)
	if m.Help {
		drawHelp(p)
	}
}

func drawHeader(p painter, m Model) {
	st := m.Status
	n := p.text(0, 0, "runner-manager", styleTitle, p.w)

	// The right end: GitHub's budget, then the clock if there is room.
	budget, budgetStyle := "GitHub –", styleNormal
	if b := st.Budget; !b.SeenAt.IsZero() {
		budget = fmt.Sprintf("GitHub %d/%d", b.Remaining, b.Limit)
		if !b.Reset.IsZero() {
			budget += " reset " + b.Reset.In(m.Now.Location()).Format("15:04")
		}
		if b.Limit > 0 && b.Remaining*10 < b.Limit {
			budgetStyle = styleWarn
		}
	}
	host := ""
	if m.HaveStatus && st.Host.Name != "" {
		host = fmt.Sprintf("  %s %s/%s", st.Host.Name, st.Host.OS, st.Host.Arch)
		if st.Host.CPUs > 0 {
			host += fmt.Sprintf(" %dcpu", st.Host.CPUs)
		}
	}
	// Room goes to the budget first, then the host, then the clock.
	clk := "  " + m.Now.Format("15:04:05")
	bw := textWidth(budget)
	if n+textWidth(host)+2+bw+textWidth(clk) > p.w {
		clk = ""
	}
	if n+2+bw > p.w {
		budget, bw = "", 0
	}
	cw := textWidth(clk)
	p.text(p.w-bw-cw, 0, budget, budgetStyle, bw)
	p.text(p.w-cw, 0, clk, styleNormal, cw)
	p.text(n, 0, fit(host, p.w-n-bw-cw-2, false), styleBold, p.w-n)

	if !m.HaveStatus {
		p.text(0, 1, "waiting for the live figures…", styleDim, p.w)
		return
	}
	mem := st.Memory
	if mem.TotalBytes == 0 {
		p.text(0, 1, "memory  no live figures (is the daemon running?)", styleDim, p.w)
	} else {
		bw := clamp(p.w/3, 10, 50)
		used := mem.TotalBytes - min(mem.AvailableBytes, mem.TotalBytes)
		n := p.text(0, 1, "used   ", styleBold, p.w)
		n += drawBar(p, n, 1, bw, used, mem.TotalBytes, mem.ReserveBytes, '█')
		info := fmt.Sprintf(" %s of %s · reserve %s", fmtBytes(used), fmtBytes(mem.TotalBytes), fmtBytes(mem.ReserveBytes))
		if mem.DiskFreeBytes > 0 {
			info += " · disk " + fmtBytes(mem.DiskFreeBytes) + " free"
		}
		usedStyle := styleNormal
		if used+mem.ReserveBytes > mem.TotalBytes {
			usedStyle = styleWarn
		}
		p.text(n, 1, info, usedStyle, p.w-n)

		n = p.text(0, 2, "commit ", styleBold, p.w)
		n += drawBar(p, n, 2, bw, mem.CommittedBytes, mem.TotalBytes, mem.ReserveBytes, '▓')
		p.text(n, 2, " "+fmtBytes(mem.CommittedBytes)+" · "+capacityText(m)+" · "+refusalText(st.Refusals), styleNormal, p.w-n)
		if mem.DiskFloorBytes > 0 && mem.DiskFreeBytes < mem.DiskFloorBytes {
			p.text(0, 2, "DISK ", styleError, 5)
		}
		return
	}
	p.text(0, 2, capacityText(m)+" · "+refusalText(st.Refusals), styleNormal, p.w)
}

// drawBar draws a memory bar of w cells for value out of total, the last
// reserve of it shaded, and returns the cells used.
func drawBar(p painter, x, y, w int, value, total, reserve uint64, full rune) int {
	p.text(x, y, "[", styleDim, 1)
	for i := range w {
		at := (float64(i) + 0.5) / float64(w) * float64(total)
		switch {
		case at < float64(value):
			st := styleNormal
			if at >= float64(total-min(reserve, total)) {
				st = styleError
			}
			p.c.SetContent(x+1+i, y, full, st)
		case at >= float64(total-min(reserve, total)):
			p.c.SetContent(x+1+i, y, '░', styleDim)
		default:
			p.c.SetContent(x+1+i, y, '·', styleDim)
		}
	}
	p.text(x+1+w, y, "]", styleDim, 1)
	return w + 2
}

func capacityText(m Model) string {
	admitted := 0
	for _, p := range m.Status.Policies {
		if !p.Paused {
			admitted += p.Admitted
		}
	}
	return fmt.Sprintf("admitted %d", admitted)
}

func refusalText(refusals map[string]int) string {
	if len(refusals) == 0 {
		return "no refusals"
	}
	keys := make([]string, 0, len(refusals))
	for k := range refusals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, refusals[k]))
	}
	return "refused " + strings.Join(parts, ", ")
}

// column is one column of a list: a fixed width, or a minimum growing by
// its share (flex) of the room left, up to maxw.
type column struct {
	title       string
	w, flex     int
	maxw        int
	right, tail bool
}

// gutter is the selection marker's room at the left of each row.
const gutter = 2

// widths lays columns out in total cells, one space between them.
func widths(cols []column, total int) []int {
	ws := make([]int, len(cols))
	used, flex := len(cols)-1, 0
	for i, c := range cols {
		ws[i] = c.w
		used += c.w
		flex += c.flex
	}
	extra := total - used
	for extra > 0 && flex > 0 {
		grown := 0
		for i, c := range cols {
			if c.flex == 0 || (c.maxw > 0 && ws[i] >= c.maxw) {
				continue
			}
			add := max(1, extra*c.flex/flex)
			if c.maxw > 0 {
				add = min(add, c.maxw-ws[i])
			}
			add = min(add, extra-grown)
			ws[i] += add
			grown += add
			if grown == extra {
				break
			}
		}
		if grown == 0 {
			break
		}
		extra -= grown
		flex = 0
		for i, c := range cols {
			if c.flex > 0 && (c.maxw == 0 || ws[i] < c.maxw) {
				flex += c.flex
			}
		}
	}
	return ws
}

// row joins cells into one line laid out by cols and ws.
func row(cols []column, ws []int, values []string) string {
	var b strings.Builder
	for i, c := range cols {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(pad(values[i], ws[i], c.right, c.tail))
	}
	return b.String()
}

func titles(cols []column) []string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = c.title
	}
	return out
}

var policyCols = []column{
	{title: "NAME", w: 8, flex: 1, maxw: 24},
	{title: "TARGET", w: 14, flex: 2},
	{title: "MODE", w: 9},
	{title: "STATE", w: 6},
	{title: "L/I/B/MAX", w: 9, right: true},
	{title: "DEMAND", w: 6, right: true},
	{title: "LAST REFUSAL", w: 12, flex: 3},
}

var attemptCols = []column{
	{title: "STATE", w: 8},
	{title: "POLICY", w: 10, flex: 1, maxw: 16},
	{title: "RUNNER", w: 13, flex: 3, maxw: 37, tail: true},
	{title: "JOB", w: 10, flex: 4},
	{title: "ELAPSED", w: 7, right: true},
	{title: "RSS", w: 5, right: true},
	{title: "CPU", w: 4, right: true},
	{title: "PEAK", w: 5, right: true},
}

func drawLists(p painter, m Model, y0, y1 int) {
	prows, arows := m.PolicyRows(), m.AttemptRows()
	avail := y1 - y0
	pshown := clamp(len(prows), 1, max(1, (avail-4)/3))

	title := paneTitle("Policies", len(prows), len(m.Status.Policies), m.Filter)
	drawTitle(p, y0, title, m.Pane == PanePolicies)
	ws := widths(policyCols, p.w-gutter)
	p.text(gutter, y0+1, row(policyCols, ws, titles(policyCols)), styleDim, p.w)
	switch {
	case len(prows) == 0 && len(m.Status.Policies) > 0:
		p.text(gutter, y0+2, "(no policy matches the filter)", styleDim, p.w)
	case len(prows) == 0 && m.HaveStatus:
		p.text(gutter, y0+2, "(no policies: add one with runner-manager policy add)", styleDim, p.w)
	case len(prows) == 0:
		p.text(gutter, y0+2, "(reading…)", styleDim, p.w)
	}
	off := scrollOffset(m.policyIdx, pshown)
	for i := 0; i < pshown && off+i < len(prows); i++ {
		r := prows[off+i]
		counts := fmt.Sprintf("%d/%d/%d/%d", r.Live, r.Idle, r.Busy, r.Max)
		if r.Pending {
			counts += "*"
		}
		state, st := "active", styleNormal
		if r.Paused {
			state, st = "paused", styleDim
		}
		last, lastStyle := r.LastRefusal, st
		if r.LastError != "" {
			last, lastStyle = "error: "+r.LastError, styleError
		}
		vals := []string{r.Name, shortTarget(r.Target), r.Mode, state, counts, itoa(r.Demand), ""}
		selected := r.ID == m.SelPolicy
		drawRow(p, y0+2+i, row(policyCols, ws, vals), st, selected, m.Pane == PanePolicies)
		if last != "" {
			x := gutter + len(ws) - 1
			for _, w := range ws[:len(ws)-1] {
				x += w
			}
			if selected && m.Pane == PanePolicies {
				lastStyle.Reverse = true
			}
			p.text(x, y0+2+i, fit(last, ws[len(ws)-1], false), lastStyle, ws[len(ws)-1])
		}
	}

	y := y0 + 2 + pshown
	title = paneTitle("Attempts", len(arows), -1, m.Filter)
	drawTitle(p, y, title, m.Pane == PaneAttempts)
	ws = widths(attemptCols, p.w-gutter)
	p.text(gutter, y+1, row(attemptCols, ws, titles(attemptCols)), styleDim, p.w)
	ashown := y1 - (y + 2)
	switch {
	case len(arows) == 0 && m.Filter != "" && (len(m.History) > 0 || len(m.Status.Attempts) > 0):
		p.text(gutter, y+2, "(no attempt matches the filter)", styleDim, p.w)
	case len(arows) == 0:
		p.text(gutter, y+2, "(no attempts yet)", styleDim, p.w)
	}
	off = scrollOffset(m.attemptIdx, ashown)
	for i := 0; i < ashown && off+i < len(arows); i++ {
		r := arows[off+i]
		vals := []string{
			string(r.State), r.PolicyName, r.Runner, r.Job, fmtDuration(r.elapsed(m.Now)),
			"-", "-", "-",
		}
		if r.HasUsage {
			vals[5], vals[6] = fmtBytes(r.RSS), fmtCPU(r.CPU)
		}
		if r.Peak > 0 {
			vals[7] = fmtBytes(r.Peak)
		}
		selected := r.ID == m.SelAttempt
		drawRow(p, y+2+i, row(attemptCols, ws, vals), stateStyle(r.State), selected, m.Pane == PaneAttempts)
	}
}

func (r AttemptRow) elapsed(now time.Time) time.Duration {
	if r.CreatedAt.IsZero() {
		return 0
	}
	if r.State.Ended() && !r.EndedAt.IsZero() {
		return r.EndedAt.Sub(r.CreatedAt)
	}
	return now.Sub(r.CreatedAt)
}

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

// drawRow draws one list row with its selection marker: reversed in the
// focused pane, bold in the other.
func drawRow(p painter, y int, text string, st Style, selected, focused bool) {
	marker := "  "
	if selected {
		marker = "▸ "
		if focused {
			st.Reverse = true
		} else {
			st.Bold = true
		}
	}
	p.text(0, y, marker, styleBold, gutter)
	p.line(gutter, y, text, st)
}

func paneTitle(name string, shown, total int, filter string) string {
	if filter != "" && total >= 0 && shown != total {
		return fmt.Sprintf("%s (%d of %d, filter %q)", name, shown, total, filter)
	}
	if filter != "" {
		return fmt.Sprintf("%s (%d, filter %q)", name, shown, filter)
	}
	return fmt.Sprintf("%s (%d)", name, shown)
}

// drawTitle draws a pane's title rule: heavy when the pane has the focus.
func drawTitle(p painter, y int, title string, focused bool) {
	rule, st := '─', styleDim
	if focused {
		rule, st = '━', styleTitle
	}
	p.fill(0, y, p.w, rule, st)
	p.text(2, y, " "+title+" ", st, p.w-4)
}

// scrollOffset keeps the selected row in a window of n rows.
func scrollOffset(idx, n int) int {
	if n <= 0 || idx < n {
		return 0
	}
	return idx - n + 1
}

func drawDetail(p painter, m Model, y0, y1 int) {
	r, ok := m.SelectedAttempt()
	if !ok {
		return
	}
	name := r.Runner
	if name == "" {
		name = r.ID.String()
	}
	drawTitle(p, y0, "Attempt "+name, true)
	y := y0 + 1
	// Each line: a label, then its value from column x = 10.
	label := func(l string) int {
		p.text(1, y, l, styleBold, 8)
		return 10
	}

	x := label("state")
	n := p.text(x, y, string(r.State), stateStyle(r.State), p.w-x)
	info := fmt.Sprintf(" for %s · policy %s", fmtDuration(r.stateAge(m.Now)), r.PolicyName)
	if !r.CreatedAt.IsZero() {
		info += " · created " + clock(r.CreatedAt, m.Now)
	}
	p.text(x+n, y, info, styleNormal, p.w-x-n)
	y++

	x = label("job")
	job := "-"
	if rec := r.Record; rec != nil && rec.Job.ID != 0 {
		job = fmt.Sprintf("%s (run %d, job %d)", rec.Job.Name, rec.Job.RunID, rec.Job.ID)
		if rec.Job.Name == "" {
			job = fmt.Sprintf("job %d (run %d)", rec.Job.ID, rec.Job.RunID)
		}
		if rec.Job.Workflow != "" {
			job += " · " + rec.Job.Workflow
		}
	} else if r.Job != "" {
		job = r.Job
	}
	p.text(x, y, job, styleNormal, p.w-x)
	y++

	x = label("history")
	if rec := r.Record; rec != nil {
		var prev time.Time
		for _, s := range rm.AttemptStates {
			at := rec.StateAt(s)
			if at.IsZero() || (s.Ended() && s != rec.State) {
				continue
			}
			line := pad(string(s), 12, false, false) + clock(at, m.Now)
			if !prev.IsZero() {
				line += "  " + fmtDelta(at.Sub(prev))
			}
			prev = at
			p.text(x, y, line, stateStyle(s), p.w-x)
			y++
		}
	} else {
		p.text(x, y, "(not in the journal yet)", styleDim, p.w-x)
		y++
	}

	s := m.Series[r.ID]
	sw := max(8, min(MaxSamples, p.w-x-30))
	x = label("rss")
	if s != nil && len(s.RSS) > 0 {
		n := p.text(x, y, sparkline(s.RSS, sw, 0), Style{FG: ColorBlue}, sw)
		text := "  now " + fmtBytes(s.RSS[len(s.RSS)-1])
		if r.Peak > 0 {
			text += "  peak " + fmtBytes(r.Peak)
		}
		p.text(x+n, y, text, styleNormal, p.w-x-n)
	} else {
		text := "(no samples seen)"
		if r.Peak > 0 {
			text += "  peak " + fmtBytes(r.Peak)
		}
		p.text(x, y, text, styleDim, p.w-x)
	}
	y++
	x = label("cpu")
	var avg, peak uint32
	if rec := r.Record; rec != nil {
		avg, peak = rec.Usage.CPUAvgMillicores, rec.Usage.CPUPeakMillicores
	}
	if s != nil && len(s.CPU) > 0 {
		n := p.text(x, y, sparkline(s.CPU, sw, 1000), Style{FG: ColorGreen}, sw)
		text := "  now " + fmtCPU(s.CPU[len(s.CPU)-1])
		if avg > 0 || peak > 0 {
			text += fmt.Sprintf("  avg %s  peak %s", fmtCPU(avg), fmtCPU(peak))
		}
		p.text(x+n, y, text, styleNormal, p.w-x-n)
	} else {
		text := "(no samples seen)"
		if avg > 0 || peak > 0 {
			text += fmt.Sprintf("  avg %s  peak %s", fmtCPU(avg), fmtCPU(peak))
		}
		p.text(x, y, text, styleDim, p.w-x)
	}
	y++

	x = label("exit")
	switch rec := r.Record; {
	case rec == nil || (rec.ExitCode == nil && rec.Outcome.IsZero()):
		p.text(x, y, "- (running)", styleDim, p.w-x)
	default:
		code := "code -"
		if rec.ExitCode != nil {
			code = fmt.Sprintf("code %d", *rec.ExitCode)
		}
		out := rec.Outcome.String()
		if out == "" {
			out = "no outcome yet"
		}
		st := styleNormal
		if rec.Outcome.Kind == rm.Failed {
			st = styleError
		}
		p.text(x, y, code+" · "+out, st, p.w-x)
	}
	y++
	if rec := r.Record; rec != nil && rec.LastMessage != "" {
		x = label("note")
		p.text(x, y, rec.LastMessage, styleNormal, p.w-x)
		y++
	}

	if y >= y1 {
		return
	}
	lines := y1 - y - 1
	logTitle := "runner.log"
	if lines > 0 && len(m.Log.Lines) > 0 {
		logTitle += fmt.Sprintf(" (last %d lines)", min(lines, len(m.Log.Lines)))
	}
	drawTitle(p, y, logTitle, false)
	y++
	switch {
	case m.Log.ID != r.ID || !m.Log.Loaded:
		p.text(1, y, "(reading…)", styleDim, p.w-1)
	case m.Log.Err != "":
		p.text(1, y, "log: "+m.Log.Err, styleError, p.w-1)
	case len(m.Log.Lines) == 0 && r.State.Ended():
		p.text(1, y, "(no log: it went with the attempt's directory)", styleDim, p.w-1)
	case len(m.Log.Lines) == 0:
		p.text(1, y, "(no log yet)", styleDim, p.w-1)
	default:
		tail := m.Log.Lines[max(0, len(m.Log.Lines)-lines):]
		for i, l := range tail {
			p.text(1, y+i, l, styleNormal, p.w-1)
		}
	}
}

// stateAge is how long the attempt has been in its state (or lived, once
// ended).
func (r AttemptRow) stateAge(now time.Time) time.Duration {
	if r.Record == nil {
		return r.elapsed(now)
	}
	at := r.Record.StateAt(r.State)
	if r.State.Ended() {
		return r.elapsed(now)
	}
	if at.IsZero() {
		return 0
	}
	return now.Sub(at)
}

// clock prints a time of day in the UI's time zone.
func clock(t, now time.Time) string { return t.In(now.Location()).Format("15:04:05") }

var helpLines = []string{
	"↑ ↓  j k     move the selection",
	"PgUp PgDn    a page; g G first, last",
	"tab ← →      switch pane",
	"enter        open the attempt's detail",
	"esc  ⌫       back; clear the filter",
	"p            pause or resume the policy",
	"+ -          raise or lower its max",
	"x            stop the attempt (asks y/n)",
	"/            filter: type, enter, esc",
	"r            read the figures now",
	"ctrl-l       repaint the screen",
	"q            quit (in a detail: back)",
	"",
	"any key closes this help",
}

func drawHelp(p painter) {
	w := 0
	for _, l := range helpLines {
		w = max(w, textWidth(l))
	}
	w = min(w+4, p.w)
	h := min(len(helpLines)+2, p.h)
	x0, y0 := (p.w-w)/2, (p.h-h)/2
	p.fill(x0, y0, w, '─', styleTitle)
	p.fill(x0, y0+h-1, w, '─', styleTitle)
	for y := y0 + 1; y < y0+h-1; y++ {
		p.fill(x0, y, w, ' ', styleNormal)
		p.c.SetContent(x0, y, '│', styleTitle)
		p.c.SetContent(x0+w-1, y, '│', styleTitle)
		if i := y - y0 - 1; i < len(helpLines) {
			p.text(x0+2, y, helpLines[i], styleNormal, w-4)
		}
	}
	p.c.SetContent(x0, y0, '┌', styleTitle)
	p.c.SetContent(x0+w-1, y0, '┐', styleTitle)
	p.c.SetContent(x0, y0+h-1, '└', styleTitle)
	p.c.SetContent(x0+w-1, y0+h-1, '┘', styleTitle)
	p.text(x0+2, y0, " keys ", styleTitle, w-4)
}

func drawStatusLine(p painter, m Model, y int) {
	switch {
	case m.Editing:
		n := p.text(0, y, "/", styleWarn, p.w)
		n += p.text(n, y, m.Draft, styleNormal, p.w-n-1)
		p.text(n, y, "▏", styleWarn, 1)
		hint := "enter apply · esc clear"
		if rw := textWidth(hint); n+3+rw <= p.w {
			p.text(p.w-rw, y, hint, styleDim, rw)
		}
	case !m.Confirm.IsZero():
		p.line(0, y, fmt.Sprintf("stop runner %s? y/n", m.ConfirmName), styleWarn)
	case m.Msg != "":
		st := styleNormal
		if m.MsgErr {
			st = styleError
		}
		p.text(0, y, m.Msg, st, p.w)
	case m.StatusErr != "":
		p.text(0, y, m.StatusErr, styleError, p.w)
	case m.HistoryErr != "":
		p.text(0, y, "journal: "+m.HistoryErr, styleError, p.w)
	default:
		hints := "tab pane · ⏎ detail · p pause · +/- max · x stop · / filter · ? help · q quit"
		if m.Detail {
			hints = "esc back · ↑↓ other attempt · x stop · ? help"
		}
		p.text(0, y, hints, styleDim, p.w)
	}
}
