package simulate

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/github/fakegithub"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

// world is what the demo and the bench set up alike before they differ:
// a data directory, the fake runner installed in it, the fake GitHub and a
// client of it, the journal, this host and the policies.
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
}

// worldPolicy is one policy to serve: a scale set (or label) named Name.
type worldPolicy struct {
	Name     string
	Max      int
	Estimate uint64
	Spare    int
	MinIdle  int
}

// setUp builds the world into s. On error the caller closes s.
func (s *Sim) setUp(ctx context.Context, w world) error {
	s.dataDir = w.DataDir
	if s.dataDir == "" {
		dir, err := os.MkdirTemp("", w.TempPrefix)
		if err != nil {
			return err
		}
		s.dataDir, s.tempDir = dir, true
	}
	if err := os.MkdirAll(filepath.Join(s.dataDir, "state"), 0o700); err != nil {
		return err
	}
	exe := w.RunnerExecutable
	if exe == "" {
		var err error
		if exe, err = os.Executable(); err != nil {
			return fmt.Errorf("find this program to use it as the fake runner: %w", err)
		}
	}
	runnerDir := filepath.Join(s.dataDir, "runners", "fake")
	if err := fakegithub.LayoutRunnerDir(runnerDir, exe); err != nil {
		return fmt.Errorf("install the fake runner: %w", err)
	}

	token := "ghp_" + w.Name + rm.NewAttemptID().String()
	// The fake GitHub's goroutines carry the label part=fake-github, so a
	// CPU profile (bench --cpu-profile; go tool pprof -tags) tells them
	// from the manager's.
	pprof.Do(ctx, pprof.Labels("part", "fake-github"), func(context.Context) {
		s.server = fakegithub.NewServer(append([]fakegithub.Option{fakegithub.WithToken(token), fakegithub.WithRepo(Repo),
			fakegithub.WithPollTimeout(2 * time.Second), fakegithub.WithLogger(w.Logger)}, w.FakeOptions...)...)
	})
	var err error
	s.client, err = github.New(github.Config{WebURL: s.server.URL(), APIURL: s.server.APIURL(), Token: token,
		UserAgent: "runner-manager-" + w.Name, Logger: w.Logger})
	if err != nil {
		return err
	}
	if s.store, err = store.OpenSQLite(filepath.Join(s.dataDir, "journal.db")); err != nil {
		return err
	}
	if s.host, err = platform.HostInfo(); err != nil {
		return err
	}
	s.host.ID = rm.NewHostID()
	if w.HostMemory > 0 {
		s.host.MemoryBytes = w.HostMemory
	}
	s.host.SeenAt = time.Now().UTC()
	if err := s.store.PutHost(ctx, s.host); err != nil {
		return err
	}
	scope, err := rm.Repository(Repo)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	for _, wp := range w.Policies {
		var t rm.ScaleTarget
		if w.Classic {
			t, err = rm.NewLabelTarget(scope, "", []string{wp.Name})
		} else {
			t, err = rm.NewScaleSetTarget(scope, "", wp.Name)
		}
		if err != nil {
			return err
		}
		p := rm.Policy{ID: rm.NewPolicyID(), Name: wp.Name, Host: s.host.ID, Target: t, Backend: rm.BackendNative,
			RunnerDir: runnerDir, Max: wp.Max, MemoryEstimate: wp.Estimate, Spare: wp.Spare, MinIdle: wp.MinIdle, CreatedAt: now, UpdatedAt: now}
		if err := s.store.InsertPolicy(ctx, p); err != nil {
			return err
		}
		s.policies = append(s.policies, p)
	}
	return nil
}

// supervisorConfig is the supervisor both run: quick timings, so a
// simulated day fits in minutes, over launcher, with admission adm and
// classic mode polling every poll.
func (s *Sim) supervisorConfig(launcher reconcile.Launcher, adm *reconcile.Admission, poll time.Duration, logger *slog.Logger) reconcile.SupervisorConfig {
	return reconcile.SupervisorConfig{
		Store:        s.store,
		Host:         s.host,
		Launcher:     launcher,
		Meters:       meter.New(filepath.Join(s.dataDir, "state", "memory-peaks.toml")),
		Targets:      Targets(s.client, s.host, s.store, logger, poll),
		Admission:    adm,
		Logger:       logger,
		DataDir:      s.dataDir,
		RefreshEvery: time.Second,
		SampleEvery:  250 * time.Millisecond,
		Budget:       s.client.Budget,
		Loop: reconcile.Config{
			ActiveRequeue:   time.Second,
			StartTimeout:    time.Minute,
			JobWordGrace:    5 * time.Second,
			RunnerListEvery: 5 * time.Second,
			StopGrace:       5 * time.Second,
		},
	}
}
