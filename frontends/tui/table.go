package tui

import (
	"fmt"
	"slices"
	"strings"
)

// The tables of the main view (policies, attempts) share their layout,
// their drawing and the way they keep a selection: all here.

// column is one column of a list: a fixed width, or a minimum growing by
// its share (flex) of the room left, up to maxw. When the room is short,
// whole columns go by drop (1 first; 0: never), then the columns narrow to
// minw (0: it does not); a value cut short ends in an ellipsis.
type column struct {
	title       string
	w, flex     int
	maxw, minw  int
	drop        int
	right, tail bool
}

// gutter is the selection marker's room at the left of each row.
const gutter = 2

// widths lays columns out in total cells, one space between the columns
// shown; a column not shown has width 0. The columns never take more than
// total: the last one that would cross it is cut, the ones after it go.
func widths(cols []column, total int) []int {
	ws := make([]int, len(cols))
	used := len(cols) - 1
	for i, c := range cols {
		ws[i] = c.w
		used += c.w
	}
	for rank := 1; used > total && rank <= len(cols); rank++ {
		for i, c := range cols {
			if c.drop == rank {
				used -= ws[i] + 1
				ws[i] = 0
			}
		}
	}
	used = narrow(cols, ws, used, total)
	grow(cols, ws, total-used)
	x := -1
	for i := range ws {
		if ws[i] == 0 {
			continue
		}
		if x+1+ws[i] > total {
			ws[i] = max(0, total-x-1)
			if ws[i] < 2 {
				ws[i] = 0
			}
		}
		if ws[i] > 0 {
			x += 1 + ws[i]
		}
	}
	return ws
}

// narrow takes cells from the columns shown that may narrow, the one with
// the most to give first, until used fits total; it returns the cells used.
func narrow(cols []column, ws []int, used, total int) int {
	for used > total {
		best, slack := -1, 0
		for i, c := range cols {
			if c.minw > 0 && ws[i] > 0 && ws[i]-c.minw > slack {
				best, slack = i, ws[i]-c.minw
			}
		}
		if best < 0 {
			break
		}
		ws[best]--
		used--
	}
	return used
}

// grow shares extra cells among the flex columns shown, each up to its
// maxw.
func grow(cols []column, ws []int, extra int) {
	open := func(i int) bool {
		c := cols[i]
		return c.flex > 0 && ws[i] > 0 && (c.maxw == 0 || ws[i] < c.maxw)
	}
	for extra > 0 {
		flex := 0
		for i, c := range cols {
			if open(i) {
				flex += c.flex
			}
		}
		if flex == 0 {
			return
		}
		grown := 0
		for i, c := range cols {
			if !open(i) {
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
			return
		}
		extra -= grown
	}
}

// columnX is where column i starts, laid out in ws.
func columnX(ws []int, i int) int {
	x := gutter
	for _, w := range ws[:i] {
		if w > 0 {
			x += w + 1
		}
	}
	return x
}

// formatRow joins cells into one line laid out by cols and ws, the
// columns not shown left out.
func formatRow(cols []column, ws []int, values []string) string {
	var b strings.Builder
	for i, c := range cols {
		if ws[i] == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(pad(values[i], ws[i], c.right, c.tail))
	}
	return b.String()
}

// list is one table pane as drawn: a title rule, the column titles, and
// rows scrolled to keep the selected one in sight.
type list struct {
	title   string
	focused bool
	cols    []column
	rows    int    // how many rows there are
	sel     int    // the selected row's index
	empty   string // shown when there are no rows
}

// draw draws l from row y with n rows at most, each drawn by row(y, i, ws)
// for its row i and the columns' widths ws.
func (l list) draw(p painter, y, n int, row func(y, i int, ws []int)) {
	drawTitle(p, y, l.title, l.focused)
	ws := widths(l.cols, p.w-gutter)
	titles := make([]string, len(l.cols))
	for i, c := range l.cols {
		titles[i] = c.title
	}
	p.text(gutter, y+1, formatRow(l.cols, ws, titles), styleDim, p.w)
	if l.rows == 0 {
		p.text(gutter, y+2, l.empty, styleDim, p.w)
	}
	off := 0 // keep the selected row in the window of n rows
	if n > 0 && l.sel >= n {
		off = l.sel - n + 1
	}
	for i := 0; i < n && off+i < l.rows; i++ {
		row(y+2+i, off+i, ws)
	}
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

// paneTitle names a pane with how many rows it shows (of total, unless
// negative) and the filter narrowing it.
func paneTitle(name string, shown, total int, filter string) string {
	switch {
	case filter != "" && total >= 0 && shown != total:
		return fmt.Sprintf("%s (%d of %d, filter %q)", name, shown, total, filter)
	case filter != "":
		return fmt.Sprintf("%s (%d, filter %q)", name, shown, filter)
	}
	return fmt.Sprintf("%s (%d)", name, shown)
}

// drawTitle draws a pane's title rule: heavy, and the title in brackets
// (which reads without colour or glyphs), when the pane has the focus.
func drawTitle(p painter, y int, title string, focused bool) {
	rule, st, text := '─', styleDim, " "+title+" "
	if focused {
		rule, st, text = '━', styleTitle, " ["+title+"] "
	}
	p.fill(0, y, p.w, rule, st)
	p.text(2, y, text, st, p.w-4)
}

// reselect returns the selection (index and identity) after rows changed:
// the row of sel if it is still there, else the row nearest idx.
func reselect[R any, ID comparable](rows []R, idx int, sel ID, id func(R) ID) (int, ID) {
	if i := find(rows, sel, id); i >= 0 {
		return i, sel
	}
	return moveIn(rows, idx, id)
}

// selected returns the row whose identity is sel, if there is one.
func selected[R any, ID comparable](rows []R, sel ID, id func(R) ID) (R, bool) {
	if i := find(rows, sel, id); i >= 0 {
		return rows[i], true
	}
	var none R
	return none, false
}

// find returns the index of the row whose identity is sel, or -1.
func find[R any, ID comparable](rows []R, sel ID, id func(R) ID) int {
	return slices.IndexFunc(rows, func(r R) bool { return id(r) == sel })
}

// moveIn selects row idx, or the nearest end of rows; none without rows.
func moveIn[R any, ID comparable](rows []R, idx int, id func(R) ID) (int, ID) {
	if len(rows) == 0 {
		var zero ID
		return 0, zero
	}
	idx = clamp(idx, 0, len(rows)-1)
	return idx, id(rows[idx])
}
