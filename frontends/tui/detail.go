package tui

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/status"
)

// detailPane is the detail view's part of the model: the selected attempt
// full screen, with its runner log and usage over time.
type detailPane struct {
	// Detail shows the selected attempt full screen.
	Detail bool
	// Log is the tail of the detail view's attempt's runner log.
	Log LogTail
	// Series holds RSS and CPU samples per attempt, from successive
	// Status snapshots, for the detail view's sparklines.
	Series map[rm.AttemptID]*Series

	fetchingLog bool
}

// LogTail is the tail of one attempt's runner log.
type LogTail struct {
	ID     rm.AttemptID
	Lines  []string
	Err    string
	Loaded bool
}

// Series is one attempt's usage samples, oldest first.
type Series struct {
	RSS  []uint64
	CPU  []uint32
	Last time.Time
}

func (s *Series) add(at time.Time, rss uint64, cpu uint32) {
	if !at.After(s.Last) {
		return // the same snapshot read twice
	}
	s.Last = at
	s.RSS = append(s.RSS, rss)
	s.CPU = append(s.CPU, cpu)
	if n := len(s.RSS); n > MaxSamples {
		s.RSS = append(s.RSS[:0], s.RSS[n-MaxSamples:]...)
		s.CPU = append(s.CPU[:0], s.CPU[n-MaxSamples:]...)
	}
}

// sample adds the live attempts' usage in st to their series.
func (m Model) sample(st status.Status) {
	at := st.At
	if at.IsZero() {
		at = m.Now
	}
	for _, a := range st.Attempts {
		s := m.Series[a.ID]
		if s == nil {
			s = &Series{}
			m.Series[a.ID] = s
		}
		s.add(at, a.RSSBytes, a.CPUMillicores)
	}
}

// pruneSeries forgets the samples of the attempts seen longest ago once
// there are too many, keeping the one the detail view shows.
func (m Model) pruneSeries() {
	for len(m.Series) > maxSeries {
		var oldest rm.AttemptID
		var at time.Time
		for id, s := range m.Series {
			if id == m.SelAttempt {
				continue
			}
			if oldest.IsZero() || s.Last.Before(at) {
				oldest, at = id, s.Last
			}
		}
		if oldest.IsZero() {
			return
		}
		delete(m.Series, oldest)
	}
}

func (m Model) logLoaded(ev LogLoaded) Model {
	m.fetchingLog = false
	if ev.ID == m.SelAttempt {
		m.Log = LogTail{ID: ev.ID, Lines: ev.Lines, Loaded: true}
		if ev.Err != nil {
			m.Log.Err = oneLine(ev.Err)
		}
	}
	return m
}

// followLog reads the log of the attempt the detail view shows now, or
// when the read in flight (of the attempt shown before) comes back.
func (m Model) followLog(cmds []Command) (Model, []Command) {
	if !m.Detail || m.SelAttempt.IsZero() {
		return m, cmds
	}
	if m.Log.ID != m.SelAttempt {
		m.Log = LogTail{ID: m.SelAttempt} // another attempt shows now
	}
	if !m.Log.Loaded && !m.fetchingLog {
		cmds = append(cmds, FetchLog{ID: m.SelAttempt, Lines: LogLines})
		m.fetchingLog = true
	}
	return m, cmds
}

// enter opens the selected attempt's detail; on the policies pane, it
// moves to the attempts pane.
func (m Model) enter() (Model, []Command) {
	if m.PolicyDetail {
		return m, nil
	}
	if m.Pane == PanePolicies {
		m.Pane = PaneAttempts
		return m, nil
	}
	if _, ok := m.SelectedAttempt(); ok {
		m.Detail = true // Update reads the log of the newly shown attempt
	}
	return m, nil
}

// stateAge is how long the attempt has been in its state (or lived, once
// ended).
func (r AttemptRow) stateAge(now time.Time) time.Duration {
	if r.Record == nil || r.State.Ended() {
		return r.elapsed(now)
	}
	at := r.Record.StateAt(r.State)
	if at.IsZero() {
		return 0
	}
	return now.Sub(at)
}

