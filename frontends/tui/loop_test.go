package tui_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestTranslate(t *testing.T) {
	tests := []struct {
		name string
		ev   tcell.Event
		want tui.Event
	}{
		{"Rune", tcell.NewEventKey(tcell.KeyRune, 'q', tcell.ModNone), tui.Key{Code: tui.KeyRune, Rune: 'q'}},
		{"ShiftedRune", tcell.NewEventKey(tcell.KeyRune, 'G', tcell.ModShift), tui.Key{Code: tui.KeyRune, Rune: 'G'}},
		{"Plus", tcell.NewEventKey(tcell.KeyRune, '+', tcell.ModNone), tui.Key{Code: tui.KeyRune, Rune: '+'}},
		{"Unicode", tcell.NewEventKey(tcell.KeyRune, 'ü', tcell.ModNone), tui.Key{Code: tui.KeyRune, Rune: 'ü'}},
		{"AltRuneIgnored", tcell.NewEventKey(tcell.KeyRune, 'q', tcell.ModAlt), nil},
		{"Up", tcell.NewEventKey(tcell.KeyUp, 0, tcell.ModNone), tui.Key{Code: tui.KeyUp}},
		{"Down", tcell.NewEventKey(tcell.KeyDown, 0, tcell.ModNone), tui.Key{Code: tui.KeyDown}},
		{"Left", tcell.NewEventKey(tcell.KeyLeft, 0, tcell.ModNone), tui.Key{Code: tui.KeyLeft}},
		{"Right", tcell.NewEventKey(tcell.KeyRight, 0, tcell.ModNone), tui.Key{Code: tui.KeyRight}},
		{"PgUp", tcell.NewEventKey(tcell.KeyPgUp, 0, tcell.ModNone), tui.Key{Code: tui.KeyPgUp}},
		{"PgDn", tcell.NewEventKey(tcell.KeyPgDn, 0, tcell.ModNone), tui.Key{Code: tui.KeyPgDn}},
		{"Home", tcell.NewEventKey(tcell.KeyHome, 0, tcell.ModNone), tui.Key{Code: tui.KeyHome}},
		{"End", tcell.NewEventKey(tcell.KeyEnd, 0, tcell.ModNone), tui.Key{Code: tui.KeyEnd}},
		{"Enter", tcell.NewEventKey(tcell.KeyEnter, 0, tcell.ModNone), tui.Key{Code: tui.KeyEnter}},
		{"LineFeed", tcell.NewEventKey(tcell.KeyLF, 0, tcell.ModNone), tui.Key{Code: tui.KeyEnter}},
		{"Esc", tcell.NewEventKey(tcell.KeyEsc, 0, tcell.ModNone), tui.Key{Code: tui.KeyEsc}},
		{"Backspace", tcell.NewEventKey(tcell.KeyBackspace, 0, tcell.ModNone), tui.Key{Code: tui.KeyBackspace}},
		{"Delete127", tcell.NewEventKey(tcell.KeyBackspace2, 0, tcell.ModNone), tui.Key{Code: tui.KeyBackspace}},
		{"Tab", tcell.NewEventKey(tcell.KeyTab, 0, tcell.ModNone), tui.Key{Code: tui.KeyTab}},
		{"ShiftTab", tcell.NewEventKey(tcell.KeyTab, 0, tcell.ModShift), tui.Key{Code: tui.KeyBacktab}},
		{"CtrlC", tcell.NewEventKey(tcell.KeyCtrlC, 0, tcell.ModCtrl), tui.Key{Code: tui.KeyCtrlC}},
		{"CtrlJ", tcell.NewEventKey(tcell.KeyCtrlJ, 0, tcell.ModCtrl), tui.Key{Code: tui.KeyEnter}},
		{"CtrlLAsRune", tcell.NewEventKey(tcell.KeyRune, 12, tcell.ModNone), tui.Key{Code: tui.KeyCtrlL}},
		{"CtrlCAsRune", tcell.NewEventKey(tcell.KeyRune, 3, tcell.ModNone), tui.Key{Code: tui.KeyCtrlC}},
		{"CtrlL", tcell.NewEventKey(tcell.KeyCtrlL, 0, tcell.ModCtrl), tui.Key{Code: tui.KeyCtrlL}},
		{"F1Ignored", tcell.NewEventKey(tcell.KeyF1, 0, tcell.ModNone), nil},
		{"CtrlXIgnored", tcell.NewEventKey(tcell.KeyCtrlX, 0, tcell.ModCtrl), nil},
		{"Resize", tcell.NewEventResize(100, 40), tui.Resize{Width: 100, Height: 40}},
		{"MouseIgnored", tcell.NewEventMouse(1, 2, tcell.Button1, tcell.ModNone), nil},
		{"InterruptIgnored", tcell.NewEventInterrupt(nil), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tui.Translate(tt.ev)
			assert.Equal(t, tt.want != nil, ok)
			assert.Equal(t, tt.want, got)
		})
	}
}

