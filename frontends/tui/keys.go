package tui

// binding is one row of the keys table: the keys that run an action, and
// how the help screen and the status line name them.
type binding struct {
	// name is the action's, for the status line's hints and the tests.
	name  string
	codes []KeyCode // the special keys that run it
	runes string    // the characters that run it
	// label and help are its line on the help screen: the keys and what
	// they do. A binding without help has no line of its own: another's
	// line names its keys too, or they need no help.
	label, help string
	// hint is its short form on the status line, in the views listing it.
	hint string
	// global bindings work in every mode: over the help, the stop
	// question and the filter being typed.
	global bool
	do     func(Model) (Model, []Command)
}

// keys is every key the UI knows, in the order the help screen lists them.
// Key handling and the help screen both read it.
var keys = []binding{
	{name: "up", codes: []KeyCode{KeyUp}, runes: "k", label: "↑ ↓  j k", help: "move the selection", hint: "↑↓ other attempt", do: moveBy(-1)},
	{name: "down", codes: []KeyCode{KeyDown}, runes: "j", do: moveBy(1)},
	{name: "page-up", codes: []KeyCode{KeyPgUp}, label: "PgUp PgDn", help: "a page; g G first, last", do: movePage(-1)},
	{name: "page-down", codes: []KeyCode{KeyPgDn}, do: movePage(1)},
	{name: "first", codes: []KeyCode{KeyHome}, runes: "g", do: moveBy(-1 << 30)},
	{name: "last", codes: []KeyCode{KeyEnd}, runes: "G", do: moveBy(1 << 30)},
	{name: "pane", codes: []KeyCode{KeyTab, KeyBacktab, KeyLeft, KeyRight}, label: "tab ← →", help: "switch pane", hint: "tab pane", do: Model.switchPane},
	{name: "open", codes: []KeyCode{KeyEnter}, label: "enter", help: "open the attempt's detail", hint: "⏎ detail", do: Model.enter},
	{name: "policy", runes: "i", label: "i", help: "open the policy's detail: why its jobs wait", hint: "i policy", do: Model.openPolicy},
	{name: "jobs", runes: "w", label: "w", help: "the jobs: running, and waiting with why", hint: "w jobs", do: Model.openJobs},
	{name: "inventory", runes: "o", label: "o", help: "GitHub's runners: this host's, the fleet's, unknown", hint: "o runners", do: Model.openInventory},
	{name: "activity", runes: "a", label: "a", help: "the activity: latest events and errors", hint: "a activity", do: Model.openActivity},
	{name: "copy", runes: "c", label: "c", help: "in o or a: print it on quitting, to copy", hint: "c print on quit", do: Model.copyView},
	{name: "sort", runes: "s", label: "s", help: "sort the policies by the next column", hint: "s sort", do: Model.nextSort},
	{name: "back", codes: []KeyCode{KeyEsc}, label: "esc  ⌫", help: "back; clear the filter", hint: "esc back", do: Model.back},
	{name: "close", codes: []KeyCode{KeyBackspace}, do: Model.closeDetail},
	{name: "pause", runes: "p", label: "p", help: "pause or resume the policy", hint: "p pause", do: Model.togglePause},
	{name: "raise", runes: "+=", label: "+ -", help: "raise or lower its max", hint: "+/- max", do: changeMax(1)},
	{name: "lower", runes: "-_", do: changeMax(-1)},
	{name: "stop", runes: "x", label: "x", help: "stop the attempt (asks y/n)", hint: "x stop", do: Model.askStop},
	{name: "filter", runes: "/", label: "/", help: "filter: type, enter, esc", hint: "/ filter", do: Model.startFilter},
	{name: "refresh", runes: "r", label: "r", help: "read the figures now", do: Model.fetch},
	{name: "repaint", codes: []KeyCode{KeyCtrlL}, label: "ctrl-l", help: "repaint the screen", global: true, do: Model.repaint},
	{name: "quit", runes: "q", label: "q", help: "quit (in a detail: back)", hint: "q quit", do: Model.quitOrBack},
	{name: "help", runes: "?", hint: "? help", do: Model.openHelp},
	{name: "interrupt", codes: []KeyCode{KeyCtrlC}, global: true, do: Model.quit},
}

// The status line's hints in each view: names of bindings, in the order
// shown.
var (
	listHints         = []string{"pane", "open", "policy", "jobs", "pause", "raise", "stop", "filter", "help", "quit"}
	jobsHints         = []string{"back", "jobs", "help", "quit"}
	inventoryHints    = []string{"back", "inventory", "copy", "help", "quit"}
	activityHints     = []string{"back", "activity", "copy", "help", "quit"}
	detailHints       = []string{"back", "up", "stop", "help"}
	policyDetailHints = []string{"back", "pause", "raise", "help"}
)

// listViewKeys are the bindings that work in the full-screen lists (jobs,
// inventory, activity): they scroll, switch, print and close; the others
// act on a selection these do not show.
var listViewKeys = map[string]bool{"up": true, "down": true, "page-up": true, "page-down": true, "first": true, "last": true,
	"back": true, "close": true, "quit": true, "help": true, "jobs": true, "inventory": true, "activity": true, "copy": true, "refresh": true}

// keyMap finds a key's binding (the tests check no key is bound twice).
var keyMap = func() map[Key]*binding {
	byKey := map[Key]*binding{}
	for i := range keys {
		for _, k := range keys[i].keys() {
			byKey[k] = &keys[i]
		}
	}
	return byKey
}()

