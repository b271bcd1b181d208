package tui

import "fmt"

// The smallest terminal the view lays out in; smaller ones get a note.
const (
	MinWidth  = 50
	MinHeight = 12
)

var (
	styleNormal = Style{}
	styleBold   = Style{Bold: true}
	styleDim    = Style{FG: ColorGray}
	styleTitle  = Style{FG: ColorCyan, Bold: true}
	styleError  = Style{FG: ColorRed, Bold: true}
	styleWarn   = Style{FG: ColorYellow, Bold: true}
)

// Draw paints m on c: the whole screen, every time. It reads the canvas's
// size, not the model's, so a canvas of any size is drawn consistently.
// Each pane draws itself (header.go, policies.go, attempts.go, detail.go,
// statusline.go, keys.go for the help); Draw lays them out.
func Draw(c Canvas, m Model) {
	if m.Look != (Look{}) {
		c = lookCanvas{c: c, look: m.Look}
	}
	p := newPainter(c)
	p.look = m.Look
	for y := range p.h {
		p.fill(0, y, p.w, ' ', styleNormal)
	}
	if p.w < MinWidth || p.h < MinHeight {
		msg := fmt.Sprintf("terminal too small: %d×%d, need %d×%d", p.w, p.h, MinWidth, MinHeight)
		p.text(0, 0, msg, styleWarn, p.w)
		return
	}
	drawHeader(p, m)
	y0, y1 := headerHeight(m), p.h-1
	switch {
	case m.Detail:
		drawDetail(p, m, y0, y1)
	case m.PolicyDetail:
		drawPolicyDetail(p, m, y0, y1)
	case m.JobsView:
		drawJobs(p, m, y0, y1)
	case m.InventoryView:
		drawInventory(p, m, y0, y1)
	case m.ActivityView:
		drawActivity(p, m, y0, y1)
	default:
		// The policies get a third of the room at most, the attempts the
		// rest.
		prows := m.PolicyRows()
		n := clamp(len(prows), 1, max(1, (y1-y0-4)/3))
		drawPolicies(p, m, prows, y0, n)
		y := y0 + 2 + n
		drawAttempts(p, m, y, y1-(y+2))
	}
	drawStatusLine(p, m, y1)
	if m.Help {
		drawHelp(p)
	}
}