// screenText reads a simulation screen back as text, one line per row.
func screenText(s tcell.SimulationScreen) string {
	cells, w, h := s.GetContents()
	var b strings.Builder
	for y := range h {
		var line strings.Builder
		for x := range w {
			c := cells[y*w+x]
			if len(c.Runes) > 0 {
				line.WriteRune(c.Runes[0])
			}
		}
		b.WriteString(strings.TrimRight(line.String(), " "))
		b.WriteByte('\n')
	}
	return b.String()
}

// liveStatus is what a daemon would report for j.
func liveStatus(j journal) status.Status {
	return status.Status{
		At:   t0,
		Host: j.host,
		Memory: status.Memory{
			TotalBytes: 16 * gib, AvailableBytes: 10 * gib, ReserveBytes: 2 * gib, CommittedBytes: 3 * gib,
		},
		Policies: []status.Policy{
			{ID: j.home.ID, Name: "home", Live: 2, Idle: 1, Busy: 1, Max: 4, MinIdle: 1, Demand: 1, Admitted: 4},
		},
		Attempts: []status.Attempt{
			{ID: j.idle.ID, Policy: j.home.ID, RunnerName: j.idle.RunnerName, State: rm.StateIdle, CreatedAt: j.idle.CreatedAt, RSSBytes: 100 * mib},
			{ID: j.busy.ID, Policy: j.home.ID, RunnerName: j.busy.RunnerName, State: rm.StateBusy, CreatedAt: j.busy.CreatedAt, RSSBytes: 900 * mib, CPUMillicores: 1500},
		},
	}
}

