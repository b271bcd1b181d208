// Command embed shows runner-manager used as a library: daemon.New and
// Run are the whole host `runner-manager run` is (journal, supervisor,
// scale-set demand, native launcher, meters, memory and disk admission, the
// local API), here against the fake GitHub of simulate/fakegithub so it needs
// no token. With a real GitHub, set daemon.Config's GitHub to
// github.Config{Token: ...} and point the policy at your repository.
//
// With -own the host is given parts of the embedder's own (own.go): a
// launcher wrapping backend/native's, in daemon.Config.Launchers, and a
// demand source, an in-process queue, through daemon.Config.Targets; its
// runners are still registered at GitHub, under labels.
//
//	go run ./examples/embed -jobs 3
//	go run ./examples/embed -jobs 3 -own
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
	"strconv"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
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
	own := fs.Bool("own", false, "a launcher and a demand source of this program's own (own.go)")
	verbose := fs.Bool("v", false, "log what the manager does")
	_ = fs.Parse(os.Args[1:])
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	if err := run(ctx, *jobs, *own, log, &syncWriter{w: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

// run serves jobs on a host of its own: the wiring an embedder writes.
func run(ctx context.Context, jobs int, own bool, log *slog.Logger, out io.Writer) error {
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
	cfg := daemon.Config{DataDir: dir, Logger: log, Drain: true, SampleEvery: 100 * time.Millisecond,
		GitHub: github.Config{WebURL: gh.URL(), APIURL: gh.APIURL(), Token: "ghp_embed"}}
	// One policy, 2 runners at once: scale set "embed" of acme/app (with
	// -own, runners labelled "embed").
	scope, _ := rm.Repository("acme/app")
	target, _ := rm.NewScaleSetTarget(scope, "", "embed")
	labels := []string{"embed"}
	var (
		mine *launcher
		q    *queue
	)
	if own {
		// The native backend's launcher is ours (the daemon closes only
		// the launchers it makes), and every policy's demand is the
		// queue's: the nil registrar keeps GitHub's, which registers the
		// runners under the policy's labels (a label target: its runners
		// take jobs by labels, as classic self-hosted runners do).
		n := native.NewLauncher(dir, native.WithLogger(log))
		defer n.Close()
		mine, q = newLauncher(n, out), newQueue()
		cfg.Launchers = map[rm.Backend]rm.Launcher{rm.DefaultBackend: mine}
		cfg.Targets = func(context.Context, rm.Policy) (rm.Registrar, rm.DemandSource, error) { return nil, q, nil }
		target, _ = rm.NewLabelTarget(scope, "", labels)
		labels = []string{"self-hosted", "embed"}
	}
	d, err := daemon.New(cfg)
	if err != nil {
		return err
	}
	defer d.Close()
	policy := rm.Policy{ID: rm.NewPolicyID(), Name: "embed", Host: d.Host().ID, Target: target, Max: 2,
		RunnerDir: filepath.Join(dir, "runner")}
	if err := d.Store().InsertPolicy(ctx, policy); err != nil {
		return err
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- d.Run(runCtx) }()
	for i := range jobs {
		gh.EnqueueJob(fakegithub.JobSpec{Repo: "acme/app", Labels: labels, Name: fmt.Sprintf("build-%d", i+1),
			Duration: 500 * time.Millisecond, MemoryBytes: 32 << 20})
	}
	var werr error
	if q != nil {
		werr = feed(ctx, gh, q, jobs)
	} else {
		werr = gh.WaitJobsCompleted(ctx)
	}
	stop() // with Drain, Run returns once every runner has ended
	if err := <-done; err != nil {
		return err
	}
	if werr != nil {
		return fmt.Errorf("jobs not done: %w", werr)
	}
	if err := report(ctx, d, policy, jobs, out); err != nil {
		return err
	}
	if own {
		return reportOwn(ctx, d, policy, mine, q, gh, out)
	}
	return nil
}

// feed keeps the queue up to date as an in-house system that hands jobs
// to GitHub would: the jobs not yet completed, and which runner started
// and completed which job. It reads the fake GitHub's records; a real
// system knows its own jobs (or reads GitHub's workflow_job webhooks).
func feed(ctx context.Context, gh *fakegithub.Server, q *queue, jobs int) error {
	started, completed := map[int64]bool{}, map[int64]bool{}
	for first := true; ; first = false {
		var events []rm.JobEvent
		for _, j := range gh.Jobs() {
			ev := rm.JobEvent{JobID: strconv.FormatInt(j.ID, 10), JobNumber: j.ID, RunID: j.RunID, RunnerID: j.RunnerID,
				RunnerName: j.RunnerName, Workflow: j.Workflow, DisplayName: j.Name, Labels: j.Labels, QueuedAt: j.QueuedAt}
			if !started[j.ID] && j.RunnerName != "" && !j.StartedAt.IsZero() {
				started[j.ID] = true
				ev.Kind, ev.At = rm.JobStarted, j.StartedAt
				events = append(events, ev)
			}
			if !completed[j.ID] && started[j.ID] && j.Status == "completed" {
				completed[j.ID] = true
				ev.Kind, ev.At, ev.Result = rm.JobCompleted, j.CompletedAt, j.Result
				events = append(events, ev)
			}
		}
		if first || len(events) > 0 {
			q.Set(jobs-len(completed), events...)
		}
		if len(completed) == jobs {
			return nil
		}
		seen := len(started) + len(completed)
		if err := gh.WaitFor(ctx, func() bool { return progress(gh) != seen }); err != nil {
			return err
		}
	}
}

// progress counts the jobs started and the jobs completed.
func progress(gh *fakegithub.Server) int {
	n := 0
	for _, j := range gh.Jobs() {
		if j.RunnerName != "" && !j.StartedAt.IsZero() {
			n++
		}
		if j.Status == "completed" {
			n++
		}
	}
	return n
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

// reportOwn says what went through the parts of this program's own: the
// attempts its launcher started, the figures its queue told, and GitHub's
// job polls (none: the queue was the demand).
func reportOwn(ctx context.Context, d *daemon.Daemon, p rm.Policy, l *launcher, q *queue, gh *fakegithub.Server, out io.Writer) error {
	attempts, err := d.Store().Attempts(ctx, store.AttemptFilter{Policy: p.ID})
	if err != nil {
		return err
	}
	mine := 0
	for _, a := range attempts {
		if l.Launched(a.ID) {
			mine++
		}
	}
	fmt.Fprintf(out, "own launcher: %d of %d attempts; own queue: %d figures told; GitHub's job polls: %d\n",
		mine, len(attempts), q.Told(), gh.Calls(fakegithub.RouteRepoRuns))
	return nil
}

// syncWriter serializes the lines of the report and of the launcher.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
