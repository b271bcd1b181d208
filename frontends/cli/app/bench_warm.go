package app

import (
	"context"
	"encoding/json"
	"fmt"
	"os"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/simulate"
)

// benchWarmFlags are bench's cases other than the busy day.
type benchWarmFlags struct {
	Case      string          `help:"Which case to run: day (the busy day, or --compare) or warm (warm jobs: a CI-shaped job's setup, warm against cold) (default ${default})." enum:"day,warm" default:"day" group:"warm"`
	WarmRepos int             `name:"warm-repos" help:"Repositories of the warm case (default ${default})." default:"2" placeholder:"N" group:"warm"`
	WarmRuns  int             `name:"warm-runs" help:"Runs of each repository's job in the warm case (default ${default})." default:"3" placeholder:"N" group:"warm"`
	WarmRate  configfile.Size `name:"warm-rate" help:"Download rate of the warm case's checkouts, toolchains and packages, per second (default ${default}, a home uplink's)." default:"10MB" placeholder:"SIZE" group:"warm"`
}

// warmCase runs the warm case (tests replace it).
var warmCase = simulate.RunWarm

// runWarm runs the warm-jobs case and prints it side by side.
func (c *BenchCmd) runWarm(ctx context.Context, a *App) error {
	switch {
	case c.WarmRepos < 1 || c.WarmRuns < 2:
		return invalid("--warm-repos must be at least 1 and --warm-runs at least 2")
	case c.WarmRate == 0:
		return invalid("--warm-rate must be above 0")
	}
	opts := simulate.WarmOptions{Repos: c.WarmRepos, Runs: c.WarmRuns, Rate: int64(c.WarmRate), Timeout: c.Timeout}
	if a.cli.LogLevel != "" || a.cli.LogFormat != "" {
		opts.Logger = a.Logger()
	}
	fmt.Fprintf(a.Stdout, "bench --case warm: %d repositories × %d runs, warm and cold side by side, downloads at %.1f MB/s ...\n",
		c.WarmRepos, c.WarmRuns, float64(c.WarmRate)/1e6)
	rep, err := warmCase(ctx, opts)
	if len(rep.Sides) > 0 {
		rep.WriteText(a.Stdout)
		if c.Out != "" {
			b, jerr := json.MarshalIndent(rep, "", "  ")
			if jerr == nil {
				jerr = os.WriteFile(c.Out, append(b, '\n'), 0o644)
			}
			if jerr != nil {
				return fmt.Errorf("write the report: %w", jerr)
			}
			fmt.Fprintf(a.Stdout, "report: %s\n", c.Out)
		}
	}
	return err
}
