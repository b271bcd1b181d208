package tui

import (
	"fmt"

	"github.com/runner-manager/runner-manager/status"
)

// jobsPane is the jobs view's part of the model: every job the daemon's
// policies run or wait for, full screen, with why each waits.
type jobsPane struct {
	// JobsView shows the jobs full screen.
	JobsView bool
	// jobsTop is the first job row shown (the view scrolls).
	jobsTop int
}

// openJobs opens the jobs view (again: closes it).
func (m Model) openJobs() (Model, []Command) {
	if m.Detail || m.PolicyDetail {
		return m, nil
	}
	open := !m.JobsView
	m = m.closeViews()
	m.JobsView, m.jobsTop = open, 0
	return m, nil
}

// scrollJobs moves the jobs view by delta rows, within the list.
func (m Model) scrollJobs(delta int) Model {
	m.jobsTop = clamp(m.jobsTop+delta, 0, max(0, len(m.Status.Jobs)-1))
	return m
}

// jobsTitle is the view's title: the counts a person reads first.
func jobsTitle(st status.Status) string {
	running, named := 0, 0
	for _, j := range st.Jobs {
		if j.Waiting() {
			named++
		} else {
			running++
		}
	}
	return fmt.Sprintf("Jobs: %d running, %d waiting (%d named)", running, st.WaitingJobs(), named)
}

// drawJobs draws the jobs view between rows y0 and y1: the running jobs
// first, then the waiting, oldest first, each waiting one with its
// reason, then what GitHub counts without naming.
func drawJobs(p painter, m Model, y0, y1 int) {
	st := m.Status
	drawTitle(p, y0, jobsTitle(st), true)
	y := y0 + 1
	const (
		stateW  = 9
		policyW = 12
		forW    = 7
	)
	jobW := clamp(p.w/3, 12, 40)
	head := pad("STATE", stateW, false, false) + " " + pad("JOB", jobW, false, false) + " " +
		pad("POLICY", policyW, false, false) + " " + pad("FOR", forW, true, false) + "  WHY / ATTEMPT"
	p.text(2, y, head, styleBold, p.w-2)
	y++
	var lines []string
	var styles []Style
	for _, j := range st.Jobs {
		name := j.Name
		if name == "" {
			name = "job " + j.ID
		}
		if j.Repository != "" {
			name += " (" + j.Repository + ")"
		}
		since, what, sty := j.QueuedAt, j.WaitWhy(), styleWarn
		if !j.Waiting() {
			since, what, sty = j.StartedAt, j.Attempt.String()+" "+j.RunnerName, styleNormal
		}
		age := "-"
		if !since.IsZero() {
			age = fmtDuration(m.Now.Sub(since))
		}
		lines = append(lines, pad(j.State, stateW, false, false)+" "+pad(name, jobW, false, false)+" "+
			pad(orDash(j.PolicyName), policyW, false, false)+" "+pad(age, forW, true, false)+"  "+what)
		styles = append(styles, sty)
	}
	for _, w := range st.Waits() {
		if n := w.Waiting - w.Named; n > 0 {
			lines = append(lines, fmt.Sprintf("%d more waiting for %s that GitHub counts without naming them", n, w.Policy))
			styles = append(styles, styleDim)
		}
	}
	if len(lines) == 0 {
		p.text(2, y, "no jobs running or waiting", styleDim, p.w-2)
		return
	}
	for i := min(m.jobsTop, len(lines)-1); i < len(lines) && y < y1; i++ {
		p.text(2, y, lines[i], styles[i], p.w-2)
		y++
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
