package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile/daemon/config"
	"github.com/runner-manager/runner-manager/reconcile/daemonapi"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/metrics"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

// RunCmd is the daemon.
type RunCmd struct {
	Once        bool   `help:"Run one pass of every policy's loop (conclude, reap, keep min idle) and exit."`
	Drain       bool   `help:"On SIGINT/SIGTERM, remove idle runners and wait for busy ones to finish before exiting (default: busy ones keep running; the next start re-adopts them)."`
	MetricsAddr string `help:"Serve Prometheus metrics at http://ADDR/metrics; a port alone (:9464) listens on loopback only (default: off, or [daemon] metrics_addr)." env:"RUNNER_MANAGER_METRICS_ADDR" placeholder:"ADDR"`
}

// Help is the long help of run.
func (c *RunCmd) Help() string {
	return `run is the daemon: for every active policy of this host it watches demand
(scale-set mode: a long poll of the scale set; classic mode: the repository's
queued jobs, or webhooks), starts one ephemeral runner per job as memory and
disk admit, concludes and cleans each attempt, and reaps leftovers. It serves
its live figures to "status" and "tui" on <data>/manager.sock.

SIGINT or SIGTERM stop it: idle runners are deregistered and stopped; busy
ones keep their jobs and are re-adopted at the next start, unless --drain:
then busy ones are awaited first. One daemon runs a data directory (a lock
on <data>/manager.lock) and a host (a lease in the journal).`
}

// Run runs the daemon until ctx ends.
func (c *RunCmd) Run(ctx context.Context, a *App) error {
	if a.flagGiven("--metrics-addr") {
		a.setFlag("daemon.metrics_addr", "--metrics-addr", c.MetricsAddr)
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	log := a.Logger()
	dataDir, err := a.DataDir()
	if err != nil {
		return err
	}
	// One daemon per data directory: the lock, held for the daemon's life
	// (the socket alone is no lock: deleting it would let a second daemon
	// start and sweep the first one's runners). The host lease in the
	// journal (the supervisor's) covers two data directories over one.
	lock, err := platform.LockDataDir(dataDir)
	if err != nil {
		return err
	}
	defer lock.Close()
	sock, err := daemonapi.Listen(dataDir)
	if err != nil {
		if errors.Is(err, daemonapi.ErrAlreadyRunning) {
			return fmt.Errorf("%w: `runner-manager status` shows it", err)
		}
		return err
	}
	defer sock.Close()

	st, err := a.Store(ctx)
	if err != nil {
		return err
	}
	host, err := a.Host(ctx)
	if err != nil {
		return err
	}
	var sup *reconcile.Supervisor
	met := metrics.New(func() reconcile.Status { return sup.Status() }, st, log)
	client, err := newGitHubClient(cfg, met.Transport(nil), log)
	if err != nil {
		if errors.Is(err, config.ErrNoCredentials) {
			return fmt.Errorf("%w (try the demo, which needs none: runner-manager demo)", err)
		}
		return err
	}
	hooks := &classicTargets{m: map[*github.ClassicTarget]bool{}}
	sup, err = reconcile.NewSupervisor(reconcile.SupervisorConfig{
		Store:    st,
		Host:     host,
		Launcher: platform.NewNativeLauncher(dataDir, platform.WithLauncherLogger(log)),
		Meters:   meter.New(filepath.Join(dataDir, stateDir, peaksName), meter.WithLogger(log), meter.WithHostMemory(host.MemoryBytes)),
		Targets:  productionTargets(client, host, st, log, hooks),
		Admission: &reconcile.Admission{
			Memory: reconcile.HostMemory{}, Reserve: cfg.Admission.MemoryReserve.Bytes(),
			DiskFree: platform.DiskFree, DiskPath: dataDir, DiskFloor: cfg.Admission.DiskFloor.Bytes(),
		},
		Logger:  log,
		DataDir: dataDir,
		Drain:   c.Drain,
		Budget:  client.Budget,
		Loop:    reconcile.Config{OnPass: met.ObservePass},
	})
	if err != nil {
		return err
	}
	policies, err := st.Policies(ctx)
	if err != nil {
		return err
	}
	owned := 0
	for _, p := range policies {
		if p.IsOwnedBy(host.ID) {
			owned++
		}
	}
	if owned == 0 {
		log.Warn("no policies yet: add one with `runner-manager policy add`; the daemon picks it up within seconds")
	}

	if c.Once {
		if err := sup.RunOnce(ctx); err != nil {
			return err
		}
		a.printf("one pass done for %d policies\n", owned)
		return nil
	}

	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, 3)
	wg.Go(func() {
		if err := daemonapi.ServeListener(ctx, sock, sup, log); err != nil {
			errs <- fmt.Errorf("the daemon API stopped: %w", err)
		}
	})
	wg.Go(func() { met.Run(ctx, 2*time.Second) })
	wg.Go(func() { keepLock(ctx, lock, log) })
	if cfg.Daemon.MetricsAddr != "" {
		l, err := net.Listen("tcp", cfg.Daemon.MetricsListenAddr())
		if err != nil {
			return fmt.Errorf("serve metrics on %s: %w (change --metrics-addr or [daemon] metrics_addr)", cfg.Daemon.MetricsListenAddr(), err)
		}
		log.Info("serving metrics", "url", "http://"+l.Addr().String()+"/metrics")
		wg.Go(func() {
			if err := met.ServeListener(ctx, l); err != nil {
				errs <- fmt.Errorf("the metrics server stopped: %w", err)
			}
		})
	}
	if cfg.Webhook.Listen != "" {
		secret := os.Getenv(cfg.Webhook.SecretEnv)
		if secret == "" {
			return fmt.Errorf("%w: [webhook] listen is set but $%s (secret_env) is empty: set it to the webhook's secret", rm.ErrInvalid, cfg.Webhook.SecretEnv)
		}
		l, err := net.Listen("tcp", cfg.Webhook.Listen)
		if err != nil {
			return fmt.Errorf("serve webhooks on %s: %w", cfg.Webhook.Listen, err)
		}
		log.Info("serving workflow_job webhooks", "addr", l.Addr().String())
		wg.Go(func() {
			// A delivery only nudges the classic targets to look.
			err := github.ServeWebhooks(ctx, l, []byte(secret), hooks.notify,
				github.WithWebhookMaxBody(int64(cfg.Webhook.MaxBody.Bytes())))
			if err != nil {
				errs <- fmt.Errorf("the webhook server stopped: %w", err)
			}
		})
	}
	log.Info("runner-manager running", "host", host.Name, "host_id", host.ID, "data_dir", dataDir,
		"policies", owned, "socket", daemonapi.SocketPath(dataDir), "version", version())
	supDone := make(chan error, 1)
	go func() { supDone <- sup.Run(ctx) }()
	select {
	case err = <-supDone:
	case err = <-errs:
		cancel()
		<-supDone
	}
	if ctx.Err() != nil && err == nil {
		log.Info("runner-manager stopped")
	}
	return err
}

