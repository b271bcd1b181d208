package app

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/simulate"
)

// benchCompareFlags are bench's side-by-side mode.
type benchCompareFlags struct {
	Compare     bool          `help:"Run the same jobs through this manager and through a baseline scaler (actions/scaleset's example), side by side." group:"compare"`
	CompareJobs int           `name:"compare-jobs" help:"Jobs of each side-by-side run (default ${default})." default:"40" placeholder:"N" group:"compare"`
	Boot        time.Duration `help:"How long the fake runner takes to start, launch to listening (default ${default}, about the real listener's; 0: at once)." default:"2s" placeholder:"DURATION" group:"compare"`
	Spare       int           `help:"The manager's warm spares in the side-by-side runs: 0 the policy's default (sized by the day), N at most N, -1 none (default ${default})." default:"0" placeholder:"N" group:"compare"`
	MaxSpares   int           `name:"max-spares" help:"The host's bound on warm spares, all policies together, as [admission] max_spares: 0 its default (8) (default ${default})." default:"0" placeholder:"N" group:"compare"`
	Gap         time.Duration `help:"Between two arrivals of the below-capacity run (default ${default})." default:"1s" placeholder:"DURATION" group:"compare"`
	Day         time.Duration `help:"A working day compressed into DURATION (quiet night, bursts at each working hour, an evening's trickle), side by side; 0 skips it (default ${default})." default:"2m" placeholder:"DURATION" group:"compare"`
	DayJobs     int           `name:"day-jobs" help:"Jobs of the compressed day (default ${default})." default:"120" placeholder:"N" group:"compare"`
	Repeat      int           `help:"Runs of every case, back to back, the same jobs each time; with more than one, a summary gives each figure's mean and range (default ${default})." default:"1" placeholder:"N" group:"compare"`
}

// compareCase runs one case side by side (tests replace it).
var compareCase = simulate.RunCompare

// compareScenario is one side-by-side run.
type compareScenario struct {
	Name   string                 `json:"name"`
	Run    int                    `json:"run,omitempty"` // 1…--repeat, when more than one
	Report simulate.CompareReport `json:"report"`
}

// runCompare runs every case --repeat times and, with more than one run,
// prints each figure's spread.
func (c *BenchCmd) runCompare(ctx context.Context, a *App) error {
	switch {
	case c.CompareJobs < 1:
		return invalid("--compare-jobs must be at least 1")
	case c.MaxSpares < -1:
		return invalid("--max-spares must be -1 (none), 0 (the default) or more")
	case c.Repeat < 1:
		return invalid("--repeat must be at least 1")
	case c.Day < 0:
		return invalid("--day must not be negative")
	case c.Day > 0 && c.DayJobs < 1:
		return invalid("--day-jobs must be at least 1")
	}
	var out []compareScenario
	for run := 1; run <= c.Repeat; run++ {
		if c.Repeat > 1 {
			fmt.Fprintf(a.Stdout, "bench --compare: run %d of %d\n", run, c.Repeat)
		}
		got, err := c.compareOnce(ctx, a)
		for i := range got {
			if c.Repeat > 1 {
				got[i].Run = run
			}
		}
		out = append(out, got...)
		if err != nil {
			return err
		}
	}
	if c.Repeat > 1 {
		printSpread(a.Stdout, out)
	}
	if c.Out != "" {
		b, err := json.MarshalIndent(out, "", "  ")
		if err == nil {
			err = os.WriteFile(c.Out, append(b, '\n'), 0o644)
		}
		if err != nil {
			return fmt.Errorf("write the report: %w", err)
		}
		fmt.Fprintf(a.Stdout, "report: %s\n", c.Out)
	}
	return nil
}

