package simulate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store"
)

// world is what the demo and the bench set up alike before they differ:
// a data directory, the fake runner installed in it, the fake GitHub, this
// host, the daemon over them and the policies.
type world struct {
	DataDir          string // "" makes a temporary one, removed by Close
	TempPrefix       string // of the temporary data directory's name
	RunnerExecutable string // "" is this program
	Name             string // "demo" or "bench": the user agent and token
	Logger           *slog.Logger
	// HostMemory overrides the host's memory in its journal row (0 keeps
	// the real figure).
	HostMemory uint64
	Classic    bool
	Policies   []worldPolicy
	// FakeOptions are added to the fake GitHub's (a runner boot delay).
	FakeOptions []fakegithub.Option
	// Store is the daemon's journal; nil is the SQLite file in DataDir.
	Store store.Store
	// Webhooks has the daemon serve workflow_job webhooks on a loopback
	// port, which the fake GitHub is told to send to once it listens
	// (Sim.deliverWebhooks), as [webhook] listen does with GitHub.
	Webhooks bool
}

// worldPolicy is one policy to serve: a scale set (or label) named Name.
type worldPolicy struct {
	Name     string
	Max      int
	Estimate uint64
	Spare    int
	MinIdle  int
	// Repo is the repository it serves ("" is Repo); Cold turns its
	// workspace slots off.
	Repo string
	Cold bool
}

// setUp builds the world into s, with a daemon (the one the CLI's run
// is) over it as mk says for the data directory, timed quick so a
// simulated day fits in minutes. On error the caller closes s.
func (s *Sim) setUp(ctx context.Context, w world, mk func(dataDir string) daemon.Config) error {
	s.dataDir = w.DataDir
	if s.dataDir == "" {
		dir, err := os.MkdirTemp("", w.TempPrefix)
		if err != nil {
			return err
		}
		s.dataDir, s.tempDir = dir, true
	}
	runnerDir, err := installFakeRunner(s.dataDir, w.RunnerExecutable)
	if err != nil {
		return err
	}
	token := "ghp_" + w.Name + rm.NewAttemptID().String()
	// The fake GitHub's goroutines carry the label part=fake-github, so a
	// CPU profile (bench --cpu-profile; go tool pprof -tags) tells them
	// from the manager's.
	pprof.Do(ctx, pprof.Labels("part", "fake-github"), func(context.Context) {
		s.server = fakegithub.NewServer(append([]fakegithub.Option{fakegithub.WithToken(token), fakegithub.WithRepo(Repo),
			fakegithub.WithPollTimeout(2 * time.Second), fakegithub.WithLogger(w.Logger)}, w.FakeOptions...)...)
	})
	if s.host, err = daemon.LocalHost(s.dataDir); err != nil {
		return err
	}
	if w.HostMemory > 0 {
		s.host.MemoryBytes = w.HostMemory
	}
	cfg := mk(s.dataDir)
	if w.Webhooks {
		s.hookSecret = rm.NewAttemptID().String()
		cfg.Webhook = daemon.Webhook{Listen: "127.0.0.1:0", Secret: []byte(s.hookSecret)}
	}
	cfg.DataDir, cfg.Host, cfg.Logger = s.dataDir, s.host, w.Logger
	if w.Store != nil {
		cfg.Store = w.Store
	}
	cfg.GitHub = github.Config{WebURL: s.server.URL(), APIURL: s.server.APIURL(), Token: token,
		UserAgent: "runner-manager-" + w.Name, Logger: w.Logger}
	cfg.RefreshEvery, cfg.SampleEvery = time.Second, 250*time.Millisecond
	cfg.Loop.ActiveRequeue, cfg.Loop.StartTimeout, cfg.Loop.JobWordGrace = time.Second, time.Minute, 5*time.Second
	cfg.Loop.RunnerListEvery, cfg.Loop.StopGrace = 5*time.Second, 5*time.Second
	if s.d, err = daemon.New(cfg); err != nil {
		return err
	}
	s.store = s.d.Store()
	return s.addPolicies(ctx, w, runnerDir)
}

// installFakeRunner lays the fake runner (exe, "" for this program) out as
// an installed runner under dataDir and returns its directory.
func installFakeRunner(dataDir, exe string) (string, error) {
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return "", fmt.Errorf("find this program to use it as the fake runner: %w", err)
		}
	}
	runnerDir := datadir.New(dataDir).Runner("fake")
	if err := fakegithub.LayoutRunnerDir(runnerDir, exe); err != nil {
		return "", fmt.Errorf("install the fake runner: %w", err)
	}
	return runnerDir, nil
}

// addPolicies writes the world's policies, served by runnerDir.
func (s *Sim) addPolicies(ctx context.Context, w world, runnerDir string) error {
	now := time.Now().UTC()
	for _, wp := range w.Policies {
		scope, err := rm.Repository(cmp.Or(wp.Repo, Repo))
		if err != nil {
			return err
		}
		var t rm.ScaleTarget
		if w.Classic {
			t, err = rm.NewLabelTarget(scope, "", []string{wp.Name})
		} else {
			t, err = rm.NewScaleSetTarget(scope, "", wp.Name)
		}
		if err != nil {
			return err
		}
		p := rm.Policy{ID: rm.NewPolicyID(), Name: wp.Name, Host: s.host.ID, Target: t, Backend: rm.DefaultBackend,
			RunnerDir: runnerDir, Max: wp.Max, MemoryEstimate: wp.Estimate, Spare: wp.Spare, MinIdle: wp.MinIdle, Cold: wp.Cold, CreatedAt: now, UpdatedAt: now}
		if err := s.store.InsertPolicy(ctx, p); err != nil {
			return err
		}
		s.policies = append(s.policies, p)
	}
	return nil
}

// deliverWebhooks waits, up to a minute, for the daemon's webhook receiver
// to listen and tells the fake GitHub to send its workflow_job webhooks
// there. Without webhooks in the world it does nothing.
func (s *Sim) deliverWebhooks(ctx context.Context) error {
	if s.hookSecret == "" {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if addr := s.d.Addrs().Webhook; addr != "" {
			s.server.DeliverWebhooks("http://"+addr+"/", s.hookSecret)
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the daemon's webhook receiver did not listen: %w", ctx.Err())
		case <-s.runDone:
			return errors.New("the daemon stopped before its webhook receiver listened")
		case <-t.C:
		}
	}
}
