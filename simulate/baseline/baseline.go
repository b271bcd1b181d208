// Package baseline is a scale-set autoscaler written the way GitHub's
// actions/scaleset README and its examples/dockerscaleset prescribe, for
// the bench to run beside the manager: create (or reuse) the scale set,
// open a message session, run the scaleset listener with a fixed max, and
// on each desired count start one runner per missing runner (a JIT
// configuration, then the runner), forgetting a runner when its job
// completes. No admission, no spares, no journal; its runners are real
// processes (the fake runner under the name Runner.Listener), one root
// each, so that what it costs can be measured the same way as the
// manager's.
package baseline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/actions/scaleset"
	"github.com/actions/scaleset/listener"
)

// Config is one baseline scaler.
type Config struct {
	// Client talks to the scale-set service (scaleset.NewClientWith…).
	Client *scaleset.Client
	// ScaleSet is the scale set's name (made if missing), RunnerGroupID its
	// group (default 1, the Default group).
	ScaleSet      string
	RunnerGroupID int
	// MinRunners and MaxRunners as in the example: min+desired, at most max.
	MinRunners, MaxRunners int
	// Listener is the runner's listener program (bin/Runner.Listener of an
	// install); each runner gets a root of its own under WorkDir holding a
	// hard link to it.
	Listener string
	WorkDir  string
	// Owner names the message session (the example uses the hostname).
	Owner  string
	Logger *slog.Logger
}

// Runner is one runner the scaler started.
type Runner struct {
	Name    string
	PID     int
	Started time.Time
	Exited  time.Time
}

// Scaler implements listener.Scaler the way the example's does: the
// runners it started and has not seen finish count toward the desired
// count.
type Scaler struct {
	cfg        Config
	scaleSetID int

	mu      sync.Mutex
	live    map[string]*exec.Cmd // started, job not completed
	runners []*Runner
	byName  map[string]*Runner
	wg      sync.WaitGroup
	err     error
}

var _ listener.Scaler = (*Scaler)(nil)

// HandleDesiredRunnerCount starts runners up to min(max, min + count).
func (s *Scaler) HandleDesiredRunnerCount(ctx context.Context, count int) (int, error) {
	s.mu.Lock()
	current := len(s.live)
	s.mu.Unlock()
	target := min(s.cfg.MaxRunners, s.cfg.MinRunners+count)
	for range max(target-current, 0) {
		if err := s.startRunner(ctx); err != nil {
			return 0, fmt.Errorf("failed to start runner: %w", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.live), nil
}

// HandleJobStarted notes nothing: the example only logs it.
func (s *Scaler) HandleJobStarted(ctx context.Context, m *scaleset.JobStarted) error { return nil }

// HandleJobCompleted forgets the job's runner (an ephemeral runner exits
// after its job; the example removes its container here).
func (s *Scaler) HandleJobCompleted(ctx context.Context, m *scaleset.JobCompleted) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.live, m.RunnerName)
	return nil
}

func (s *Scaler) startRunner(ctx context.Context) error {
	s.mu.Lock()
	name := fmt.Sprintf("baseline-%d", len(s.runners)+1)
	s.mu.Unlock()
	jit, err := s.cfg.Client.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: name}, s.scaleSetID)
	if err != nil {
		return fmt.Errorf("failed to generate JIT config: %w", err)
	}
	root := filepath.Join(s.cfg.WorkDir, name)
	bin := filepath.Join(root, "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		return err
	}
	exe := filepath.Join(bin, filepath.Base(s.cfg.Listener))
	if err := os.Link(s.cfg.Listener, exe); err != nil {
		return fmt.Errorf("lay out the runner's root: %w", err)
	}
	cmd := exec.Command(exe, "run")
	cmd.Dir = root
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + root, "ACTIONS_RUNNER_INPUT_JITCONFIG=" + jit.EncodedJITConfig}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("failed to start runner: %w", err)
	}
	r := &Runner{Name: name, PID: cmd.Process.Pid, Started: time.Now()}
	s.mu.Lock()
	s.live[name] = cmd
	s.runners = append(s.runners, r)
	s.byName[name] = r
	s.mu.Unlock()
	s.wg.Go(func() {
		_ = cmd.Wait()
		s.mu.Lock()
		r.Exited = time.Now()
		s.mu.Unlock()
	})
	return nil
}

// Runners returns what the scaler started so far.
func (s *Scaler) Runners() []Runner {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Runner, len(s.runners))
	for i, r := range s.runners {
		out[i] = *r
	}
	return out
}

// shutdown stops the runners still running and waits for them.
func (s *Scaler) shutdown() {
	s.mu.Lock()
	for _, cmd := range s.live {
		_ = cmd.Process.Signal(os.Interrupt)
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		s.mu.Lock()
		for _, r := range s.runners {
			if r.Exited.IsZero() {
				if p, err := os.FindProcess(r.PID); err == nil {
					_ = p.Kill()
				}
			}
		}
		s.mu.Unlock()
		s.wg.Wait()
	}
}

// Started is a running baseline: Run's scaler, ready once its listener's
// session is open.
type Started struct {
	*Scaler
	ScaleSetID int
	done       chan error
	cancel     context.CancelFunc
}

// Start creates the scale set (or reuses one of that name), opens the
// message session and runs the listener until Stop.
func Start(ctx context.Context, cfg Config) (*Started, error) {
	if cfg.Client == nil || cfg.ScaleSet == "" || cfg.Listener == "" || cfg.WorkDir == "" || cfg.MaxRunners < 1 {
		return nil, errors.New("baseline: a client, a scale set name, a listener program, a work directory and max runners ≥ 1 are needed")
	}
	if cfg.RunnerGroupID == 0 {
		cfg.RunnerGroupID = 1
	}
	if cfg.Owner == "" {
		cfg.Owner, _ = os.Hostname()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	ss, err := cfg.Client.GetRunnerScaleSet(ctx, cfg.RunnerGroupID, cfg.ScaleSet)
	if err != nil || ss == nil {
		ss, err = cfg.Client.CreateRunnerScaleSet(ctx, &scaleset.RunnerScaleSet{
			Name: cfg.ScaleSet, RunnerGroupID: cfg.RunnerGroupID, RunnerSetting: scaleset.RunnerSetting{DisableUpdate: true},
		})
		if err != nil {
			return nil, fmt.Errorf("failed to create runner scale set: %w", err)
		}
	}
	session, err := cfg.Client.MessageSessionClient(ctx, ss.ID, cfg.Owner)
	if err != nil {
		return nil, fmt.Errorf("failed to create message session client: %w", err)
	}
	l, err := listener.New(session, listener.Config{ScaleSetID: ss.ID, MaxRunners: cfg.MaxRunners, Logger: cfg.Logger})
	if err != nil {
		_ = session.Close(context.WithoutCancel(ctx))
		return nil, fmt.Errorf("failed to create listener: %w", err)
	}
	sc := &Scaler{cfg: cfg, scaleSetID: ss.ID, live: map[string]*exec.Cmd{}, byName: map[string]*Runner{}}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	st := &Started{Scaler: sc, ScaleSetID: ss.ID, done: make(chan error, 1), cancel: cancel}
	go func() {
		err := l.Run(runCtx, sc)
		sc.shutdown()
		_ = session.Close(context.WithoutCancel(ctx))
		if errors.Is(err, context.Canceled) {
			err = nil
		}
		st.done <- err
	}()
	return st, nil
}

// Stop ends the listener, stops the runners left and closes the session.
func (s *Started) Stop() error {
	s.cancel()
	return <-s.done
}