// compareOnce runs each case once: the backlog cold and warm, below
// capacity, the compressed day, then classic mode alone.
func (c *BenchCmd) compareOnce(ctx context.Context, a *App) ([]compareScenario, error) {
	boot := c.Boot
	if boot == 0 {
		boot = -1 // none
	}
	base := simulate.CompareOptions{Jobs: c.CompareJobs, Max: c.Max, RunnerBoot: boot, Spare: c.Spare, MaxSpares: c.MaxSpares, Seed: c.Seed,
		Timeout: c.Timeout}
	if a.cli.LogLevel != "" || a.cli.LogFormat != "" {
		base.Logger = a.Logger()
	}
	var out []compareScenario
	maxN := cmpMax(c.Max)
	type scenario struct {
		name    string
		jobs    int
		gap     time.Duration
		day     time.Duration
		minIdle int
	}
	cases := []scenario{{"backlog", c.CompareJobs, 0, 0, 0}, {"backlog, warm start (min idle = max)", c.CompareJobs, 0, 0, maxN},
		{"below capacity", c.CompareJobs, c.Gap, 0, 0}}
	if c.Day > 0 {
		cases = append(cases, scenario{"a working day", c.DayJobs, 0, c.Day, 0})
	}
	for _, sc := range cases {
		opts := base
		opts.Jobs, opts.Gap, opts.Day, opts.MinIdle = sc.jobs, sc.gap, sc.day, sc.minIdle
		if sc.day > 0 {
			opts.Timeout = max(c.Timeout, sc.day+2*time.Minute) // its arrivals alone take --day
		}
		fmt.Fprintf(a.Stdout, "bench --compare: %s: %d jobs, max %d, runner boot %s ...\n", sc.name, sc.jobs, maxN, c.Boot)
		rep, err := compareCase(ctx, opts)
		printCompare(a.Stdout, sc.name, rep)
		if err != nil {
			return out, err
		}
		out = append(out, compareScenario{Name: sc.name, Report: rep})
	}
	// Classic mode has no baseline: the manager alone, jobs below capacity.
	opts := base
	opts.Gap, opts.Classic, opts.Webhooks = max(c.Gap, 3*time.Second), true, c.Webhooks
	name := "classic, below capacity"
	if c.Webhooks {
		name += ", with webhooks"
	}
	fmt.Fprintf(a.Stdout, "bench --compare: %s: %d jobs every %s, the default demand poll ...\n", name, c.CompareJobs, opts.Gap)
	rep, err := compareCase(ctx, opts)
	printClassic(a.Stdout, name, rep)
	if err != nil {
		return out, err
	}
	return append(out, compareScenario{Name: name, Report: rep}), nil
}

