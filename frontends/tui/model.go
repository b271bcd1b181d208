package tui

import (
	"errors"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
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
// Each pane keeps its own part (embedded, so its fields read as the
// model's) in the file that handles and draws it.
type Model struct {
	// Width and Height of the terminal, in cells.
	Width, Height int
	// Now is the time the model is rendered and updated at (set by the loop
	// before each event).
	Now time.Time

	// Status is the last snapshot read; HaveStatus is false until one came.
	Status     status.Status
	HaveStatus bool
	// StatusErr is the last Status error, "" once a read works again.
	StatusErr string
	// partial: Status holds the journal's view only (ErrPartial), without
	// the daemon's figures.
	partial bool
	// History is the journal's newest attempts (live and ended).
	History    []rm.Attempt
	HistoryErr string
	// Policies are the journal's policies, the removed ones included,
	// that name the History's attempts (PolicyHistory); nil if unknown.
	Policies map[rm.PolicyID]rm.Policy

	// Notice is the program's standing word (Notice), "" if none.
	Notice string

	// Look is how the screen is drawn: without colour, in ASCII.
	Look Look

	// Pane has the focus.
	Pane Pane
	// Quit is set when the user asked to leave.
	Quit bool
	// Printout is what the program prints once the terminal is given
	// back (the copy key's view, as plain text); nil: nothing.
	Printout []string

	policiesPane     // selection and unconfirmed edits of the policies table
	attemptsPane     // selection of the attempts table, and a stop to confirm
	detailPane       // the selected attempt full screen: its log and samples
	policyDetailPane // the selected policy full screen
	jobsPane         // the jobs running and waiting, full screen
	inventoryPane    // GitHub's runners and whose they are, full screen
	activityPane     // the latest events and errors, full screen
	filterLine       // the filter narrowing both tables, and its draft
	messageLine      // the status line's message
	helpOverlay      // the keys overlay

	// In-flight reads: one of each kind at a time.
	fetchingStatus, fetchingAttempts bool
	// staleStatus asks for another Status read once the one in flight ends.
	staleStatus bool
}

// NewModel returns the model of a UI that has read nothing yet.
func NewModel(width, height int, now time.Time) Model {
	m := Model{Width: width, Height: height, Now: now, Pane: PaneAttempts}
	m.Series = map[rm.AttemptID]*Series{}
	m.Edits = map[rm.PolicyID]PolicyEdit{}
	return m
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
	Status status.Status
	Err    error
}

// AttemptsLoaded is the result of FetchAttempts: the attempts and, from a
// PolicyHistory source, the policies they name (nil: unknown).
type AttemptsLoaded struct {
	Attempts []rm.Attempt
	Policies map[rm.PolicyID]rm.Policy
	Err      error
}

// LogLoaded is the result of FetchLog.
type LogLoaded struct {
	ID    rm.AttemptID
	Lines []string
	Err   error
}

// Notice is a standing word from the program running the UI (the demo's
// "all jobs done: press q to quit"): shown on the status line in place of
// the key hints until another Notice replaces it ("" clears it).
type Notice struct{ Text string }

// Done is the result of a command that changes something.
type Done struct {
	Cmd Command
	Err error
}

func (Notice) event()         {}
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
		m = m.expireMessage()
		m.expireEdits()
		m, cmds = m.fetch()
	case StatusLoaded:
		m, cmds = m.statusLoaded(ev)
	case AttemptsLoaded:
		m.fetchingAttempts = false
		if ev.Err != nil {
			if msg := oneLine(ev.Err); msg != m.HistoryErr {
				m = m.note(ActivityEntry{At: m.Now, What: "error: journal: " + msg, Bad: true})
			}
			m.HistoryErr = oneLine(ev.Err)
		} else {
			m.History, m.HistoryErr = ev.Attempts, ""
			if ev.Policies != nil {
				m.Policies = ev.Policies
			}
		}
	case LogLoaded:
		m = m.logLoaded(ev)
	case Done:
		m, cmds = m.done(ev)
	case Notice:
		m.Notice = ev.Text
	}
	m = m.fixSelection()
	return m.followLog(cmds)
}

