package app

import (
	"context"
	"time"

	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
)

// TUICmd runs the terminal UI.
type TUICmd struct {
	ASCII bool `name:"ascii" help:"Draw frames, rules and bars in ASCII, for a terminal or font without box-drawing glyphs (also $$RUNNER_MANAGER_TUI_ASCII=1; TERM=dumb implies it, NO_COLOR drops colour)."`
}

// Help is the long help of tui.
func (c *TUICmd) Help() string {
	return `The TUI shows the host's memory and admission, each policy, the runner
attempts with their memory and CPU, and an attempt's history and log. Run it
beside "runner-manager run" (it reads the journal and the daemon's live
figures); without the daemon it shows what the journal holds.

Keys: arrows or j/k move, enter opens an attempt, tab switches pane, p pauses
or resumes a policy, + and - change its max, x stops an attempt, / filters,
w lists the jobs, o GitHub's runners (this host's, the fleet's, unknown), a
the latest events and errors, c in o or a prints that view when you quit (to
copy it), ? helps, q quits.`
}

// Run shows the TUI until the user quits.
func (c *TUICmd) Run(ctx context.Context, a *App) error {
	st, err := a.ReadStore(ctx)
	if err != nil {
		return err
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	src := tui.DaemonSource(st, cfg.DataDir)
	src.StaleAfter = status.StaleAfter(time.Duration(cfg.Fleet.Heartbeat))
	return runTUI(ctx, src, tui.Options{Look: tui.Look{ASCII: c.ASCII}})
}
