package tui

import (
	"cmp"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
)

// PolicyRow is one line of the policies pane: the live figures with the
// edits not yet confirmed applied.
type PolicyRow struct {
	reconcile.PolicyStatus
	// Pending is true while an edit of this policy is unconfirmed.
	Pending bool
}

// AttemptRow is one line of the attempts pane: the journal's record merged
// with the live figures.
type AttemptRow struct {
	ID         rm.AttemptID
	Policy     rm.PolicyID
	PolicyName string
	State      rm.AttemptState
	Runner     string
	Job        string
	CreatedAt  time.Time
	EndedAt    time.Time
	// Live figures; HasUsage is false for an attempt the daemon does not
	// report (ended, or no daemon).
	HasUsage bool
	RSS      uint64
	CPU      uint32
	Peak     uint64
	// Record is the journal's row, nil if the journal has not shown it yet.
	Record *rm.Attempt
}

// PolicyRows returns the policies pane's rows, filtered, by name.
func (m Model) PolicyRows() []PolicyRow {
	rows := make([]PolicyRow, 0, len(m.Status.Policies))
	terms := filterTerms(m.Filter)
	for _, p := range m.Status.Policies {
		r := PolicyRow{PolicyStatus: p}
		if e, ok := m.Edits[p.ID]; ok {
			if e.HasMax {
				r.Max = e.Max
			}
			if e.HasPaused {
				r.Paused = e.Paused
			}
			r.Pending = true
		}
		if !matches(terms, r.Name, r.Target, r.Mode) {
			continue
		}
		rows = append(rows, r)
	}
	slices.SortStableFunc(rows, func(a, b PolicyRow) int { return cmp.Compare(a.Name, b.Name) })
	return rows
}

// AttemptRows returns the attempts pane's rows, filtered: live attempts
// first, then ended ones, each newest first.
func (m Model) AttemptRows() []AttemptRow {
	names := make(map[rm.PolicyID]string, len(m.Status.Policies))
	for _, p := range m.Status.Policies {
		names[p.ID] = p.Name
	}
	rows := make([]AttemptRow, 0, len(m.History)+len(m.Status.Attempts))
	index := make(map[rm.AttemptID]int, cap(rows))
	for i := range m.History {
		a := &m.History[i]
		index[a.ID] = len(rows)
		rows = append(rows, AttemptRow{
			ID: a.ID, Policy: a.Policy, State: a.State, Runner: a.RunnerName,
			Job: jobName(a.Job), CreatedAt: a.CreatedAt, EndedAt: a.EndedAt,
			Peak: a.Usage.PeakRSSBytes, Record: a,
		})
	}
	for _, s := range m.Status.Attempts {
		i, ok := index[s.ID]
		if !ok {
			i = len(rows)
			index[s.ID] = i
			rows = append(rows, AttemptRow{ID: s.ID, Policy: s.Policy, State: s.State, Runner: s.RunnerName, CreatedAt: s.CreatedAt})
		}
		r := &rows[i]
		// The journal is the truth about an ending; otherwise the
		// daemon's figures are the fresher.
		if !r.State.Ended() {
			r.State = s.State
		}
		if r.Job == "" {
			r.Job = s.Job
		}
		if r.Runner == "" {
			r.Runner = s.RunnerName
		}
		if r.State.Live() {
			r.HasUsage, r.RSS, r.CPU = true, s.RSSBytes, s.CPUMillicores
		}
		r.Peak = max(r.Peak, s.PeakRSSBytes)
	}
	terms := filterTerms(m.Filter)
	out := rows[:0]
	for _, r := range rows {
		r.PolicyName = names[r.Policy]
		if r.PolicyName == "" && !r.Policy.IsZero() {
			r.PolicyName = r.Policy.String()[:8]
		}
		if matches(terms, string(r.State), r.PolicyName, r.Runner, r.Job) {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b AttemptRow) int {
		if a.State.Live() != b.State.Live() {
			if a.State.Live() {
				return -1
			}
			return 1
		}
		return b.CreatedAt.Compare(a.CreatedAt)
	})
	return out
}

// SelectedPolicy returns the selected policy row, if any.
func (m Model) SelectedPolicy() (PolicyRow, bool) {
	for _, r := range m.PolicyRows() {
		if r.ID == m.SelPolicy {
			return r, true
		}
	}
	return PolicyRow{}, false
}

// SelectedAttempt returns the selected attempt row, if any.
func (m Model) SelectedAttempt() (AttemptRow, bool) {
	for _, r := range m.AttemptRows() {
		if r.ID == m.SelAttempt {
			return r, true
		}
	}
	return AttemptRow{}, false
}

// jobName is how a list shows a job: its workflow's short name and the
// job's display name, "ci / build".
func jobName(j rm.Job) string {
	w := shortWorkflow(j.Workflow)
	switch {
	case j.Name != "" && w != "":
		return w + " / " + j.Name
	case j.Name != "":
		return j.Name
	case w != "":
		return w
	case j.ID != 0:
		return "job " + itoa(j.ID)
	}
	return ""
}

// shortWorkflow shortens a workflow ref,
// "octo/app/.github/workflows/ci.yml@refs/heads/main", to "ci"; a plain
// name stays as it is.
func shortWorkflow(w string) string {
	if !strings.Contains(w, "/.github/workflows/") {
		return w
	}
	w, _, _ = strings.Cut(w, "@")
	w = w[strings.LastIndexByte(w, '/')+1:]
	for _, ext := range []string{".yml", ".yaml"} {
		w = strings.TrimSuffix(w, ext)
	}
	return w
}

func normalizeFilter(s string) string { return strings.Join(strings.Fields(s), " ") }

func filterTerms(filter string) []string { return strings.Fields(strings.ToLower(filter)) }

// matches reports whether every term is in one of the fields, ignoring case.
func matches(terms []string, fields ...string) bool {
	for _, t := range terms {
		found := false
		for _, f := range fields {
			if strings.Contains(strings.ToLower(f), t) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}