// fetch starts the reads due now: each kind unless one is in flight.
func (m Model) fetch() (Model, []Command) {
	var cmds []Command
	if !m.fetchingStatus {
		m.fetchingStatus = true
		cmds = append(cmds, FetchStatus{})
	}
	if !m.fetchingAttempts {
		m.fetchingAttempts = true
		cmds = append(cmds, FetchAttempts{Filter: store.AttemptFilter{Limit: HistoryLimit}})
	}
	if m.Detail && !m.SelAttempt.IsZero() && !m.fetchingLog {
		m.fetchingLog = true
		cmds = append(cmds, FetchLog{ID: m.SelAttempt, Lines: LogLines})
	}
	return m, cmds
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

func (m Model) statusLoaded(ev StatusLoaded) (Model, []Command) {
	m.fetchingStatus = false
	var cmds []Command
	if m.staleStatus { // the read that just ended may predate a change
		m.staleStatus, m.fetchingStatus = false, true
		cmds = []Command{FetchStatus{}}
	}
	if ev.Err != nil {
		if msg := oneLine(ev.Err); msg != m.StatusErr && !errors.Is(ev.Err, ErrPartial) {
			m = m.note(ActivityEntry{At: m.Now, What: "error: " + msg, Bad: true})
		}
		m.StatusErr = oneLine(ev.Err)
		if !errors.Is(ev.Err, ErrPartial) {
			return m, cmds
		}
	} else {
		m.StatusErr = ""
	}
	m.Status, m.HaveStatus, m.partial = ev.Status, true, ev.Err != nil
	if ev.Err == nil { // a journal-only snapshot has no usage to sample
		m.sample(ev.Status)
	}
	m.pruneSeries()
	m.confirmEdits(ev.Status.Policies)
	m = m.notePolicies(ev.Status.Policies)
	return m, cmds
}

// done handles the result of a change: a message, and a Status read to
// show it.
func (m Model) done(ev Done) (Model, []Command) {
	ok := false
	switch c := ev.Cmd.(type) {
	case SetPaused, SetMax:
		m, ok = m.policyDone(c, ev.Err)
	case StopAttempt:
		m, ok = m.stopDone(c, ev.Err)
	}
	if !ok {
		return m, nil
	}
	return m.refreshStatus()
}

// fixSelection keeps the selection on the same rows after the lists
// changed, or on the nearest row if its row is gone.
func (m Model) fixSelection() Model {
	prows := m.PolicyRows()
	m.policyIdx, m.SelPolicy = reselect(prows, m.policyIdx, m.SelPolicy, PolicyRow.id)
	arows := m.AttemptRows()
	m.attemptIdx, m.SelAttempt = reselect(arows, m.attemptIdx, m.SelAttempt, AttemptRow.id)
	if m.Detail && len(arows) == 0 {
		m.Detail = false
	}
	return m
}

// move moves the selection of the focused table (the attempts' in the
// detail view) by delta rows, stopping at either end.
func (m Model) move(delta int) Model {
	if !m.Detail && !m.PolicyDetail {
		switch {
		case m.JobsView:
			return m.scrollJobs(delta)
		case m.InventoryView:
			m.inventoryTop = clamp(m.inventoryTop+delta, 0, max(0, len(m.Inventory(m.Width))-1))
			return m
		case m.ActivityView:
			m.activityTop = clamp(m.activityTop+delta, 0, max(0, len(m.Activity())-1))
			return m
		}
	}
	if m.Detail || m.Pane == PaneAttempts {
		m.attemptIdx, m.SelAttempt = moveIn(m.AttemptRows(), m.attemptIdx+delta, AttemptRow.id)
	} else {
		m.policyIdx, m.SelPolicy = moveIn(m.PolicyRows(), m.policyIdx+delta, PolicyRow.id)
	}
	return m
}

// pageRows is how far PgUp/PgDn move: about a screenful of rows.
func (m Model) pageRows() int { return max(1, m.Height-8) }

// oneLine makes an error fit a status line.
func oneLine(err error) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, err.Error())
}