// keys returns the keys that run b.
func (b binding) keys() []Key {
	ks := make([]Key, 0, len(b.codes)+len(b.runes))
	for _, c := range b.codes {
		ks = append(ks, Key{Code: c})
	}
	for _, r := range b.runes {
		ks = append(ks, Key{Code: KeyRune, Rune: r})
	}
	return ks
}

// key handles a key press: the global bindings first, then the mode the UI
// is in (the help shown, a question asked, the filter typed), then the
// keys table; unknown keys do nothing.
func (m Model) key(k Key) (Model, []Command) {
	b := keyMap[k]
	switch {
	case b != nil && b.global:
		return b.do(m)
	case m.Help:
		m.Help = false // any key closes the overlay
		return m, nil
	case !m.Confirm.IsZero():
		return m.confirmKey(k)
	case m.Editing:
		return m.filterKey(k), nil
	case b != nil && m.listView() && !listViewKeys[b.name]:
		return m, nil // a full-screen list has no selection to act on
	case b != nil:
		return b.do(m)
	}
	return m, nil
}

// The actions of the keys table that belong to no pane.

func moveBy(delta int) func(Model) (Model, []Command) {
	return func(m Model) (Model, []Command) { return m.move(delta), nil }
}

func movePage(sign int) func(Model) (Model, []Command) {
	return func(m Model) (Model, []Command) { return m.move(sign * m.pageRows()), nil }
}

func (m Model) switchPane() (Model, []Command) {
	if !m.Detail && !m.PolicyDetail && !m.listView() {
		m.Pane = 1 - m.Pane
	}
	return m, nil
}

// back leaves the detail, else clears the filter, else the message.
func (m Model) back() (Model, []Command) {
	switch {
	case m.Detail:
		m.Detail = false
	case m.PolicyDetail:
		m.PolicyDetail = false
	case m.listView():
		m = m.closeViews()
	case m.Filter != "":
		m.Filter = ""
	case m.Msg != "":
		m.messageLine = messageLine{}
	}
	return m, nil
}

func (m Model) closeDetail() (Model, []Command) {
	m.Detail, m.PolicyDetail = false, false
	return m.closeViews(), nil
}

// listView reports whether a full-screen list is open: the jobs, the
// inventory or the activity.
func (m Model) listView() bool { return m.JobsView || m.InventoryView || m.ActivityView }

// closeViews closes the full-screen lists.
func (m Model) closeViews() Model {
	m.JobsView, m.InventoryView, m.ActivityView = false, false, false
	return m
}

// copyView keeps the open inventory or activity, as plain text and uncut,
// for the program to print once the terminal is given back: the
// terminal's own selection and scrollback then copy it.
func (m Model) copyView() (Model, []Command) {
	var what string
	switch {
	case m.InventoryView:
		m.Printout, what = m.InventoryText(), "GitHub's runners"
	case m.ActivityView:
		m.Printout, what = m.ActivityText(), "the activity"
	default:
		return m, nil
	}
	return m.infof("%s (%d lines, as now) will be printed when you quit", what, len(m.Printout)), nil
}

func (m Model) repaint() (Model, []Command) { return m, []Command{Sync{}} }

func (m Model) quit() (Model, []Command) {
	m.Quit = true
	return m, []Command{Quit{}}
}

func (m Model) quitOrBack() (Model, []Command) {
	if m.Detail || m.PolicyDetail || m.listView() {
		return m.closeDetail()
	}
	return m.quit()
}

// helpOverlay is the help's part of the model.
type helpOverlay struct {
	// Help shows the key overlay; any key closes it.
	Help bool
}

func (m Model) openHelp() (Model, []Command) {
	m.Help = true
	return m, nil
}

// helpLines are the help screen's lines in a look: one per binding of the
// keys table that has help, then how to close it.
func helpLines(look Look) []string {
	var lines []string
	for _, b := range keys {
		if b.help != "" {
			lines = append(lines, pad(lookText(look, b.label), 13, false, false)+b.help)
		}
	}
	return append(lines, "", "any key closes this help")
}

// drawHelp draws the help in a box in the middle of the screen.
func drawHelp(p painter) {
	lines := helpLines(p.look)
	w := 0
	for _, l := range lines {
		w = max(w, textWidth(l))
	}
	w = min(w+4, p.w)
	h := min(len(lines)+2, p.h)
	x0, y0 := (p.w-w)/2, (p.h-h)/2
	p.fill(x0, y0, w, '─', styleTitle)
	p.fill(x0, y0+h-1, w, '─', styleTitle)
	for y := y0 + 1; y < y0+h-1; y++ {
		p.fill(x0, y, w, ' ', styleNormal)
		p.c.SetContent(x0, y, '│', styleTitle)
		p.c.SetContent(x0+w-1, y, '│', styleTitle)
		if i := y - y0 - 1; i < len(lines) {
			p.text(x0+2, y, lines[i], styleNormal, w-4)
		}
	}
	p.c.SetContent(x0, y0, '┌', styleTitle)
	p.c.SetContent(x0+w-1, y0, '┐', styleTitle)
	p.c.SetContent(x0, y0+h-1, '└', styleTitle)
	p.c.SetContent(x0+w-1, y0+h-1, '┘', styleTitle)
	p.text(x0+2, y0, " keys ", styleTitle, w-4)
}
