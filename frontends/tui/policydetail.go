package tui

import (
	"fmt"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/status"
)

// policyDetailPane is the policy detail view's part of the model: the
// selected policy full screen, with why its jobs wait, its peaks and its
// last attempts.
type policyDetailPane struct {
	// PolicyDetail shows the selected policy full screen.
	PolicyDetail bool
}

// openPolicy opens the selected policy's detail.
func (m Model) openPolicy() (Model, []Command) {
	if m.Detail {
		return m, nil
	}
	if _, ok := m.SelectedPolicy(); !ok {
		return m.infof("no policy selected"), nil
	}
	m.PolicyDetail, m.Pane = true, PanePolicies
	return m, nil
}

// policyAttemptsShown is how many of a policy's last attempts its detail
// lists at most.
const policyAttemptsShown = 10

// drawPolicyDetail draws the selected policy between rows y0 and y1.
func drawPolicyDetail(p painter, m Model, y0, y1 int) {
	r, ok := m.SelectedPolicy()
	if !ok {
		return
	}
	drawTitle(p, y0, "Policy "+r.Name, true)
	d := &detailLines{p: p, y: y0 + 1}
	state, st := "active", styleNormal
	if r.Paused {
		state, st = "paused", styleDim
	}
	d.line("state", span{state, st}, span{fmt.Sprintf(" · %s · %s", r.Mode, r.Target), styleNormal})
	if r.Fleet {
		fleet := "the fleet's: every host serves it, max is the fleet's"
		if r.FleetSet != nil {
			fleet = r.FleetSet.Summary()
		}
		d.wrapped("fleet", fleet, styleNormal, y1)
	}
	d.line("runners", span{fmt.Sprintf("live %d (idle %d, busy %d) · min idle %d · max %d", r.Live, r.Idle, r.Busy, r.MinIdle, r.Max), styleNormal})
	d.line("demand", span{fmt.Sprintf("%d assigned + %d queued at GitHub · admitted %d · waiting %d", r.Demand, r.Queued, r.Admitted, r.Waiting), styleNormal})
	if sp := spareLine(r.Policy, m.Status.Memory.MaxSpares); sp != "" {
		d.line("spares", span{sp, styleNormal})
	}
	if r.SpareNote != "" {
		d.wrapped("held", spareHeld(r.SpareNote), styleWarn, y1)
	}
	if r.Waiting > 0 && r.WaitReason != "" {
		d.wrapped("waits", r.WaitReason, styleWarn, y1)
	}
	if r.LastRefusal != "" {
		d.wrapped("refusal", r.LastRefusal, styleNormal, y1)
	}
	if r.LastError != "" {
		d.wrapped("error", r.LastError, styleError, y1)
	}
	peaks := "expected " + bytesize.Compact(r.ExpectedPeakBytes)
	if r.ExpectedPeakBytes == 0 {
		peaks = "expected -"
	}
	atts := policyAttempts(m.History, r.ID, policyAttemptsShown)
	var highest uint64
	for _, a := range atts {
		highest = max(highest, a.Usage.PeakRSSBytes)
	}
	if highest > 0 {
		peaks += fmt.Sprintf(" · highest of its last %d attempts %s", len(atts), bytesize.Compact(highest))
	}
	d.line("peaks", span{peaks, styleNormal})
	for _, w := range warmLines(m, r.Policy) {
		d.line("warm", span{w, styleNormal})
	}
	if js := r.JobStart; js.Jobs > 0 {
		d.line("starts", span{fmt.Sprintf("%d in the last hour · queued → taken p50 %s p95 %s · ours p50 %s p95 %s",
			js.Jobs, fmtLatency(js.P50), fmtLatency(js.P95), fmtLatency(js.OursP50), fmtLatency(js.OursP95)), styleNormal})
	}
	if d.y >= y1 {
		return
	}
	drawTitle(p, d.y, "Last attempts", false)
	d.y++
	if len(atts) == 0 {
		d.line("", span{"(none in the journal)", styleDim})
	}
	for _, a := range atts {
		if d.y >= y1 {
			return
		}
		p.text(1, d.y, policyAttemptLine(a, m), stateStyle(a.State), p.w-1)
		d.y++
	}
}