// keepLock checks the data directory's lock every lease renewal until ctx
// ends: a lock file deleted (with the data directory) is locked again on a
// new file before a second daemon can take it.
func keepLock(ctx context.Context, lock *platform.DirLock, log *slog.Logger) {
	t := time.NewTicker(reconcile.LeaseRenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := lock.Check(); err != nil {
			log.Error("the data directory lock is lost", "path", lock.Path(), "err", err)
		}
	}
}

// classicTargets are the live classic-mode targets, which webhooks feed.
type classicTargets struct {
	mu sync.Mutex
	m  map[*github.ClassicTarget]bool
}

func (c *classicTargets) add(t *github.ClassicTarget) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[t] = true
}

func (c *classicTargets) notify(ev github.WorkflowJobEvent) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for t := range c.m {
		t.Notify(ev)
	}
}

// productionTargets makes the GitHub side of a policy's target: a scale
// set (created or updated, updates disabled: runner updates are ours), or a
// classic target polling its repository's jobs (and fed by webhooks). A
// scale set's message session is recorded in the journal, so that after a
// crash the next start deletes it instead of waiting on it.
func productionTargets(c *github.Client, host rm.Host, st store.Store, log *slog.Logger, hooks *classicTargets) func(context.Context, rm.Policy) (reconcile.Target, error) {
	prefix := rm.RunnerNamePrefix(host.ID)
	return func(ctx context.Context, p rm.Policy) (reconcile.Target, error) {
		plog := log.With("policy", p.Name)
		if p.Target.Mode() == rm.ModeScaleSet {
			t, err := github.NewScaleSetTarget(ctx, c, p.Target, github.ScaleSetOptions{
				Owner: sessionOwner(host), HostID: host.ID.String(), Journal: reconcile.SessionJournal(st),
				DisableUpdate: true, NamePrefix: prefix, Logger: plog,
			})
			if err != nil {
				return nil, err
			}
			return t, nil
		}
		t, err := github.NewClassicTarget(c, p.Target, github.ClassicOptions{NamePrefix: prefix, Logger: plog})
		if err != nil {
			return nil, err
		}
		hooks.add(t)
		return hookedTarget{t, hooks}, nil
	}
}

// sessionOwner is the owner name of this host's message sessions: its
// name and the start of its id, so two hosts of one name stay apart.
func sessionOwner(host rm.Host) string {
	return host.Name + "/" + strings.ToLower(host.ID.String()[:8])
}

// hookedTarget leaves the webhook set when its loop closes it.
type hookedTarget struct {
	*github.ClassicTarget
	hooks *classicTargets
}

func (h hookedTarget) Close(ctx context.Context) error {
	h.hooks.mu.Lock()
	delete(h.hooks.m, h.ClassicTarget)
	h.hooks.mu.Unlock()
	return h.ClassicTarget.Close(ctx)
}
