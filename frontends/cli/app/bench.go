package app

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/simulate"
)

// BenchCmd runs the benchmark: a busy day through the real daemon code.
type BenchCmd struct {
	Jobs       int             `help:"Jobs to serve (default ${default})." default:"2000" placeholder:"N"`
	Policies   int             `help:"Policies serving them, one scale set (or label set) each, with a mix of max and memory estimates (default ${default})." default:"10" placeholder:"N"`
	Duration   time.Duration   `help:"How long jobs keep arriving, in bursts, trickles and quiet spells (default ${default})." default:"1m" placeholder:"DURATION"`
	HostMemory configfile.Size `name:"host-memory" help:"The host's memory as admission sees it, whatever this machine has (default ${default})." default:"16GiB" placeholder:"SIZE"`
	Out        string          `help:"Write the report as JSON to this file (default ${default}; empty: none)." default:"bench.json" placeholder:"FILE" type:"path"`
	Classic    bool            `help:"Classic mode (labels, REST demand polling) instead of scale sets."`
	Poll       time.Duration   `help:"Classic mode: how often each policy polls the repository's jobs (default ${default}; the daemon polls every 2s)." default:"500ms" placeholder:"DURATION"`
	Webhooks   bool            `help:"Classic mode: the fake GitHub sends workflow_job webhooks to the daemon's receiver, as with [webhook] listen."`
	Max        int             `help:"Every policy's max runners (default: the mix's, 4-10)." placeholder:"N"`
	Seed       uint64          `help:"Seed of the arrivals and the job mix (default ${default})." default:"1" placeholder:"N"`
	Timeout    time.Duration   `help:"Give up after this long (default ${default}); with --compare, each scaler's run of each case (a day's at least --day + 2m), not the whole." default:"10m" placeholder:"DURATION"`
	CPUProfile string          `name:"cpu-profile" help:"Write the CPU profile of this process over the run (the one the report's CPU split is read from), for go tool pprof." placeholder:"FILE" type:"path"`

	benchCompareFlags
	benchWarmFlags
}

// Help is the long help of bench.
func (c *BenchCmd) Help() string {
	return `The bench runs the daemon's own code (journal, supervisor, loops, native
launcher, meters, admission) against a fake GitHub built into this program, in a
temporary data directory, and measures it. Its runners are real processes (this
program, under the name Runner.Listener) that take one job each, allocate the
job's memory (8-64 MiB) and burn its CPU for its duration (30-800 ms).

Jobs arrive over --duration in cycles: a burst, a trickle, a quiet spell. The
policies mix max runners (4-10) and first-job memory estimates (256 MiB-4 GiB)
on a host of --host-memory, so admission refuses launches until real peaks
are measured.

It prints and writes as JSON: jobs served (must equal jobs queued), the wait
from queueing to a runner (p50/p95/p99), a runner's exit to its replacement's
start, peak runners per policy against max and admission, refusals by reason,
GitHub calls per job, this process's CPU seconds and peak RSS, its CPU split
by part from a profile of the run (the manager's goroutines, the fake GitHub's,
the bench's, the runtime's) and the manager's share, the journal's size. See
docs/performance.md.

  go run ./frontends/cli bench
  go run ./frontends/cli bench --classic --out classic.json
  go run ./frontends/cli bench --cpu-profile cpu.out && go tool pprof -top cpu.out

With --compare it runs instead, side by side, the same jobs through this
manager and through a baseline scaler written the way actions/scaleset's
README and examples/dockerscaleset prescribe (listener, JIT configuration, a
runner per desired count, no admission, no spares), each against a fake GitHub
whose runners take --boot to start: as a backlog (--compare-jobs at once), the
same from a warm start (both keeping max runners idle), arriving every
--gap, below capacity, and --day-jobs over a working day compressed into
--day (a quiet night, bursts at each working hour, an evening's trickle). It
prints makespan, efficiency (Σ job durations / max
over the makespan), the reachable efficiency (the best any scaler can do with
the runners it had free when the first job came, each other runner
taking --boot), wait p50/p95, GitHub calls per job and the runners' peak
memory for both, and their ratios; then the manager alone in classic mode, at
its default demand poll, jobs below capacity: queue → runner started and REST
calls per job. --repeat N runs it all N times and adds each figure's mean
and range. There --timeout bounds each scaler's run of each case, so that a
run that stalls ends; the whole takes as long as its cases (about ten
minutes a repetition with the defaults).

  go run ./frontends/cli bench --compare
  go run ./frontends/cli bench --compare --repeat 3 --out compare.json

With --case warm it runs the warm-jobs case instead: two repositories × three
runs each of a job shaped like CI (a checkout of a repository the fake GitHub
serves, a toolchain into the runner's tool cache, npm dependencies), fetched
at --warm-rate, a home uplink's, unless the job's folders already hold them;
one side as the manager runs jobs by default, one with the policies' cold
switch, side by side in one daemon. It prints each run's setup time and its
fraction of the repository's first run (the goal: 15 % or less when warm).
See docs/performance.md, "Warm jobs".

  go run ./frontends/cli bench --case warm`
}

// Run runs the bench.
func (c *BenchCmd) Run(ctx context.Context, a *App) error {
	if c.Jobs < 1 || c.Policies < 1 || c.Duration <= 0 || c.HostMemory == 0 {
		return invalid("--jobs and --policies must be at least 1, --duration and --host-memory above 0")
	}
	if c.Case == "warm" {
		return c.runWarm(ctx, a)
	}
	if c.Compare {
		// --timeout bounds each scaler's run of each case there: one
		// bound over them all would end --repeat 3 in its second run.
		return c.runCompare(ctx, a)
	}
	ctx, cancel := context.WithTimeout(ctx, c.Timeout)
	defer cancel()
	opts := simulate.BenchOptions{Jobs: c.Jobs, Policies: c.Policies, Span: c.Duration,
		HostMemory: uint64(c.HostMemory), Classic: c.Classic, ClassicPoll: c.Poll, Webhooks: c.Webhooks, Max: c.Max, Seed: c.Seed}
	if a.cli.LogLevel != "" || a.cli.LogFormat != "" {
		opts.Logger = a.Logger()
	}
	mode := "scale-set"
	if c.Classic {
		mode = "classic"
	}
	fmt.Fprintf(a.Stdout, "bench: %d jobs over %s, %d policies, %s mode, host memory %s, against a built-in fake GitHub\n",
		c.Jobs, c.Duration, c.Policies, mode, c.HostMemory)
	if c.CPUProfile != "" {
		f, err := os.Create(c.CPUProfile)
		if err != nil {
			return fmt.Errorf("write the CPU profile: %w", err)
		}
		defer f.Close()
		opts.CPUProfile = f
	}
	rep, err := simulate.RunBench(ctx, opts, progressPrinter(a.Stdout))
	if rep.Queued > 0 {
		rep.WriteText(a.Stdout)
		if c.Out != "" {
			if werr := rep.WriteJSON(c.Out); werr != nil {
				return fmt.Errorf("write the report: %w", werr)
			}
			fmt.Fprintf(a.Stdout, "report: %s\n", c.Out)
		}
	}
	return err
}
