package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/simulate"
	"github.com/runner-manager/runner-manager/status"
)

// DemoCmd runs the demo.
type DemoCmd struct {
	Jobs     int           `help:"Jobs to enqueue (default ${default})." default:"20" placeholder:"N"`
	Policies int           `help:"Policies to serve them, one scale set (or label set) each (default ${default})." default:"2" placeholder:"N"`
	Max      int           `help:"Most runners at once per policy (default ${default})." default:"4" placeholder:"N"`
	TUI      bool          `name:"tui" help:"Show the terminal UI instead of a progress line (quit with q when the jobs are done)."`
	Classic  bool          `help:"Classic mode (labels, REST demand polling) instead of scale sets."`
	Keep     bool          `help:"Keep the demo's data directory (journal, attempt logs) and print where it is."`
	Seed     uint64        `help:"Seed of the job mix (default ${default})." default:"1" placeholder:"N"`
	Timeout  time.Duration `help:"Give up after this long (default ${default})." default:"5m" placeholder:"DURATION"`
}

// Help is the long help of demo.
func (c *DemoCmd) Help() string {
	return `The demo starts the whole manager (journal, supervisor, launcher, meters,
admission) against a fake GitHub built into this program, in a temporary data
directory. Its runners are real processes (this program, under the name
Runner.Listener) that take one job each, allocate the job's memory and burn
its CPU for its duration, and exit. Jobs last 0.2-2 s and use 16-128 MiB.

It ends with a summary: jobs served, how long jobs waited for a runner (p50,
p95), peak concurrency, admission refusals and GitHub calls per job. It needs
no token, no installed runner and no network:

  go run ./frontends/cli demo --jobs 20`
}

// Run runs the demo.
func (c *DemoCmd) Run(ctx context.Context, a *App) error {
	if c.Jobs < 1 || c.Policies < 1 || c.Max < 1 {
		return invalid("--jobs, --policies and --max must be at least 1")
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	opts := simulate.Options{Jobs: c.Jobs, Policies: c.Policies, Max: c.Max, Classic: c.Classic, Seed: c.Seed}
	if c.Keep {
		dir, err := os.MkdirTemp("", "runner-manager-demo-")
		if err != nil {
			return err
		}
		opts.DataDir = dir
	}
	if c.TUI || a.cli.LogLevel != "" || a.cli.LogFormat != "" {
		// Logs would garble the TUI; without it they go to standard error
		// only when asked for.
		if !c.TUI {
			opts.Logger = a.Logger()
		}
	}
	mode := "scale-set"
	if c.Classic {
		mode = "classic"
	}
	fmt.Fprintf(a.Stdout, "demo: %d jobs, %d policies of max %d, %s mode, against a built-in fake GitHub\n", c.Jobs, c.Policies, c.Max, mode)
	sim, err := simulate.Start(ctx, opts)
	if err != nil {
		return fmt.Errorf("start the demo: %w", err)
	}
	defer sim.Close()
	if c.Keep {
		fmt.Fprintf(a.Stdout, "data directory: %s (runner-manager --data-dir %s attempts)\n", sim.DataDir(), sim.DataDir())
	}

	var werr error
	if c.TUI {
		werr = c.runTUI(ctx, sim)
	} else {
		werr = sim.Wait(ctx, 250*time.Millisecond, progressPrinter(a.Stdout))
	}
	if werr == nil {
		sim.Settle(ctx, 10*time.Second)
	}
	sum, err := sim.Summary(context.WithoutCancel(ctx))
	if err != nil {
		return err
	}
	sum.WriteText(a.Stdout)
	if werr != nil {
		return werr
	}
	if sum.Served != sum.Jobs {
		return fmt.Errorf("only %d of %d jobs were served", sum.Served, sum.Jobs)
	}
	return sim.Close()
}

// runTUI runs the terminal UI (tests run it on a simulated screen).
var runTUI = tui.Run

// runTUI shows the demo in the TUI until the user quits.
func (c *DemoCmd) runTUI(ctx context.Context, sim *simulate.Sim) error {
	sup := sim.Daemon()
	var notice atomic.Pointer[string]
	src := &tui.StoreSource{
		Store:   sim.Store(),
		DataDir: sim.DataDir(),
		// Progress keeps the summary's peaks and refusals, as Wait's ticks
		// do without the TUI: otherwise the summary, taken once all is
		// done, would say "0 live runners".
		Live: func(context.Context) (status.Status, error) {
			// The word is set once: Elapsed goes on after the last job.
			if p := sim.Progress(); p.Done >= p.Total && notice.Load() == nil {
				text := demoFinished(p)
				notice.Store(&text)
			}
			return sup.Status(), nil
		},
		Stop:    sup.StopAttempt,
		Changed: func(context.Context) error { sup.Refresh(); return nil },
	}
	opt := tui.Options{Notice: func() string {
		if p := notice.Load(); p != nil {
			return *p
		}
		return ""
	}}
	if err := runTUI(ctx, src, opt); err != nil {
		return err
	}
	p := sim.Progress()
	if p.Done < p.Total {
		return fmt.Errorf("the TUI was closed with %d of %d jobs done", p.Done, p.Total)
	}
	return nil
}

// demoFinished is the TUI's word once every job is done: the demo has
// nothing more to show, and only the person can close the TUI.
func demoFinished(p simulate.Progress) string {
	return fmt.Sprintf("demo finished: %d/%d jobs done in %.1fs; press q to quit and see the summary", p.Done, p.Total, p.Elapsed.Seconds())
}

// progressPrinter prints the demo's progress: one line rewritten in place
// on a terminal, a line per change elsewhere.
func progressPrinter(w io.Writer) func(simulate.Progress) {
	tty := isTerminal(w)
	last := ""
	return func(p simulate.Progress) {
		line := fmt.Sprintf("[%5.1fs] %d/%d jobs done, %d running, %d queued; %d live runners",
			p.Elapsed.Seconds(), p.Done, p.Total, p.Running, p.Queued, p.Live)
		key := line[strings.Index(line, "]"):]
		if key == last {
			return
		}
		last = key
		if tty {
			fmt.Fprintf(w, "\r\033[K%s", line)
			if p.Done == p.Total {
				fmt.Fprintln(w)
			}
			return
		}
		fmt.Fprintln(w, line)
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
