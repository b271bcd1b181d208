package tui

import "strings"

// Color is one of the few colors the view uses; the loop maps them to the
// terminal's.
type Color int

// The view's colors. ColorDefault is the terminal's own.
const (
	ColorDefault Color = iota
	ColorRed
	ColorGreen
	ColorYellow
	ColorBlue
	ColorCyan
	ColorGray
)

// Style is how a cell is drawn.
type Style struct {
	FG      Color
	Bold    bool
	Dim     bool
	Reverse bool
}

// Canvas is what Draw paints on: a grid of cells. A tcell screen is one
// (through the loop's adapter); TextCanvas is one in memory, for tests.
type Canvas interface {
	Size() (width, height int)
	// SetContent puts r at column x, row y. A wide rune takes x and x+1.
	SetContent(x, y int, r rune, style Style)
}

// TextCanvas is an in-memory Canvas whose String is the drawn text, one line
// per row (trailing spaces trimmed), styles dropped: what golden tests
// compare.
type TextCanvas struct {
	w, h  int
	cells []rune
	style []Style
}

var _ Canvas = (*TextCanvas)(nil)

// NewTextCanvas returns a blank canvas of w×h cells.
func NewTextCanvas(w, h int) *TextCanvas {
	c := &TextCanvas{w: w, h: h, cells: make([]rune, w*h), style: make([]Style, w*h)}
	for i := range c.cells {
		c.cells[i] = ' '
	}
	return c
}

// Size implements Canvas.
func (c *TextCanvas) Size() (int, int) { return c.w, c.h }

// SetContent implements Canvas; cells outside the canvas are ignored.
func (c *TextCanvas) SetContent(x, y int, r rune, s Style) {
	if x < 0 || y < 0 || x >= c.w || y >= c.h {
		return
	}
	i := y*c.w + x
	if c.cells[i] == 0 && x > 0 && cells(c.cells[i-1]) == 2 {
		c.cells[i-1] = ' ' // overwriting the right half of a wide rune
	}
	c.cells[i], c.style[i] = r, s
	if cells(r) == 2 && x+1 < c.w {
		c.cells[i+1] = 0 // the right half: nothing of its own
	}
}

// Cell returns the rune and style at x, y.
func (c *TextCanvas) Cell(x, y int) (rune, Style) {
	i := y*c.w + x
	return c.cells[i], c.style[i]
}

// Line returns row y as text, trailing spaces trimmed.
func (c *TextCanvas) Line(y int) string {
	var b strings.Builder
	for _, r := range c.cells[y*c.w : (y+1)*c.w] {
		if r != 0 {
			b.WriteRune(r)
		}
	}
	return strings.TrimRight(b.String(), " ")
}

// String returns every row, each ending in a newline.
func (c *TextCanvas) String() string {
	var b strings.Builder
	for y := range c.h {
		b.WriteString(c.Line(y))
		b.WriteByte('\n')
	}
	return b.String()
}

// painter draws text on a canvas, clipped, with control characters made
// harmless: the only path from data (log lines, job names) to the screen.
type painter struct {
	c    Canvas
	w, h int
	look Look // for text whose words change with it (lookText)
}

func newPainter(c Canvas) painter {
	w, h := c.Size()
	return painter{c: c, w: w, h: h}
}

// text draws s at x, y in at most maxw cells and returns the cells used.
func (p painter) text(x, y int, s string, st Style, maxw int) int {
	if y < 0 || y >= p.h {
		return 0
	}
	limit := min(x+maxw, p.w)
	start := x
	for _, r := range s {
		n := cells(r)
		if n == 0 {
			continue
		}
		if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
			if r == '\t' {
				r = ' '
			} else {
				r = '·'
			}
		}
		if x+n > limit {
			break
		}
		p.c.SetContent(x, y, r, st)
		x += n
	}
	return x - start
}

// fill paints n cells of r from x, y.
func (p painter) fill(x, y, n int, r rune, st Style) {
	for i := range n {
		if x+i >= p.w {
			return
		}
		p.c.SetContent(x+i, y, r, st)
	}
}

// line draws s at x, y and pads the rest of the row to the right edge with
// spaces in the same style (for highlighted rows).
func (p painter) line(x, y int, s string, st Style) {
	n := p.text(x, y, s, st, p.w-x)
	p.fill(x+n, y, p.w-x-n, ' ', st)
}