// ageWord is how the state line tells the age: an ended attempt "failed
// after 25s" (it lived 25 s), a live one "idle for 25s".
func ageWord(ended bool) string {
	if ended {
		return "after"
	}
	return "for"
}

// drawDetail draws the selected attempt between rows y0 and y1: its
// figures, then as much of its log as fits.
func drawDetail(p painter, m Model, y0, y1 int) {
	r, ok := m.SelectedAttempt()
	if !ok {
		return
	}
	drawTitle(p, y0, "Attempt "+r.name(), true)
	d := &detailLines{p: p, y: y0 + 1}
	info := fmt.Sprintf(" %s %s · policy %s", ageWord(r.State.Ended()), fmtDuration(r.stateAge(m.Now)), r.PolicyName)
	if !r.CreatedAt.IsZero() {
		info += " · created " + clock(r.CreatedAt, m.Now)
	}
	d.line("state", span{string(r.State), stateStyle(r.State)}, span{info, styleNormal})
	d.line("job", span{jobDetail(r), styleNormal})
	d.history(r.Record, m.Now)
	d.usage(r, m.Series[r.ID])
	d.exit(r.Record)
	if rec := r.Record; rec != nil && rec.LastMessage != "" {
		d.line("note", span{rec.LastMessage, styleNormal})
	}
	if d.y < y1 {
		drawLog(p, m.Log, r, d.y, y1)
	}
}

// detailLines draws the detail view's labelled lines, from row y down.
type detailLines struct {
	p painter
	y int
}

// detailX is the column the detail view's values start at.
const detailX = 10

// span is a piece of a line in a style of its own.
type span struct {
	text  string
	style Style
}

// line draws a label and its value's spans, and moves to the next row.
func (d *detailLines) line(label string, spans ...span) {
	d.p.text(1, d.y, label, styleBold, 8)
	x := detailX
	for _, s := range spans {
		x += d.p.text(x, d.y, s.text, s.style, d.p.w-x)
	}
	d.y++
}

// jobDetail names the attempt's job in full: name, run and job ids,
// workflow.
func jobDetail(r AttemptRow) string {
	rec := r.Record
	if rec == nil || !rec.Job.Known() {
		return cmp.Or(r.Job, "-")
	}
	j := rec.Job
	s := fmt.Sprintf("%s (run %d, %s)", j.Name, j.RunID, jobIDs(j))
	if j.Name == "" {
		s = fmt.Sprintf("%s (run %d)", jobIDs(j), j.RunID)
	}
	if j.Workflow != "" {
		s += " · " + j.Workflow
	}
	return s
}

// jobIDs names a job by its ids: "job 42" when its id is its REST number
// (classic mode), "job 3f2a…" for a scale-set jobId, and both, "job 42, id
// 3f2a…", when the REST number of a scale-set job is known too.
func jobIDs(j rm.Job) string {
	switch {
	case j.Number == 0:
		return "job " + j.ID
	case itoa(j.Number) == j.ID:
		return "job " + j.ID
	}
	return fmt.Sprintf("job %d, id %s", j.Number, j.ID)
}

// history draws one line per state the attempt went through, with the
// time it took to get there.
func (d *detailLines) history(rec *rm.Attempt, now time.Time) {
	if rec == nil {
		d.line("history", span{"(not in the journal yet)", styleDim})
		return
	}
	label := "history"
	var prev time.Time
	for _, s := range rm.AttemptStates {
		at := rec.StateAt(s)
		if at.IsZero() || (s.Ended() && s != rec.State) {
			continue
		}
		text := pad(string(s), 12, false, false) + clock(at, now)
		if !prev.IsZero() {
			text += "  " + fmtDelta(at.Sub(prev))
		}
		prev = at
		d.line(label, span{text, stateStyle(s)})
		label = ""
	}
}