// TestLoopSmoke drives the real loop over a real journal on a simulated
// screen, one step at a time: each step handles whatever came first (a key,
// a result from the source, a redraw), so the test waits for what it
// expects without sleeping.
func TestLoopSmoke(t *testing.T) {
	j := newJournal(t)
	src := j.source(t)
	live := liveStatus(j)
	src.Live = func(context.Context) (status.Status, error) { return live, nil }
	stops := make(chan rm.AttemptID, 1)
	src.Stop = func(_ context.Context, id rm.AttemptID) error { stops <- id; return nil }
	logDir := filepath.Join(src.DataDir, "attempts", j.busy.ID.String())
	require.NoError(t, os.MkdirAll(logDir, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(logDir, "runner.log"), []byte("Listening for Jobs\nRunning job: build\n"), 0o600))

	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	screen.SetSize(80, 24)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := tui.NewLoop(ctx, screen, src, tui.Options{Tick: time.Hour, Now: func() time.Time { return t0 }})
	defer func() {
		l.Stop()
		screen.Fini()
	}()

	until := func(what string, cond func() bool) {
		t.Helper()
		for !cond() {
			require.False(t, l.Step(ctx), "the loop ended while waiting for %s:\n%s", what, screenText(screen))
		}
	}
	shows := func(s string) func() bool {
		return func() bool { return strings.Contains(screenText(screen), s) }
	}
	press := func(k tcell.Key, r rune) { screen.InjectKey(k, r, tcell.ModNone) }
	typing := func(s string) {
		for _, r := range s {
			press(tcell.KeyRune, r)
		}
	}

	until("the policies", shows("octo/app home"))
	until("the journal's history", shows("finished"))
	text := screenText(screen)
	assert.Contains(t, text, "used   [")
	assert.Contains(t, text, "org:acme [gpu", "the paused policy, from the journal")
	lines := strings.Split(text, "\n")
	assert.True(t, strings.HasPrefix(lines[0], "runner-manager"), lines[0])

	// Stop the busy attempt: select it, x, confirm.
	press(tcell.KeyDown, 0)
	until("the busy attempt selected", func() bool { return l.Model().SelAttempt == j.busy.ID })
	press(tcell.KeyRune, 'x')
	until("the question", shows("? y/n"))
	press(tcell.KeyRune, 'y')
	until("the stop's result", shows("stop requested: "+j.busy.RunnerName))
	assert.Equal(t, j.busy.ID, <-stops)

	// Filter, then clear it.
	typing("/busy")
	press(tcell.KeyEnter, 0)
	until("the filter", shows(`Attempts (1, filter "busy")`))
	assert.NotContains(t, screenText(screen), "finished")
	press(tcell.KeyEsc, 0)
	until("the filter cleared", shows("Attempts (3)"))

	// Pause "home" from the policies pane: the journal says so.
	press(tcell.KeyTab, 0)
	press(tcell.KeyDown, 0)
	until("home selected", func() bool {
		p, ok := l.Model().SelectedPolicy()
		return ok && p.Name == "home" && l.Model().Pane == tui.PanePolicies
	})
	press(tcell.KeyRune, 'p')
	until("home paused in the journal", func() bool {
		p, err := j.store.Policy(ctx, j.home.ID)
		require.NoError(t, err)
		return p.Paused
	})
	until("the pause confirmed", shows("paused home"))

	// Open the busy attempt's detail: its log shows.
	press(tcell.KeyTab, 0)
	press(tcell.KeyEnter, 0)
	until("the log", shows("Running job: build"))
	assert.Contains(t, screenText(screen), "Attempt "+j.busy.RunnerName)

	// Resize: the screen is laid out again for the new size.
	screen.SetSize(100, 30)
	require.NoError(t, screen.PostEvent(tcell.NewEventResize(100, 30)))
	until("the new size", func() bool { return l.Model().Width == 100 && l.Model().Height == 30 })
	until("the redraw", func() bool {
		lines := strings.Split(screenText(screen), "\n")
		return len(lines) == 31 && len([]rune(lines[0])) == 100 && strings.HasSuffix(lines[0], "12:00:00") &&
			strings.Contains(lines[1], "used") && lines[29] == "paused home"
	})

	// q leaves the detail, q again quits.
	press(tcell.KeyRune, 'q')
	until("the lists", shows("Policies (2)"))
	press(tcell.KeyRune, 'q')
	for !l.Step(ctx) {
	}
	require.NoError(t, ctx.Err(), "the loop ended on q, not on the deadline")
	assert.True(t, l.Model().Quit)
}

func TestRunScreenQuits(t *testing.T) {
	j := newJournal(t)
	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	screen.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, tui.RunScreen(ctx, screen, j.source(t), tui.Options{Tick: time.Hour}))
	require.NoError(t, ctx.Err())
	w, h := screen.Size()
	assert.Equal(t, [2]int{0, 0}, [2]int{w, h}, "the screen was finalized")
}

func TestRunScreenEndsWithContext(t *testing.T) {
	j := newJournal(t)
	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, tui.RunScreen(ctx, screen, j.source(t), tui.Options{Tick: time.Hour}))
	w, h := screen.Size()
	assert.Equal(t, [2]int{0, 0}, [2]int{w, h}, "the screen was finalized")
}

