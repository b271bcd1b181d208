package tui

import "cmp"

// policySort is one way of ordering the policies pane: by a column, the
// biggest figures first; ties go by name.
type policySort struct {
	name string
	cmp  func(a, b PolicyRow) int
}

// policySorts are the sort columns the sort key cycles through, the first
// the default.
var policySorts = []policySort{
	{"name", func(a, b PolicyRow) int { return 0 }},
	{"waiting", func(a, b PolicyRow) int { return cmp.Compare(b.Waiting, a.Waiting) }},
	{"demand", func(a, b PolicyRow) int { return cmp.Compare(b.Demand+b.Queued, a.Demand+a.Queued) }},
	{"live", func(a, b PolicyRow) int { return cmp.Compare(b.Live, a.Live) }},
	{"max", func(a, b PolicyRow) int { return cmp.Compare(b.Max, a.Max) }},
}

// nextSort sorts the policies by the next column, keeping the selection.
func (m Model) nextSort() (Model, []Command) {
	m.SortBy = (m.SortBy + 1) % len(policySorts)
	m = m.fixSelection()
	return m.infof("policies sorted by %s", policySorts[m.SortBy].name), nil
}

// sortTitle is what the policies' title adds when they are not sorted by
// name.
func sortTitle(by int) string {
	if by%len(policySorts) == 0 {
		return ""
	}
	return " by " + policySorts[by%len(policySorts)].name
}
