package simulate

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// WarmGoal is what a warm run's setup may take of its repository's first
// (cold) run's: 15 %.
const WarmGoal = 0.15

// WarmOptions is the warm-jobs case: Repos repositories, each running
// Runs CI-shaped jobs one after another, on two sides at once in one
// daemon: one policy per repository as the manager runs it by default,
// and one per repository with Policy.Cold.
type WarmOptions struct {
	// Repos and Runs (default 2 and 3).
	Repos, Runs int
	// CI is the job's shape (fakegithub.CIJob's defaults: about 40 MB to
	// fetch cold); its Commit is set per run, r1, r2, …
	CI fakegithub.CIJob
	// Changed is how many of the repository's files each new commit
	// changes (default 5 of 100).
	Changed int
	// Rate is the download rate in bytes per second (default
	// fakegithub.DefaultDownloadRate, a home uplink's; negative: loopback's).
	Rate int64
	// RunnerBoot is the fake runner's start-up (0: none; the case measures
	// the job's setup, not the wait for a runner).
	RunnerBoot       time.Duration
	RunnerExecutable string
	Logger           *slog.Logger
	// Timeout bounds the case (default 10 minutes).
	Timeout time.Duration
}

func (o *WarmOptions) setDefaults() {
	if o.Repos <= 0 {
		o.Repos = 2
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Changed <= 0 {
		o.Changed = 5
	}
	if o.Rate == 0 {
		o.Rate = fakegithub.DefaultDownloadRate
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Timeout <= 0 {
		o.Timeout = 10 * time.Minute
	}
}

// WarmReport is the case's outcome, side by side.
type WarmReport struct {
	Repos, Runs int
	// RateBytesPerSecond is the download rate the content was sent at.
	RateBytesPerSecond int64 `json:"rate_bytes_per_second"`
	Goal               float64
	Sides              []WarmSide
}

// WarmSide is one side: the manager's default, or Policy.Cold.
type WarmSide struct {
	Name string
	Cold bool
	// Repos are its repositories' runs.
	Repos []WarmRepo
	// Worst is the largest later run's setup over its first's, over the
	// repositories.
	Worst float64
}

// WarmRepo is one repository's runs on one side.
type WarmRepo struct {
	Repo   string
	Policy string
	Runs   []WarmRun
	// Ratios are each run's setup over the first run's (the first's is 1).
	Ratios []float64
}

// WarmRun is one job's setup.
type WarmRun struct {
	Job                   int64
	Commit, Result, Error string
	SetupMS               int64 `json:"setup_ms"`
	// Fetched is the bytes the setup fetched over HTTP.
	Fetched              int64
	Checkout, Tool, Deps WarmPhase
}

// WarmPhase is one phase of a run's setup.
type WarmPhase struct {
	MS int64 `json:"ms"`
	// Fetched is the bytes it fetched; Objects of Total the files it
	// fetched of those it needed; Warm, none.
	Fetched        int64
	Objects, Total int
	Warm           bool
}

func warmPhase(p fakegithub.PhaseReport) WarmPhase {
	return WarmPhase{MS: p.DurationMS, Fetched: p.Fetched, Objects: p.Objects, Total: p.Total, Warm: p.Warm}
}

// RunWarm runs the warm-jobs case: one daemon, the native launcher, a
// fake GitHub serving the repositories' content at Rate; each
// repository's runs on each side go one after another, the sides and
// repositories at once. Each runner has the native launcher's fresh
// HOME, never the user's (npm writes ~/.npm without npm_config_cache).
func RunWarm(ctx context.Context, o WarmOptions) (WarmReport, error) {
	o.setDefaults()
	ctx, cancel := context.WithTimeoutCause(ctx, o.Timeout, fmt.Errorf("%w: the warm case's timeout of %s passed", context.DeadlineExceeded, o.Timeout))
	defer cancel()
	rep := WarmReport{Repos: o.Repos, Runs: o.Runs, RateBytesPerSecond: max(o.Rate, 0), Goal: WarmGoal}
	type stream struct {
		side, repo int
		policy     string
	}
	var streams []stream
	var policies []worldPolicy
	fakeOpts := []fakegithub.Option{fakegithub.WithRunnerBootDelay(o.RunnerBoot), fakegithub.WithDownloadRate(o.Rate)}
	rep.Sides = []WarmSide{{Name: "warm (the default)"}, {Name: "cold (policy cold = true)", Cold: true}}
	for side := range rep.Sides {
		for r := range o.Repos {
			repo := fmt.Sprintf("bench/app-%d", r+1)
			name := fmt.Sprintf("%s-app-%d", map[bool]string{false: "warm", true: "cold"}[rep.Sides[side].Cold], r+1)
			policies = append(policies, worldPolicy{Name: name, Max: 1, Estimate: 256 << 20, Repo: repo, Cold: rep.Sides[side].Cold})
			streams = append(streams, stream{side: side, repo: r, policy: name})
			rep.Sides[side].Repos = append(rep.Sides[side].Repos, WarmRepo{Repo: repo, Policy: name})
			if side == 0 {
				fakeOpts = append(fakeOpts, fakegithub.WithRepo(repo))
			}
		}
	}

	s := &Sim{runDone: make(chan error, 1), refusals: map[string]int{}}
	defer s.Close()
	w := world{TempPrefix: "runner-manager-warm-", RunnerExecutable: o.RunnerExecutable, Name: "bench-warm",
		Logger: o.Logger, HostMemory: 16 << 30, FakeOptions: fakeOpts, Policies: policies}
	var launcher *native.Launcher
	err := s.setUp(ctx, w, func(dataDir string) daemon.Config {
		launcher = native.NewLauncher(dataDir, native.WithLogger(o.Logger))
		cfg := daemon.Config{
			Launchers: map[rm.Backend]rm.Launcher{rm.DefaultBackend: launcher},
			Admission: &reconcile.Admission{Memory: FixedMemory{Total: 16 << 30}, Reserve: 1 << 30, DiskPath: dataDir},
			// The manager's default (the configuration file's): the cold
			// side's policies say cold themselves.
			Warm: daemon.Warm{Enabled: true},
		}
		cfg.Loop.ScaleDownAfter = 2 * time.Second
		return cfg
	})
	if launcher != nil {
		defer launcher.Close()
	}
	if err != nil {
		return rep, err
	}
	s.run(ctx)

	var mu sync.Mutex
	var wg sync.WaitGroup
	errs := make([]error, len(streams))
	for i, st := range streams {
		wg.Go(func() {
			wr := &rep.Sides[st.side].Repos[st.repo]
			for run := 1; run <= o.Runs; run++ {
				ci := o.CI
				ci.Commit, ci.Changed = fmt.Sprintf("r%d", run), o.Changed
				id := s.server.EnqueueJob(fakegithub.JobSpec{Repo: wr.Repo, Labels: []string{st.policy}, Name: fmt.Sprintf("ci run %d", run),
					Duration: 10 * time.Millisecond, CI: &ci})
				var rec fakegithub.JobRecord
				err := s.server.WaitFor(ctx, func() bool {
					r, ok := s.server.Job(id)
					rec = r
					return ok && r.Status == "completed"
				})
				if err != nil {
					errs[i] = fmt.Errorf("%s run %d: %w", st.policy, run, context.Cause(ctx))
					return
				}
				wrun := WarmRun{Job: id, Result: rec.Result, Commit: ci.Commit}
				if su := rec.Setup; su != nil {
					wrun.SetupMS, wrun.Fetched, wrun.Error = su.DurationMS, su.Fetched(), su.Error
					wrun.Checkout, wrun.Tool, wrun.Deps = warmPhase(su.Checkout), warmPhase(su.Tool), warmPhase(su.Deps)
				} else {
					wrun.Error = "the job reported no setup"
				}
				mu.Lock()
				wr.Runs = append(wr.Runs, wrun)
				mu.Unlock()
				if wrun.Error != "" || rec.Result != fakegithub.ResultSucceeded {
					errs[i] = fmt.Errorf("%s run %d: %s %s", st.policy, run, rec.Result, wrun.Error)
					return
				}
			}
		})
	}
	wg.Wait()
	for side := range rep.Sides {
		sd := &rep.Sides[side]
		for r := range sd.Repos {
			wr := &sd.Repos[r]
			for _, run := range wr.Runs {
				ratio := 0.0
				if first := wr.Runs[0].SetupMS; first > 0 {
					ratio = float64(run.SetupMS) / float64(first)
				}
				wr.Ratios = append(wr.Ratios, ratio)
			}
			for _, x := range wr.Ratios[min(1, len(wr.Ratios)):] {
				sd.Worst = max(sd.Worst, x)
			}
		}
	}
	for _, err := range errs {
		if err != nil {
			return rep, err
		}
	}
	return rep, nil
}

// WriteText prints the case side by side: each repository's setup per
// run and as a fraction of its first.
func (r WarmReport) WriteText(w io.Writer) {
	rate := "loopback's rate"
	if r.RateBytesPerSecond > 0 {
		rate = fmt.Sprintf("%.1f MB/s", float64(r.RateBytesPerSecond)/1e6)
	}
	fmt.Fprintf(w, "\nwarm jobs: %d repositories × %d runs of a CI-shaped job (checkout, toolchain, npm dependencies), downloads at %s; goal: runs 2+ ≤ %.0f %% of run 1's setup\n",
		r.Repos, r.Runs, rate, r.Goal*100)
	for _, sd := range r.Sides {
		fmt.Fprintf(w, "  %s\n", sd.Name)
		for _, wr := range sd.Repos {
			for i, run := range wr.Runs {
				fmt.Fprintf(w, "    %-12s run %d: setup %7s (%5.1f %%)  fetched %9s: checkout %d/%d, toolchain %d/%d, dependencies %d/%d files\n",
					wr.Repo, i+1, FormatMS(float64(run.SetupMS)), 100*wr.Ratios[i], formatBytes(run.Fetched),
					run.Checkout.Objects, run.Checkout.Total, run.Tool.Objects, run.Tool.Total, run.Deps.Objects, run.Deps.Total)
			}
		}
		verdict := "meets the goal"
		if sd.Worst > r.Goal {
			verdict = "misses the goal"
		}
		fmt.Fprintf(w, "    worst later run: %.1f %% of its first (%s)\n", 100*sd.Worst, verdict)
	}
}

func formatBytes(n int64) string {
	switch {
	case n >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	case n >= 1e3:
		return fmt.Sprintf("%.1f kB", float64(n)/1e3)
	}
	return fmt.Sprintf("%d B", n)
}