func TestRunScreenRestoresTerminalOnPanic(t *testing.T) {
	j := newJournal(t)
	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	opt := tui.WithDraw(tui.Options{Tick: time.Hour}, func(tui.Canvas, tui.Model) { panic("boom in draw") })
	require.PanicsWithValue(t, "boom in draw", func() { _ = tui.RunScreen(ctx, screen, j.source(t), opt) })
	w, h := screen.Size()
	assert.Equal(t, [2]int{0, 0}, [2]int{w, h}, "Fini was called before the panic went on")
}

// quitAfterStop steps a loop over j until its figures show, asks to stop
// the idle attempt (the first row), and quits.
func quitAfterStop(t *testing.T, ctx context.Context, l *tui.Loop, screen tcell.SimulationScreen, j journal) {
	t.Helper()
	for l.Model().SelAttempt != j.idle.ID || len(l.Model().History) == 0 {
		require.False(t, l.Step(ctx))
	}
	for _, r := range "xyq" {
		screen.InjectKey(tcell.KeyRune, r, tcell.ModNone)
	}
	for !l.Step(ctx) {
	}
	require.NoError(t, ctx.Err())
}

func TestLoopQuitDeliversQueuedStop(t *testing.T) {
	j := newJournal(t)
	src := j.source(t)
	var stopped []rm.AttemptID // written by the worker, read after Stop
	src.Stop = func(_ context.Context, id rm.AttemptID) error { stopped = append(stopped, id); return nil }
	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := tui.NewLoop(ctx, screen, src, tui.Options{Tick: time.Hour})
	quitAfterStop(t, ctx, l, screen, j)
	l.Stop()
	screen.Fini()
	assert.Equal(t, []rm.AttemptID{j.idle.ID}, stopped, "the stop asked for just before q reached the source")
}

func TestLoopQuitDoesNotWaitForeverForTheSource(t *testing.T) {
	defer tui.SetStopGrace(10 * time.Millisecond)()
	j := newJournal(t)
	src := j.source(t)
	released := make(chan error, 1)
	src.Stop = func(ctx context.Context, _ rm.AttemptID) error {
		<-ctx.Done() // a daemon that never answers
		released <- ctx.Err()
		return ctx.Err()
	}
	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	l := tui.NewLoop(ctx, screen, src, tui.Options{Tick: time.Hour})
	quitAfterStop(t, ctx, l, screen, j)
	l.Stop()
	screen.Fini()
	assert.ErrorIs(t, <-released, context.Canceled, "the hung call is cancelled once the grace is over")
}

// Through the real loop, a removed policy's attempts are named by the
// journal, "gpu (removed)"; NO_COLOR and the ASCII variable reach the
// model.
func TestLoopRemovedPolicyAndLook(t *testing.T) {
	t.Setenv("NO_COLOR", "1")
	t.Setenv(tui.ASCIIEnv, "1")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	j := newJournal(t)
	old := storetest.NewAttempt().Policy(j.gpu.ID).Host(j.host.ID).State(rm.StateFailed).
		CreatedAt(storetest.Now().Add(-2 * time.Hour)).Build()
	require.NoError(t, j.store.RecordAttempt(ctx, old))
	require.NoError(t, j.store.DeletePolicy(ctx, j.gpu.ID))
	src := j.source(t)
	live := liveStatus(j)
	src.Live = func(context.Context) (status.Status, error) { return live, nil }

	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	screen.SetSize(80, 24)
	l := tui.NewLoop(ctx, screen, src, tui.Options{Tick: time.Hour, Now: func() time.Time { return t0 }})
	defer func() {
		l.Stop()
		screen.Fini()
	}()
	for !strings.Contains(screenText(screen), "gpu (removed)") {
		require.False(t, l.Step(ctx), "the loop ended before naming the removed policy:\n%s", screenText(screen))
	}
	assert.Equal(t, tui.Look{NoColor: true, ASCII: true}, l.Model().Look)
	text := screenText(screen)
	assert.Contains(t, text, "== [Attempts")
	assert.NotContains(t, text, "━")
}
