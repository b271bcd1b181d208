// Command embed shows runner-manager used as a library: daemon.New and
// Run are the whole host `runner-manager run` is (journal, supervisor,
// scale-set demand, native launcher, meters, memory and disk admission, the
// local API), here against the fake GitHub of github/fakegithub so it needs
// no token. With a real GitHub, set daemon.Config's GitHub to
// github.Config{Token: ...} and point the policy at your repository.
//
//	go run ./examples/embed -jobs 3
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/github/fakegithub/fakerunner"
	"github.com/runner-manager/runner-manager/reconcile/daemon"
	"github.com/runner-manager/runner-manager/store"
)

func main() {
	// This program is also the fake runner the host starts.
	if filepath.Base(os.Args[0]) == fakegithub.ListenerName() {
		os.Exit(fakerunner.Main(os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	fs := flag.NewFlagSet("embed", flag.ExitOnError)
	jobs := fs.Int("jobs", 3, "jobs to run")
	verbose := fs.Bool("v", false, "log what the manager does")
	_ = fs.Parse(os.Args[1:])
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := run(ctx, *jobs, log, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// run serves jobs on a host of its own: the wiring an embedder writes.
func run(ctx context.Context, jobs int, log *slog.Logger, out io.Writer) error {
	dir, err := os.MkdirTemp("", "embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// GitHub: a fake one that knows one repository and one token; the
	// installed runner: this program as bin/Runner.Listener.
	gh := fakegithub.NewServer(fakegithub.WithToken("ghp_embed"), fakegithub.WithRepo("acme/app"))
	defer gh.Close()
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := fakegithub.LayoutRunnerDir(filepath.Join(dir, "runner"), self); err != nil {
		return err
	}

	// The host, all defaults but GitHub; Drain lets running jobs finish, and
	// the meters sample often enough to see these short jobs.
	d, err := daemon.New(daemon.Config{DataDir: dir, Logger: log, Drain: true, SampleEvery: 100 * time.Millisecond,
		GitHub: github.Config{WebURL: gh.URL(), APIURL: gh.APIURL(), Token: "ghp_embed"}})
	if err != nil {
		return err
	}
	defer d.Close()
	// One policy: scale set "embed" of acme/app, 2 runners at once.
	scope, _ := rm.Repository("acme/app")
	target, _ := rm.NewScaleSetTarget(scope, "", "embed")
	policy := rm.Policy{ID: rm.NewPolicyID(), Name: "embed", Host: d.Host().ID, Target: target, Max: 2,
		RunnerDir: filepath.Join(dir, "runner")}
	if err := d.Store().InsertPolicy(ctx, policy); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	for i := range jobs {
		gh.EnqueueJob(fakegithub.JobSpec{Repo: "acme/app", Labels: []string{"embed"}, Name: fmt.Sprintf("build-%d", i+1),
			Duration: 500 * time.Millisecond, MemoryBytes: 32 << 20})
	}
	werr := gh.WaitJobsCompleted(ctx)
	stop() // with Drain, Run returns once every runner has ended
	if err := <-done; err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("jobs not done: %w", werr)
	}
	return report(ctx, d, policy, jobs, out)
}

// report prints the policy's attempts, oldest first, with the peak memory
// the meters saw, and the figures admission decided by.
func report(ctx context.Context, d *daemon.Daemon, p rm.Policy, jobs int, out io.Writer) error {
	attempts, err := d.Store().Attempts(ctx, store.AttemptFilter{Policy: p.ID})
	if err != nil {
		return err
	}
	for i := len(attempts) - 1; i >= 0; i-- {
		a := attempts[i]
		fmt.Fprintf(out, "%s  %-9s %-14s job %q  peak %d MiB\n", a.RunnerName, a.State, a.Outcome.Kind, a.Job.Name, a.Usage.PeakRSSBytes>>20)
	}
	m := d.Status().Memory
	fmt.Fprintf(out, "admission: host memory %d MiB, reserve %d MiB; disk free %d GiB, floor %d GiB\n",
		m.TotalBytes>>20, m.ReserveBytes>>20, m.DiskFreeBytes>>30, m.DiskFloorBytes>>30)
	fmt.Fprintf(out, "%d jobs, %d attempts\n", jobs, len(attempts))
	return nil
}