// warmLines are the workspace slots of the policy's repository, one line
// per backend: slots, size, hits of uses, last use.
func warmLines(m Model, p status.Policy) []string {
	repo := policyRepo(m, p)
	if repo == "" || m.Status.Warm == nil {
		return nil
	}
	var out []string
	for _, r := range m.Status.Warm.Repos {
		if !strings.EqualFold(r.Repo, repo) {
			continue
		}
		held := ""
		if r.Held > 0 {
			held = fmt.Sprintf(", %d held", r.Held)
		}
		out = append(out, fmt.Sprintf("%s %s: %d slots%s · %s · %d hits of %d uses · last %s", r.Repo, r.Backend, r.Slots, held,
			bytesize.Compact(uint64(max(r.Bytes, 0))), r.Hits, r.Uses, fmtDuration(m.Now.Sub(r.LastUsed))+" ago"))
	}
	return out
}

// policyRepo is the repository a policy serves ("" for an organization's
// or an enterprise's): from the journal's policy when known, else its
// target as the status writes it ("repo:owner/name group=…").
func policyRepo(m Model, p status.Policy) string {
	if pol, ok := m.Policies[p.ID]; ok {
		if pol.Target.Scope.Kind == rm.ScopeRepository {
			return pol.Target.Scope.Name
		}
		return ""
	}
	rest, ok := strings.CutPrefix(p.Target, "repo:")
	if !ok {
		return ""
	}
	repo, _, _ := strings.Cut(rest, " ")
	return repo
}

// wrapped draws a labelled value over as many rows as it needs, not past
// row y1: the full text of a refusal or an error.
func (d *detailLines) wrapped(label, text string, st Style, y1 int) {
	w := max(1, d.p.w-detailX)
	for _, part := range wrap(text, w) {
		if d.y >= y1 {
			return
		}
		d.line(label, span{part, st})
		label = ""
	}
}

// wrap cuts s into lines of at most w cells, at spaces where it can.
func wrap(s string, w int) []string {
	var out []string
	line := ""
	for _, word := range strings.Fields(s) {
		switch {
		case line == "":
			line = word
		case textWidth(line)+1+textWidth(word) <= w:
			line += " " + word
		default:
			out = append(out, line)
			line = word
		}
		for textWidth(line) > w {
			r := []rune(line)
			out = append(out, string(r[:w]))
			line = string(r[w:])
		}
	}
	if line != "" {
		out = append(out, line)
	}
	return out
}

// policyAttempts are the policy's newest n attempts of the journal's
// history (which comes newest first).
func policyAttempts(history []rm.Attempt, id rm.PolicyID, n int) []rm.Attempt {
	var out []rm.Attempt
	for _, a := range history {
		if a.Policy == id && len(out) < n {
			out = append(out, a)
		}
	}
	return out
}

// policyAttemptLine is one of a policy's last attempts: when it was
// created, its state, how long its job waited for it (created to busy),
// its peak and its job.
func policyAttemptLine(a rm.Attempt, m Model) string {
	wait := "-"
	if !a.BusyAt.IsZero() {
		wait = fmtDuration(a.BusyAt.Sub(a.CreatedAt))
	}
	peak := "-"
	if a.Usage.PeakRSSBytes > 0 {
		peak = bytesize.Compact(a.Usage.PeakRSSBytes)
	}
	job := a.Job.Name
	if job == "" {
		job = "-"
	}
	return fmt.Sprintf("%s %-9s wait %6s  peak %5s  %s", clock(a.CreatedAt, m.Now), a.State, wait, peak, job)
}

// spareLine is a policy's warm spares for its detail: live and wanted,
// how the target is set, the host's bound and the boot the target is
// sized by ("": the policy keeps none).
func spareLine(r status.Policy, hostBound *int) string {
	if r.SpareCap == 0 && r.Spares == 0 {
		return ""
	}
	how := "fixed"
	if r.SpareAuto {
		how = "auto"
	}
	out := fmt.Sprintf("%d live, %d wanted (%s, at most %d)", r.Spares, r.SpareTarget, how, r.SpareCap)
	if hostBound != nil {
		out += fmt.Sprintf(" · host bound %d", *hostBound)
	}
	if r.Boot > 0 {
		out += " · boot " + fmtDuration(r.Boot)
	}
	return out
}
