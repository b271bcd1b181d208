package tui

import (
	"fmt"
	"strings"
	"time"
)

// messageLine is the status line's part of the model: the outcome of a
// command, or an error.
type messageLine struct {
	// Msg is cleared after MsgUntil (zero: when replaced).
	Msg      string
	MsgErr   bool
	MsgUntil time.Time
}

func (m Model) infof(format string, args ...any) Model {
	m.messageLine = messageLine{fmt.Sprintf(format, args...), false, m.Now.Add(infoFor)}
	return m
}

// progressf tells what is under way; the outcome's message replaces it.
func (m Model) progressf(format string, args ...any) Model {
	m.messageLine = messageLine{Msg: fmt.Sprintf(format, args...)}
	return m
}

// errorf sets an error message; it stays until another message replaces it
// or twice as long as an informational one.
func (m Model) errorf(format string, args ...any) Model {
	m.messageLine = messageLine{fmt.Sprintf(format, args...), true, m.Now.Add(2 * infoFor)}
	return m.note(ActivityEntry{At: m.Now, What: "error: " + m.Msg, Bad: true})
}

// expireMessage clears a message whose time is up.
func (m Model) expireMessage() Model {
	if !m.MsgUntil.IsZero() && !m.Now.Before(m.MsgUntil) {
		m.messageLine = messageLine{}
	}
	return m
}

// drawStatusLine draws the bottom row: the filter being typed, the stop
// question, a message, an error, or the view's key hints.
func drawStatusLine(p painter, m Model, y int) {
	switch {
	case m.Editing:
		drawFilterPrompt(p, m, y)
	case !m.Confirm.IsZero():
		p.line(0, y, fmt.Sprintf("stop runner %s? y/n", m.ConfirmName), styleWarn)
	case m.Msg != "":
		st, msg := styleNormal, m.Msg
		if m.MsgErr {
			st, msg = styleError, "error: "+msg // the red, in words
		}
		p.text(0, y, msg, st, p.w)
	case m.StatusErr != "":
		msg := m.StatusErr
		if !strings.HasPrefix(msg, ErrPartial.Error()) {
			msg = "error: " + msg // the red, in words; a partial read says what it lacks
		}
		p.text(0, y, msg, styleError, p.w)
	case m.HistoryErr != "":
		p.text(0, y, "journal: "+m.HistoryErr, styleError, p.w)
	case m.Notice != "" && !m.Detail && !m.PolicyDetail:
		p.text(0, y, m.Notice, styleWarn, p.w)
	default:
		names := listHints
		switch {
		case m.Detail:
			names = detailHints
		case m.PolicyDetail:
			names = policyDetailHints
		case m.JobsView:
			names = jobsHints
		case m.InventoryView:
			names = inventoryHints
		case m.ActivityView:
			names = activityHints
		}
		p.text(0, y, lookText(p.look, hints(names)), styleDim, p.w)
	}
}

// hints joins the hints of the named bindings.
func hints(names []string) string {
	out := make([]string, 0, len(names))
	for _, name := range names {
		for _, b := range keys {
			if b.name == name {
				out = append(out, b.hint)
			}
		}
	}
	return strings.Join(out, " · ")
}

// filterLine is the filter's part of the model: typed on the status line,
// it narrows both tables to the rows holding every word of it.
type filterLine struct {
	// Filter is the filter applied. While Editing, Draft is what is being
	// typed.
	Filter  string
	Editing bool
	Draft   string
}

func (m Model) startFilter() (Model, []Command) {
	m.Editing, m.Draft = true, m.Filter
	return m, nil
}

// filterKey edits the draft: enter applies it, esc clears the filter.
func (m Model) filterKey(k Key) Model {
	switch k.Code {
	case KeyRune:
		m.Draft += string(k.Rune)
	case KeyBackspace:
		if r := []rune(m.Draft); len(r) > 0 {
			m.Draft = string(r[:len(r)-1])
		}
	case KeyEnter:
		m.Filter, m.Editing = strings.Join(strings.Fields(m.Draft), " "), false
	case KeyEsc:
		m.filterLine = filterLine{}
	}
	return m
}

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

// drawFilterPrompt draws the filter being typed on row y, with a hint when
// there is room.
func drawFilterPrompt(p painter, m Model, y int) {
	n := p.text(0, y, "/", styleWarn, p.w)
	n += p.text(n, y, m.Draft, styleNormal, p.w-n-1)
	p.text(n, y, "▏", styleWarn, 1)
	hint := "enter apply · esc clear"
	if rw := textWidth(hint); n+3+rw <= p.w {
		p.text(p.w-rw, y, hint, styleDim, rw)
	}
}
