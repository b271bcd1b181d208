// Command simulate runs a busy day from Go code: the whole manager against
// the fake GitHub of simulate/fakegithub, with real runner processes (this
// program, under the name Runner.Listener), then prints what happened.
//
//	go run ./examples/simulate -jobs 40 -policies 3 -max 4
//
// It is package simulate's API, used the way `runner-manager demo` uses it.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"time"

	"github.com/runner-manager/runner-manager/simulate"
)

func main() {
	// First: the simulation starts this very program as its fake runners.
	if code, ok := simulate.RunFakeRunnerIfNamed(os.Args); ok {
		os.Exit(code)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("simulate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var opts simulate.Options
	fs.IntVar(&opts.Jobs, "jobs", 30, "jobs to enqueue")
	fs.IntVar(&opts.Policies, "policies", 2, "policies serving them")
	fs.IntVar(&opts.Max, "max", 4, "most runners at once per policy")
	fs.BoolVar(&opts.Classic, "classic", false, "classic mode (labels) instead of scale sets")
	fs.DurationVar(&opts.MaxDuration, "max-duration", 2*time.Second, "longest job")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	sum, err := simulate.Run(ctx, opts, func(p simulate.Progress) {
		fmt.Fprintf(stdout, "%6.1fs  %3d/%d done  %2d running  %2d live runners\n", p.Elapsed.Seconds(), p.Done, p.Total, p.Running, p.Live)
	})
	if err != nil {
		fmt.Fprintln(stderr, "simulate:", err)
		return 1
	}
	fmt.Fprintf(stdout, "served %d/%d jobs on %d ephemeral runners in %s\n", sum.Served, sum.Jobs, sum.DistinctRunners, sum.Elapsed.Round(time.Millisecond))
	fmt.Fprintf(stdout, "waited p50 %s p95 %s; peak %d jobs at once; %.1f GitHub calls per job\n",
		sum.WaitP50.Round(time.Millisecond), sum.WaitP95.Round(time.Millisecond), sum.PeakConcurrency, sum.CallsPerJob())
	fmt.Fprintf(stdout, "attempts by outcome: %v; refusals: %v\n", sum.Outcomes, sum.Refusals)
	if sum.Served != sum.Jobs {
		return 1
	}
	return 0
}
