// Command embed shows runner-manager used as a library: a journal, a host,
// a policy and a reconcile.Supervisor, with a launcher of its own (a few
// dozen lines, below) instead of platform.NativeLauncher. It runs against
// the fake GitHub of github/fakegithub so it needs no token; with a real
// GitHub, build the client with github.New(github.Config{Token: ...}) and
// point a policy at your repository.
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
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/github/fakegithub/fakerunner"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

func main() {
	// This program is also the fake runner its launcher starts.
	if filepath.Base(os.Args[0]) == fakegithub.ListenerName() {
		os.Exit(fakerunner.Main(os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, out io.Writer) error {
	fs := flag.NewFlagSet("embed", flag.ContinueOnError)
	jobs := fs.Int("jobs", 3, "jobs to run")
	verbose := fs.Bool("v", false, "log what the manager does")
	if err := fs.Parse(args); err != nil {
		return err
	}
	log := slog.New(slog.DiscardHandler)
	if *verbose {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
	}
	dir, err := os.MkdirTemp("", "embed-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// GitHub: a fake one that knows one repository and one token.
	gh := fakegithub.NewServer(fakegithub.WithToken("ghp_embed"), fakegithub.WithRepo("acme/app"), fakegithub.WithPollTimeout(time.Second))
	defer gh.Close()
	client, err := github.New(github.Config{WebURL: gh.URL(), APIURL: gh.APIURL(), Token: "ghp_embed"})
	if err != nil {
		return err
	}

	// The journal, this host and one policy: scale set "embed", 2 at once.
	st, err := store.OpenSQLite(filepath.Join(dir, "journal.db"))
	if err != nil {
		return err
	}
	defer st.Close()
	host := rm.Host{ID: rm.NewHostID(), Name: "embed-host", OS: "linux", SeenAt: time.Now()}
	scope, _ := rm.Repository("acme/app")
	target, err := rm.NewScaleSetTarget(scope, "", "embed")
	if err != nil {
		return err
	}
	// The installed runner: this program as bin/Runner.Listener.
	self, err := os.Executable()
	if err != nil {
		return err
	}
	runnerDir := filepath.Join(dir, "runner")
	if err := fakegithub.LayoutRunnerDir(runnerDir, self); err != nil {
		return err
	}
	policy := rm.Policy{ID: rm.NewPolicyID(), Name: "embed", Host: host.ID, Target: target, Max: 2,
		RunnerDir: runnerDir, CreatedAt: time.Now(), UpdatedAt: time.Now()}
	if err := st.PutHost(ctx, host); err != nil {
		return err
	}
	if err := st.InsertPolicy(ctx, policy); err != nil {
		return err
	}

	sup, err := reconcile.NewSupervisor(reconcile.SupervisorConfig{
		Store:    st,
		Host:     host,
		Launcher: &tinyLauncher{root: filepath.Join(dir, "attempts")},
		Targets: func(ctx context.Context, p rm.Policy) (reconcile.Target, error) {
			return github.NewScaleSetTarget(ctx, client, p.Target, github.ScaleSetOptions{
				Owner: host.Name, DisableUpdate: true, NamePrefix: rm.RunnerNamePrefix(host.ID), Logger: log})
		},
		Logger:  log,
		DataDir: dir,
	})
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sup.Run(runCtx) }()

	for i := range *jobs {
		gh.EnqueueJob(fakegithub.JobSpec{Repo: "acme/app", Labels: []string{"embed"}, Name: fmt.Sprintf("build-%d", i+1),
			Duration: 300 * time.Millisecond, MemoryBytes: 8 << 20})
	}
	waitCtx, waitCancel := context.WithTimeout(ctx, 2*time.Minute)
	defer waitCancel()
	err = gh.WaitFor(waitCtx, func() bool {
		for _, j := range gh.Jobs() {
			if j.Status != "completed" {
				return false
			}
		}
		return true
	})
	// Give the last runners' attempts a moment to be concluded.
	for range 50 {
		if live, _ := st.ActiveAttempts(ctx, policy.ID); len(live) == 0 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	if rerr := <-done; rerr != nil {
		return rerr
	}
	if err != nil {
		return fmt.Errorf("jobs not done: %w", err)
	}
	attempts, err := st.Attempts(ctx, store.AttemptFilter{Policy: policy.ID})
	if err != nil {
		return err
	}
	for i := len(attempts) - 1; i >= 0; i-- {
		a := attempts[i]
		fmt.Fprintf(out, "%s  %-9s %-14s job %q\n", a.RunnerName, a.State, a.Outcome.Kind, a.Job.Name)
	}
	fmt.Fprintf(out, "%d jobs, %d attempts\n", *jobs, len(attempts))
	return nil
}

// tinyLauncher is the smallest launcher the reconcile loop accepts: each
// attempt gets a root directory whose bin/ holds a hard link to the
// installed listener (the runner writes its JIT files next to bin/, so
// roots must not be shared), and the listener gets the JIT configuration in
// its environment. It does not re-adopt runners after a restart and does
// not stop process trees: platform.NativeLauncher does both.
type tinyLauncher struct{ root string }

var _ reconcile.Launcher = (*tinyLauncher)(nil)

func (l *tinyLauncher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	root := filepath.Join(l.root, spec.Attempt.String())
	listener := filepath.Join(root, "bin", fakegithub.ListenerName())
	if err := os.MkdirAll(filepath.Dir(listener), 0o700); err != nil {
		return nil, err
	}
	if err := os.Link(filepath.Join(spec.RunnerDir, "bin", fakegithub.ListenerName()), listener); err != nil {
		return nil, err
	}
	cmd := exec.Command(listener, "run")
	cmd.Dir = root
	// The allow-list, never a copy of this program's environment: a job
	// reads every variable its runner has.
	cmd.Env = platform.RunnerEnviron(spec)
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &tinyProcess{cmd: cmd, done: make(chan struct{}), code: -1}
	p.start, _ = platform.StartTime(cmd.Process.Pid)
	go func() {
		_ = cmd.Wait()
		p.mu.Lock()
		p.code = cmd.ProcessState.ExitCode()
		p.mu.Unlock()
		close(p.done)
	}()
	return p, nil
}

func (l *tinyLauncher) Adopt(rm.AttemptID, int, uint64) (rm.Process, error) {
	return nil, rm.ErrProcessGone // runners do not outlive this program
}

// RanJob is false: this launcher reads no trace of the runner's jobs, so
// the pass takes GitHub's word on them.
func (l *tinyLauncher) RanJob(rm.AttemptID) bool { return false }

func (l *tinyLauncher) Cleanup(a rm.AttemptID, failed bool) error {
	return os.RemoveAll(filepath.Join(l.root, a.String()))
}

type tinyProcess struct {
	cmd   *exec.Cmd
	start uint64
	done  chan struct{}
	mu    sync.Mutex
	code  int
}

func (p *tinyProcess) PID() int              { return p.cmd.Process.Pid }
func (p *tinyProcess) Start() uint64         { return p.start }
func (p *tinyProcess) Done() <-chan struct{} { return p.done }

func (p *tinyProcess) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

func (p *tinyProcess) Stop(ctx context.Context, grace time.Duration) error {
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
		return nil
	case <-time.After(grace):
		_ = p.cmd.Process.Kill()
	case <-ctx.Done():
		_ = p.cmd.Process.Kill()
		return ctx.Err()
	}
	<-p.done
	return nil
}
