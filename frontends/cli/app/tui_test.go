package app_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/store"
)

// simulatedTUI runs the real TUI loop on a simulated 100x30 screen; once
// done(src) holds it quits with q, and shown gets what the screen showed
// last.
func simulatedTUI(t *testing.T, done func(context.Context, tui.Source) bool, shown *string) func(context.Context, tui.Source, tui.Options) error {
	return func(ctx context.Context, src tui.Source, opt tui.Options) error {
		sim := tcell.NewSimulationScreen("UTF-8")
		require.NoError(t, sim.Init())
		sim.SetSize(100, 30)
		opt.Tick = 50 * time.Millisecond
		go func() {
			deadline := time.Now().Add(60 * time.Second)
			for time.Now().Before(deadline) && !done(ctx, src) {
				time.Sleep(50 * time.Millisecond) // polling a real system, with a deadline
			}
			time.Sleep(200 * time.Millisecond) // a few ticks with the final figures
			sim.InjectKey(tcell.KeyRune, 'q', tcell.ModNone)
		}()
		return tui.RunScreen(ctx, capturingScreen{sim, shown}, src, opt)
	}
}

// capturingScreen keeps what the screen shows when the loop finalizes it
// (on the loop's own goroutine: no race with its drawing).
type capturingScreen struct {
	tcell.SimulationScreen
	shown *string
}

func (c capturingScreen) Fini() {
	cells, w, _ := c.GetContents()
	var b strings.Builder
	for i, cell := range cells {
		if len(cell.Runes) > 0 {
			b.WriteRune(cell.Runes[0])
		} else {
			b.WriteByte(' ')
		}
		if (i+1)%w == 0 {
			b.WriteByte('\n')
		}
	}
	*c.shown = b.String()
	c.SimulationScreen.Fini()
}

func TestDemoTUI(t *testing.T) {
	e := newEnv(t)
	var shown string
	allDone := func(ctx context.Context, src tui.Source) bool {
		as, err := src.Attempts(ctx, store.AttemptFilter{})
		if err != nil || len(as) < 3 {
			return false
		}
		for _, a := range as {
			if a.Live() {
				return false
			}
		}
		return true
	}
	// The demo says on the TUI that it has finished: the loop is quit once
	// the demo's notice is there (and a few ticks have drawn it).
	var notice func() string
	run := simulatedTUI(t, func(ctx context.Context, src tui.Source) bool {
		return allDone(ctx, src) && notice != nil && notice() != ""
	}, &shown)
	defer app.SetTUI(func(ctx context.Context, src tui.Source, opt tui.Options) error {
		notice = opt.Notice
		return run(ctx, src, opt)
	})()
	out := e.ok("demo", "--jobs", "3", "--tui")
	assert.Contains(t, out, "jobs served:        3 of 3")
	assert.Contains(t, shown, "demo finished: 3/3 jobs done in ", "the TUI said the demo is over:\n%s", shown)
	assert.Contains(t, shown, "press q to quit and see the summary")
	assert.NotContains(t, out, "(0 live runners)", "the summary counts the runners the TUI saw live")
	assert.Contains(t, shown, "demo-1", "the TUI showed the demo's policies:\n%s", shown)
	assert.Contains(t, shown, "demo-2")
}

func TestTUIBesideNoDaemon(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	var shown string
	seen := func(ctx context.Context, src tui.Source) bool {
		st, err := src.Status(ctx)
		return len(st.Policies) == 2 && err != nil // partial: no daemon
	}
	defer app.SetTUI(simulatedTUI(t, seen, &shown))()
	e.ok("tui")
	assert.Contains(t, shown, "home")
	assert.Contains(t, shown, "gpu")
}

// --ascii reaches the TUI as runner-manager-tui's does: its screen has
// no glyph of the view's own.
func TestTUIASCII(t *testing.T) {
	e := newEnv(t)
	seed(t, e)
	for _, tc := range []struct {
		args []string
		want bool
	}{{[]string{"tui"}, false}, {[]string{"tui", "--ascii"}, true}} {
		var look tui.Look
		restore := app.SetTUI(func(_ context.Context, _ tui.Source, opt tui.Options) error {
			look = opt.Look
			return nil
		})
		e.ok(tc.args...)
		restore()
		assert.Equal(t, tc.want, look.ASCII, "%v", tc.args)
	}
}