// usage draws the attempt's RSS and CPU lines: sparklines of the samples
// seen, the latest figure, and the journal's peak and average.
func (d *detailLines) usage(r AttemptRow, s *Series) {
	var rss []uint64
	var cpu []uint32
	if s != nil {
		rss, cpu = s.RSS, s.CPU
	}
	sw := max(8, min(MaxSamples, d.p.w-detailX-30))
	peak := ""
	if r.Peak > 0 {
		peak = "  peak " + bytesize.Compact(r.Peak)
	}
	usageLine(d, "rss", rss, 0, ColorBlue, bytesize.Compact, peak, sw)
	cpuStats := ""
	if rec := r.Record; rec != nil && (rec.Usage.CPUAvgMillicores > 0 || rec.Usage.CPUPeakMillicores > 0) {
		cpuStats = fmt.Sprintf("  avg %s  peak %s", fmtCPU(rec.Usage.CPUAvgMillicores), fmtCPU(rec.Usage.CPUPeakMillicores))
	}
	usageLine(d, "cpu", cpu, 1000, ColorGreen, fmtCPU, cpuStats, sw)
}

// usageLine draws one usage line: a sparkline of samples (scaled to at
// least top) in w cells and the latest, then stats.
func usageLine[T ~uint32 | ~uint64](d *detailLines, label string, samples []T, top T, c Color, format func(T) string, stats string, w int) {
	if len(samples) == 0 {
		d.line(label, span{"(no samples seen)" + stats, styleDim})
		return
	}
	now := "  now " + format(samples[len(samples)-1])
	d.line(label, span{sparkline(samples, w, top), Style{FG: c}}, span{now + stats, styleNormal})
}

// exit draws how the attempt ended: its exit code and outcome.
func (d *detailLines) exit(rec *rm.Attempt) {
	if rec == nil || (rec.ExitCode == nil && rec.Outcome.IsZero()) {
		d.line("exit", span{"- (running)", styleDim})
		return
	}
	code := "code -"
	if rec.ExitCode != nil {
		code = fmt.Sprintf("code %d", *rec.ExitCode)
	}
	st := styleNormal
	if rec.Outcome.Kind == rm.Failed {
		st = styleError
	}
	d.line("exit", span{code + " · " + cmp.Or(rec.Outcome.String(), "no outcome yet"), st})
}

// drawLog draws the tail of r's runner log that fits from row y to y1.
func drawLog(p painter, log LogTail, r AttemptRow, y, y1 int) {
	lines := y1 - y - 1
	title := "runner.log"
	if lines > 0 && len(log.Lines) > 0 {
		title += fmt.Sprintf(" (last %d lines)", min(lines, len(log.Lines)))
	}
	drawTitle(p, y, title, false)
	y++
	switch {
	case log.ID != r.ID || !log.Loaded:
		p.text(1, y, "(reading…)", styleDim, p.w-1)
	case log.Err != "":
		p.text(1, y, "log: "+log.Err, styleError, p.w-1)
	case len(log.Lines) == 0 && r.State.Ended():
		p.text(1, y, "(no log: it went with the attempt's directory)", styleDim, p.w-1)
	case len(log.Lines) == 0:
		p.text(1, y, "(no log yet)", styleDim, p.w-1)
	default:
		for i, l := range log.Lines[max(0, len(log.Lines)-lines):] {
			p.text(1, y+i, l, styleNormal, p.w-1)
		}
	}
}

// clock prints a time of day in the UI's time zone.
func clock(t, now time.Time) string { return t.In(now.Location()).Format("15:04:05") }

// sparkline draws values as w cells of block characters, newest on the
// right, scaled to the largest value shown (or to top when larger).
func sparkline[T ~uint32 | ~uint64](values []T, w int, top T) string {
	levels := []rune("▁▂▃▄▅▆▇█")
	if w <= 0 {
		return ""
	}
	if len(values) > w {
		values = values[len(values)-w:]
	}
	hi := top
	for _, v := range values {
		hi = max(hi, v)
	}
	var b strings.Builder
	b.WriteString(strings.Repeat(" ", w-len(values)))
	for _, v := range values {
		i := 0
		if hi > 0 {
			i = int(float64(v)/float64(hi)*float64(len(levels)-1) + 0.5)
		}
		b.WriteRune(levels[clamp(i, 0, len(levels)-1)])
	}
	return b.String()
}
