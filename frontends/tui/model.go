package tui

import (
	"errors"
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

// Pane is the list that has the focus.
type Pane int

// The two lists of the main view.
const (
	PanePolicies Pane = iota
	PaneAttempts
)

// Tuning of the model; plain figures so tests can reason about them.
const (
	// HistoryLimit is how many journal attempts the attempts pane reads.
	HistoryLimit = 200
	// LogLines is how many lines of a runner log the detail view asks for.
	LogLines = 200
	// MaxSamples is how many RSS/CPU samples a sparkline keeps per attempt.
	MaxSamples = 240
	// maxSeries bounds how many attempts keep samples.
	maxSeries = 256
	// infoFor is how long an informational message stays on the status line.
	infoFor = 5 * time.Second
	// editFor is how long an edit is shown before the source confirms it.
	editFor = 10 * time.Second
)

// Model is the whole state of the UI: the figures last read from the Source
// and what the user is doing. Only Update changes it; Draw only reads it.
type Model struct {
	// Width and Height of the terminal, in cells.
	Width, Height int
	// Now is the time the model is rendered and updated at (set by the loop
	// before each event).
	Now time.Time

	// Status is the last snapshot read; HaveStatus is false until one came.
	Status     reconcile.Status
	HaveStatus bool
	// StatusErr is the last Status error, "" once a read works again.
	StatusErr string
	// History is the journal's newest attempts (live and ended).
	History    []rm.Attempt
	HistoryErr string

	// Pane has the focus; Detail shows the selected attempt full screen.
	Pane   Pane
	Detail bool
	// SelPolicy and SelAttempt are the selected rows, kept by identity so
	// a refresh that reorders the lists keeps the selection.
	SelPolicy  rm.PolicyID
	SelAttempt rm.AttemptID

	// Filter narrows both lists to rows holding every word of it. While
	// Editing, Draft is what is being typed.
	Filter  string
	Editing bool
	Draft   string

	// Confirm is the attempt whose stop waits for y/n (zero: none).
	Confirm     rm.AttemptID
	ConfirmName string

	// Help shows the key overlay.
	Help bool

	// Msg is a message for the status line: the outcome of a command, or an
	// error. It is cleared after MsgUntil (zero: when replaced).
	Msg      string
	MsgErr   bool
	MsgUntil time.Time

	// Log is the tail of the detail view's attempt's runner log.
	Log LogTail
	// Series holds RSS and CPU samples per attempt, from successive
	// Status snapshots, for the detail view's sparklines.
	Series map[rm.AttemptID]*Series
	// Edits are policy changes sent and not yet reflected in Status.
	Edits map[rm.PolicyID]PolicyEdit

	// Quit is set when the user asked to leave.
	Quit bool

	policyIdx, attemptIdx int
	// In-flight reads: one of each kind at a time.
	fetchingStatus, fetchingAttempts, fetchingLog bool
	// staleStatus asks for another Status read once the one in flight ends.
	staleStatus bool
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

// PolicyEdit is a policy change the source has not confirmed yet; the UI
// shows it at once and drops it when Status agrees or after a while.
type PolicyEdit struct {
	Max       int
	HasMax    bool
	Paused    bool
	HasPaused bool
	Until     time.Time
}

// NewModel returns the model of a UI that has read nothing yet.
func NewModel(width, height int, now time.Time) Model {
	return Model{
		Width:  width,
		Height: height,
		Now:    now,
		Pane:   PaneAttempts,
		Series: map[rm.AttemptID]*Series{},
		Edits:  map[rm.PolicyID]PolicyEdit{},
	}
}

// Event is something that happened: a key, a resize, a tick, or the result
// of a Command. Update is the only consumer.
type Event interface{ event() }

// KeyCode names the keys the UI knows; everything else is ignored.
type KeyCode int

// The keys. KeyRune carries a printable character in Key.Rune.
const (
	KeyRune KeyCode = iota + 1
	KeyUp
	KeyDown
	KeyLeft
	KeyRight
	KeyPgUp
	KeyPgDn
	KeyHome
	KeyEnd
	KeyEnter
	KeyEsc
	KeyBackspace
	KeyTab
	KeyBacktab
	KeyCtrlC
	KeyCtrlL
)

// Key is a key press.
type Key struct {
	Code KeyCode
	Rune rune
}

// Resize is a new terminal size.
type Resize struct{ Width, Height int }

// Tick is the redraw and refresh tick.
type Tick struct{}

// StatusLoaded is the result of FetchStatus.
type StatusLoaded struct {
	Status reconcile.Status
	Err    error
}

// AttemptsLoaded is the result of FetchAttempts.
type AttemptsLoaded struct {
	Attempts []rm.Attempt
	Err      error
}

// LogLoaded is the result of FetchLog.
type LogLoaded struct {
	ID    rm.AttemptID
	Lines []string
	Err   error
}

// Done is the result of a command that changes something.
type Done struct {
	Cmd Command
	Err error
}

func (Key) event()            {}
func (Resize) event()         {}
func (Tick) event()           {}
func (StatusLoaded) event()   {}
func (AttemptsLoaded) event() {}
func (LogLoaded) event()      {}
func (Done) event()           {}

// Command is work Update asks the loop to do; its result comes back as an
// Event.
type Command interface{ command() }

// FetchStatus reads Source.Status; the result is a StatusLoaded.
type FetchStatus struct{}

// FetchAttempts reads Source.Attempts; the result is an AttemptsLoaded.
type FetchAttempts struct{ Filter store.AttemptFilter }

// FetchLog reads Source.LogTail; the result is a LogLoaded.
type FetchLog struct {
	ID    rm.AttemptID
	Lines int
}

// SetPaused calls Source.SetPaused; the result is a Done.
type SetPaused struct {
	Policy rm.PolicyID
	Name   string
	Paused bool
}

// SetMax calls Source.SetMax; the result is a Done.
type SetMax struct {
	Policy rm.PolicyID
	Name   string
	Max    int
}

// StopAttempt calls Source.StopAttempt; the result is a Done.
type StopAttempt struct {
	ID     rm.AttemptID
	Runner string
}

// Quit ends the loop.
type Quit struct{}

// Sync repaints the whole terminal (after a resize, or Ctrl-L).
type Sync struct{}

func (FetchStatus) command()   {}
func (FetchAttempts) command() {}
func (FetchLog) command()      {}
func (SetPaused) command()     {}
func (SetMax) command()        {}
func (StopAttempt) command()   {}
func (Quit) command()          {}
func (Sync) command()          {}

// Mutation reports whether a command changes something (and so runs in
// order with the other mutations) rather than reading.
func Mutation(c Command) bool {
	switch c.(type) {
	case SetPaused, SetMax, StopAttempt:
		return true
	}
	return false
}

// Update applies one event to the model and returns the commands to run.
// The returned model shares its maps (Series, Edits) with m: keep using the
// returned one only.
func Update(m Model, ev Event) (Model, []Command) {
	if m.Series == nil {
		m.Series = map[rm.AttemptID]*Series{}
	}
	if m.Edits == nil {
		m.Edits = map[rm.PolicyID]PolicyEdit{}
	}
	var cmds []Command
	switch ev := ev.(type) {
	case Key:
		m, cmds = m.key(ev)
	case Resize:
		m.Width, m.Height = ev.Width, ev.Height
		cmds = []Command{Sync{}}
	case Tick:
		if !m.MsgUntil.IsZero() && !m.Now.Before(m.MsgUntil) {
			m.Msg, m.MsgErr, m.MsgUntil = "", false, time.Time{}
		}
		for id, e := range m.Edits {
			if m.Now.After(e.Until) {
				delete(m.Edits, id)
			}
		}
		cmds = m.fetches()
		m = m.markFetching(cmds)
	case StatusLoaded:
		m.fetchingStatus = false
		m = m.statusLoaded(ev)
		if m.staleStatus {
			m.staleStatus = false
			cmds = []Command{FetchStatus{}}
			m.fetchingStatus = true
		}
	case AttemptsLoaded:
		m.fetchingAttempts = false
		if ev.Err != nil {
			m.HistoryErr = oneLine(ev.Err)
		} else {
			m.History, m.HistoryErr = ev.Attempts, ""
		}
	case LogLoaded:
		m.fetchingLog = false
		if ev.ID == m.SelAttempt {
			m.Log = LogTail{ID: ev.ID, Lines: ev.Lines, Loaded: true}
			if ev.Err != nil {
				m.Log.Err = oneLine(ev.Err)
			}
		}
	case Done:
		m, cmds = m.done(ev)
	}
	m = m.fixSelection()
	if m.Detail && !m.SelAttempt.IsZero() {
		if m.Log.ID != m.SelAttempt {
			m.Log = LogTail{ID: m.SelAttempt} // another attempt shows now
		}
		if !m.Log.Loaded && !m.fetchingLog {
			// Read its log now, or when the read in flight (of the
			// attempt shown before) comes back.
			cmds = append(cmds, FetchLog{ID: m.SelAttempt, Lines: LogLines})
			m.fetchingLog = true
		}
	}
	return m, cmds
}

// fetches returns the reads due now: each kind unless one is in flight.
func (m Model) fetches() []Command {
	var cmds []Command
	if !m.fetchingStatus {
		cmds = append(cmds, FetchStatus{})
	}
	if !m.fetchingAttempts {
		cmds = append(cmds, FetchAttempts{Filter: store.AttemptFilter{Limit: HistoryLimit}})
	}
	if m.Detail && !m.SelAttempt.IsZero() && !m.fetchingLog {
		cmds = append(cmds, FetchLog{ID: m.SelAttempt, Lines: LogLines})
	}
	return cmds
}

func (m Model) markFetching(cmds []Command) Model {
	for _, c := range cmds {
		switch c.(type) {
		case FetchStatus:
			m.fetchingStatus = true
		case FetchAttempts:
			m.fetchingAttempts = true
		case FetchLog:
			m.fetchingLog = true
		}
	}
	return m
}

// refreshStatus asks for a Status read now, or right after the one in
// flight (which may have started before the change it must show).
func (m Model) refreshStatus() (Model, []Command) {
	if m.fetchingStatus {
		m.staleStatus = true
		return m, nil
	}
	m.fetchingStatus = true
	return m, []Command{FetchStatus{}}
}

func (m Model) statusLoaded(ev StatusLoaded) Model {
	if ev.Err != nil {
		m.StatusErr = oneLine(ev.Err)
		if !errors.Is(ev.Err, ErrPartial) {
			return m
		}
	} else {
		m.StatusErr = ""
	}
	m.Status, m.HaveStatus = ev.Status, true
	at := ev.Status.At
	if at.IsZero() {
		at = m.Now
	}
	for _, a := range ev.Status.Attempts {
		if ev.Err != nil {
			break // a journal-only snapshot has no usage to sample
		}
		s := m.Series[a.ID]
		if s == nil {
			s = &Series{}
			m.Series[a.ID] = s
		}
		s.add(at, a.RSSBytes, a.CPUMillicores)
	}
	m.pruneSeries()
	for _, p := range ev.Status.Policies {
		e, ok := m.Edits[p.ID]
		if !ok {
			continue
		}
		if (!e.HasMax || e.Max == p.Max) && (!e.HasPaused || e.Paused == p.Paused) {
			delete(m.Edits, p.ID)
		}
	}
	return m
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

func (m Model) done(ev Done) (Model, []Command) {
	switch c := ev.Cmd.(type) {
	case SetPaused:
		if ev.Err != nil {
			e := m.Edits[c.Policy]
			e.HasPaused = false
			m.putEdit(c.Policy, e)
			return m.errorf("%s %s: %s", pauseVerb(c.Paused), c.Name, oneLine(ev.Err)), nil
		}
		m = m.infof("%s %s", pastVerb(c.Paused), c.Name)
	case SetMax:
		if ev.Err != nil {
			e := m.Edits[c.Policy]
			e.HasMax = false
			m.putEdit(c.Policy, e)
			return m.errorf("max of %s: %s", c.Name, oneLine(ev.Err)), nil
		}
		m = m.infof("max of %s is %d", c.Name, c.Max)
	case StopAttempt:
		if ev.Err != nil {
			return m.errorf("stop %s: %s", c.Runner, oneLine(ev.Err)), nil
		}
		m = m.infof("stop requested: %s", c.Runner)
	default:
		return m, nil
	}
	return m.refreshStatus()
}

func (m Model) putEdit(id rm.PolicyID, e PolicyEdit) {
	if !e.HasMax && !e.HasPaused {
		delete(m.Edits, id)
		return
	}
	m.Edits[id] = e
}

func pauseVerb(paused bool) string {
	if paused {
		return "pause"
	}
	return "resume"
}

func pastVerb(paused bool) string {
	if paused {
		return "paused"
	}
	return "resumed"
}

func (m Model) infof(format string, args ...any) Model {
	m.Msg, m.MsgErr, m.MsgUntil = fmt.Sprintf(format, args...), false, m.Now.Add(infoFor)
	return m
}

// errorf sets an error message; it stays until another message replaces it
// or twice as long as an informational one.
func (m Model) errorf(format string, args ...any) Model {
	m.Msg, m.MsgErr, m.MsgUntil = fmt.Sprintf(format, args...), true, m.Now.Add(2*infoFor)
	return m
}

func (m Model) key(k Key) (Model, []Command) {
	if k.Code == KeyCtrlC {
		m.Quit = true
		return m, []Command{Quit{}}
	}
	if k.Code == KeyCtrlL {
		return m, []Command{Sync{}}
	}
	switch {
	case m.Help:
		m.Help = false // any key closes the overlay
		return m, nil
	case !m.Confirm.IsZero():
		return m.confirmKey(k)
	case m.Editing:
		return m.filterKey(k), nil
	}

	switch k.Code {
	case KeyUp:
		return m.move(-1), nil
	case KeyDown:
		return m.move(1), nil
	case KeyPgUp:
		return m.move(-m.pageRows()), nil
	case KeyPgDn:
		return m.move(m.pageRows()), nil
	case KeyHome:
		return m.move(-1 << 30), nil
	case KeyEnd:
		return m.move(1 << 30), nil
	case KeyTab, KeyBacktab, KeyLeft, KeyRight:
		if !m.Detail {
			m.Pane = 1 - m.Pane
		}
		return m, nil
	case KeyEnter:
		return m.enter()
	case KeyEsc:
		switch {
		case m.Detail:
			m.Detail = false
		case m.Filter != "":
			m.Filter = ""
		case m.Msg != "":
			m.Msg, m.MsgErr, m.MsgUntil = "", false, time.Time{}
		}
		return m, nil
	case KeyBackspace:
		m.Detail = false
		return m, nil
	case KeyRune:
	default:
		return m, nil
	}

	switch k.Rune {
	case 'q':
		if m.Detail {
			m.Detail = false
			return m, nil
		}
		m.Quit = true
		return m, []Command{Quit{}}
	case 'j':
		return m.move(1), nil
	case 'k':
		return m.move(-1), nil
	case 'g':
		return m.move(-1 << 30), nil
	case 'G':
		return m.move(1 << 30), nil
	case '?':
		m.Help = true
		return m, nil
	case '/':
		m.Editing, m.Draft = true, m.Filter
		return m, nil
	case 'p':
		return m.togglePause()
	case '+', '=':
		return m.changeMax(1)
	case '-', '_':
		return m.changeMax(-1)
	case 'x':
		return m.askStop()
	case 'r':
		cmds := m.fetches()
		return m.markFetching(cmds), cmds
	}
	return m, nil
}

func (m Model) confirmKey(k Key) (Model, []Command) {
	id, name := m.Confirm, m.ConfirmName
	m.Confirm, m.ConfirmName = rm.AttemptID{}, ""
	if k.Code == KeyRune && (k.Rune == 'y' || k.Rune == 'Y') {
		m = m.infof("stopping %s…", name)
		m.MsgUntil = time.Time{}
		return m, []Command{StopAttempt{ID: id, Runner: name}}
	}
	return m.infof("stop cancelled"), nil
}

func (m Model) filterKey(k Key) Model {
	switch k.Code {
	case KeyRune:
		m.Draft += string(k.Rune)
	case KeyBackspace:
		if r := []rune(m.Draft); len(r) > 0 {
			m.Draft = string(r[:len(r)-1])
		}
	case KeyEnter:
		m.Filter, m.Editing = normalizeFilter(m.Draft), false
	case KeyEsc:
		m.Filter, m.Draft, m.Editing = "", "", false
	}
	return m
}

func (m Model) enter() (Model, []Command) {
	if m.Pane == PanePolicies {
		m.Pane = PaneAttempts
		return m, nil
	}
	if _, ok := m.SelectedAttempt(); !ok {
		return m, nil
	}
	m.Detail = true
	return m, nil // Update reads the log of the newly shown attempt
}

func (m Model) move(delta int) Model {
	if m.Detail || m.Pane == PaneAttempts {
		rows := m.AttemptRows()
		if len(rows) == 0 {
			return m
		}
		m.attemptIdx = clamp(m.attemptIdx+delta, 0, len(rows)-1)
		m.SelAttempt = rows[m.attemptIdx].ID
		return m
	}
	rows := m.PolicyRows()
	if len(rows) == 0 {
		return m
	}
	m.policyIdx = clamp(m.policyIdx+delta, 0, len(rows)-1)
	m.SelPolicy = rows[m.policyIdx].ID
	return m
}

// pageRows is how far PgUp/PgDn move: about a screenful of rows.
func (m Model) pageRows() int { return max(1, m.Height-8) }

func (m Model) selectedPolicyForEdit() (PolicyRow, Model, bool) {
	if m.Detail || m.Pane != PanePolicies {
		return PolicyRow{}, m.infof("select a policy first: tab to the policies pane"), false
	}
	p, ok := m.SelectedPolicy()
	if !ok {
		return PolicyRow{}, m.infof("no policy selected"), false
	}
	return p, m, true
}

func (m Model) togglePause() (Model, []Command) {
	p, m, ok := m.selectedPolicyForEdit()
	if !ok {
		return m, nil
	}
	e := m.Edits[p.ID]
	e.Paused, e.HasPaused, e.Until = !p.Paused, true, m.Now.Add(editFor)
	m.Edits[p.ID] = e
	m = m.infof("%s %s…", progressive(!p.Paused), p.Name)
	m.MsgUntil = time.Time{}
	return m, []Command{SetPaused{Policy: p.ID, Name: p.Name, Paused: !p.Paused}}
}

func progressive(paused bool) string {
	if paused {
		return "pausing"
	}
	return "resuming"
}

func (m Model) changeMax(delta int) (Model, []Command) {
	p, m, ok := m.selectedPolicyForEdit()
	if !ok {
		return m, nil
	}
	floor := max(1, p.MinIdle)
	next := p.Max + delta
	if next < floor {
		if p.MinIdle > 1 {
			return m.errorf("max of %s cannot go below its min idle %d", p.Name, p.MinIdle), nil
		}
		return m.errorf("max of %s cannot go below 1: pause it (p) to stop new runners", p.Name), nil
	}
	e := m.Edits[p.ID]
	e.Max, e.HasMax, e.Until = next, true, m.Now.Add(editFor)
	m.Edits[p.ID] = e
	return m, []Command{SetMax{Policy: p.ID, Name: p.Name, Max: next}}
}

func (m Model) askStop() (Model, []Command) {
	if !m.Detail && m.Pane != PaneAttempts {
		return m.infof("select an attempt first: tab to the attempts pane"), nil
	}
	a, ok := m.SelectedAttempt()
	if !ok {
		return m.infof("no attempt selected"), nil
	}
	if !a.State.Live() {
		return m.infof("%s has already ended (%s)", a.Runner, a.State), nil
	}
	m.Confirm, m.ConfirmName = a.ID, a.Runner
	if m.ConfirmName == "" {
		m.ConfirmName = a.ID.String()
	}
	return m, nil
}

// fixSelection keeps the selection on the same rows after the lists
// changed, or on the nearest row if its row is gone.
func (m Model) fixSelection() Model {
	prows := m.PolicyRows()
	m.policyIdx, m.SelPolicy = reselect(prows, m.policyIdx, m.SelPolicy, func(r PolicyRow) rm.PolicyID { return r.ID })
	arows := m.AttemptRows()
	m.attemptIdx, m.SelAttempt = reselect(arows, m.attemptIdx, m.SelAttempt, func(r AttemptRow) rm.AttemptID { return r.ID })
	if m.Detail && len(arows) == 0 {
		m.Detail = false
	}
	return m
}

func reselect[R any, ID comparable](rows []R, idx int, sel ID, id func(R) ID) (int, ID) {
	var zero ID
	if len(rows) == 0 {
		return 0, zero
	}
	if sel != zero {
		for i, r := range rows {
			if id(r) == sel {
				return i, sel
			}
		}
	}
	idx = clamp(idx, 0, len(rows)-1)
	return idx, id(rows[idx])
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// oneLine makes an error fit a status line.
func oneLine(err error) string {
	s := err.Error()
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\n' || r == '\r' || r == '\t' {
			r = ' '
		}
		out = append(out, r)
	}
	return string(out)
}