func printCompare(w io.Writer, name string, r simulate.CompareReport) {
	m, b, x := r.Manager, r.Baseline, r.Ratios
	spares := fmt.Sprintf("the manager keeps up to %d warm spares", r.Spare)
	if r.SpareAuto {
		spares = fmt.Sprintf("the manager's warm spares sized by the day (its default), up to %d", r.Spare)
	}
	arrivals := "arrivals every " + simulate.FormatMS(r.GapMS)
	if r.DayMS > 0 {
		arrivals = "arrivals over a day of " + simulate.FormatMS(r.DayMS)
	}
	fmt.Fprintf(w, "\n%s: %d jobs of %s–%s, max %d, min idle %d, %s, runner boot %s; %s\n",
		name, r.Jobs, simulate.FormatMS(r.MinDurationMS), simulate.FormatMS(r.MaxDurationMS), r.Max, r.MinIdle, arrivals, simulate.FormatMS(r.RunnerBootMS), spares)
	fmt.Fprintf(w, "  %-26s %16s %16s %8s\n", "", "runner-manager", "baseline", "ratio")
	row := func(label, mv, bv string, ratio float64) {
		fmt.Fprintf(w, "  %-26s %16s %16s %8.2f\n", label, mv, bv, ratio)
	}
	row("makespan", fmt.Sprintf("%.2fs", m.MakespanSeconds), fmt.Sprintf("%.2fs", b.MakespanSeconds), x.Makespan)
	row("ideal (Σ durations / max)", fmt.Sprintf("%.2fs", m.IdealSeconds), fmt.Sprintf("%.2fs", b.IdealSeconds), ratioOf(m.IdealSeconds, b.IdealSeconds))
	row("efficiency", fmt.Sprintf("%.3f", m.Efficiency), fmt.Sprintf("%.3f", b.Efficiency), x.Efficiency)
	row("best in queue order", fmt.Sprintf("%.2fs", m.ListSeconds), fmt.Sprintf("%.2fs", b.ListSeconds), ratioOf(m.ListSeconds, b.ListSeconds))
	row("  makespan's share of it", fmt.Sprintf("%.3f", m.ListEfficiency), fmt.Sprintf("%.3f", b.ListEfficiency), ratioOf(m.ListEfficiency, b.ListEfficiency))
	row("runners at first job", fmt.Sprint(m.Ready), fmt.Sprint(b.Ready), 0)
	row("  reachable efficiency", fmt.Sprintf("%.3f", m.ReachableEfficiency), fmt.Sprintf("%.3f", b.ReachableEfficiency), ratioOf(m.ReachableEfficiency, b.ReachableEfficiency))
	row("wait p50", simulate.FormatMS(m.Wait.P50), simulate.FormatMS(b.Wait.P50), x.WaitP50)
	row("wait p95", simulate.FormatMS(m.Wait.P95), simulate.FormatMS(b.Wait.P95), x.WaitP95)
	row("GitHub calls per job", fmt.Sprintf("%.2f", m.CallsPerJob), fmt.Sprintf("%.2f", b.CallsPerJob), x.CallsPerJob)
	row("  REST charged", fmt.Sprint(m.RESTCharged), fmt.Sprint(b.RESTCharged), ratioOf(float64(m.RESTCharged), float64(b.RESTCharged)))
	row("  scale-set service", fmt.Sprint(m.ScaleSet), fmt.Sprint(b.ScaleSet), ratioOf(float64(m.ScaleSet), float64(b.ScaleSet)))
	row("runners' peak memory", bytesize.Format(m.PeakRunnerRSSBytes), bytesize.Format(b.PeakRunnerRSSBytes), x.PeakMemory)
	row("peak runners / jobs", fmt.Sprintf("%d / %d", m.PeakRunners, m.PeakJobs), fmt.Sprintf("%d / %d", b.PeakRunners, b.PeakJobs), 0)
	row("runners launched", fmt.Sprint(m.RunnersLaunch), fmt.Sprint(b.RunnersLaunch), ratioOf(float64(m.RunnersLaunch), float64(b.RunnersLaunch)))
	row("jobs served", fmt.Sprintf("%d of %d", m.Served, m.Jobs), fmt.Sprintf("%d of %d", b.Served, b.Jobs), 0)
	if m.BootSeconds > 0 {
		fmt.Fprintf(w, "  the manager measured a boot of %.2fs\n", m.BootSeconds)
	}
}

func printClassic(w io.Writer, name string, r simulate.CompareReport) {
	m := r.Manager
	fmt.Fprintf(w, "\n%s: %d jobs of %s–%s, max %d, arrivals every %s, runner boot %s\n",
		name, r.Jobs, simulate.FormatMS(r.MinDurationMS), simulate.FormatMS(r.MaxDurationMS), r.Max, simulate.FormatMS(r.GapMS), simulate.FormatMS(r.RunnerBootMS))
	fmt.Fprintf(w, "  queue → runner started:   p50 %s, p95 %s, max %s\n", simulate.FormatMS(m.RunnerStart.P50), simulate.FormatMS(m.RunnerStart.P95), simulate.FormatMS(m.RunnerStart.Max))
	fmt.Fprintf(w, "  queue → job started:      p50 %s, p95 %s\n", simulate.FormatMS(m.Wait.P50), simulate.FormatMS(m.Wait.P95))
	fmt.Fprintf(w, "  REST per job:             %.2f charged (%d of %d requests)\n", float64(m.RESTCharged)/float64(max(m.Served, 1)), m.RESTCharged, m.REST)
	fmt.Fprintf(w, "  makespan %.2fs, efficiency %.3f, jobs served %d of %d\n", m.MakespanSeconds, m.Efficiency, m.Served, m.Jobs)
}

func ratioOf(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

func cmpMax(n int) int {
	if n <= 0 {
		return 4 // CompareOptions' default
	}
	return n
}
