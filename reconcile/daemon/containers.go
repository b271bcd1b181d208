package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform/container"
	"github.com/runner-manager/runner-manager/reconcile"
)

// containers is the container backend's launcher: one container.Launcher
// per policy, built (and its settings checked by the container package)
// from the policy's settings at its first launch and again when they
// change, over one engine connected at first use. Attempts launched
// before a restart are adopted, checked and removed by a launcher of the
// same host and runner directory (the image contract's): the container's
// name and labels are all they need.
type containers struct {
	host       string // "" : DOCKER_HOST, else the usual sockets
	hostID     rm.HostID
	failedLogs string
	log        *slog.Logger

	mu       sync.Mutex
	eng      *container.Engine
	byPolicy map[rm.PolicyID]*container.Launcher
	replaced []*container.Launcher // closed at Close: their watches run on
	base     *container.Launcher   // Adopt, RanJob, Cleanup
}

var _ reconcile.Launcher = (*containers)(nil)

func newContainers(host string, hostID rm.HostID, failedLogs string, log *slog.Logger) *containers {
	return &containers{host: host, hostID: hostID, failedLogs: failedLogs, log: log,
		byPolicy: map[rm.PolicyID]*container.Launcher{}}
}

// engine connects the engine at the first call.
func (c *containers) engine() (*container.Engine, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.engineLocked()
}

func (c *containers) engineLocked() (*container.Engine, error) {
	if c.eng != nil {
		return c.eng, nil
	}
	e, err := container.Connect(c.host, container.WithEngineLogger(c.log))
	if err != nil {
		return nil, err
	}
	c.eng = e
	return e, nil
}

// Settings are the container package's settings of a container policy.
func Settings(p rm.Policy) container.Settings {
	s := container.Settings{
		Image: p.Container.Image, CPUs: p.Container.CPUs, Network: p.Container.Network,
		Volumes: slices.Clone(p.Container.Volumes), PassEnv: slices.Clone(p.Container.Env),
	}
	if p.MemoryLimit != rm.MemoryLimitFromPeaks {
		s.MemoryBytes = p.MemoryLimit
	}
	return s
}

// forPolicy is the launcher of policy p's settings.
func (c *containers) forPolicy(p rm.Policy) (*container.Launcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := Settings(p)
	if l := c.byPolicy[p.ID]; l != nil && fmt.Sprint(l.Settings()) == fmt.Sprint(s) {
		return l, nil
	}
	e, err := c.engineLocked()
	if err != nil {
		return nil, err
	}
	l, err := container.NewLauncher(e, c.hostID, s, c.options()...)
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", p.Name, err)
	}
	if old := c.byPolicy[p.ID]; old != nil {
		// Its containers' watches run until Close.
		c.replaced = append(c.replaced, old)
	}
	c.byPolicy[p.ID] = l
	return l, nil
}

func (c *containers) options() []container.Option {
	if c.failedLogs == "" {
		return nil
	}
	return []container.Option{container.WithFailedLogs(c.failedLogs)}
}

// baseLauncher serves the calls that name an attempt only.
func (c *containers) baseLauncher() (*container.Launcher, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.base != nil {
		return c.base, nil
	}
	e, err := c.engineLocked()
	if err != nil {
		return nil, err
	}
	// The image is never used: this launcher launches nothing.
	l, err := container.NewLauncher(e, c.hostID, container.Settings{Image: "runner-manager-adopt"}, c.options()...)
	if err != nil {
		return nil, err
	}
	c.base = l
	return l, nil
}

// Launch starts the attempt in a container of its policy's settings.
func (c *containers) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	l, err := c.forPolicy(spec.Policy)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	return l.Launch(ctx, spec)
}

// Adopt finds the attempt's container.
func (c *containers) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	l, err := c.baseLauncher()
	if err != nil {
		return nil, fmt.Errorf("adopt attempt %s: %w", a, err)
	}
	return l.Adopt(a, pid, start)
}

// RanJob reads the runner's trace in the attempt's container.
func (c *containers) RanJob(a rm.AttemptID) bool {
	l, err := c.baseLauncher()
	return err == nil && l.RanJob(a)
}

// Cleanup removes the attempt's container.
func (c *containers) Cleanup(a rm.AttemptID, failed bool) error {
	l, err := c.baseLauncher()
	if err != nil {
		return fmt.Errorf("clean up attempt %s: %w", a, err)
	}
	return l.Cleanup(a, failed)
}

// removeLeftovers removes this host's containers whose attempt the
// journal has not live: what a crash between a container's creation and
// its journal record, or a lost Cleanup, leaves.
func (c *containers) removeLeftovers(ctx context.Context, live map[rm.AttemptID]bool) error {
	e, err := c.engine()
	if err != nil {
		return err
	}
	gone, err := e.RemoveLeftovers(ctx, c.hostID, func(a rm.AttemptID) bool { return live[a] })
	for _, ct := range gone {
		c.log.Info("removed a leftover container", "attempt", ct.Attempt, "container", ct.Name)
	}
	return err
}

// Close ends the launchers' watches and the engine's connection; the
// containers stay (the next start re-adopts them).
func (c *containers) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var errs []error
	for _, l := range c.byPolicy {
		errs = append(errs, l.Close())
	}
	for _, l := range c.replaced {
		errs = append(errs, l.Close())
	}
	if c.base != nil {
		errs = append(errs, c.base.Close())
	}
	if c.eng != nil {
		errs = append(errs, c.eng.Close())
	}
	return errors.Join(errs...)
}

// recoverContainers removes, at a run's start, this host's containers
// whose attempt the journal has not live, when a policy of this host uses
// the default container launcher. The live ones are re-adopted by the
// loops. An engine that does not answer is said and the run goes on: its
// attempts are concluded as the loops find them gone.
func (d *Daemon) recoverContainers(ctx context.Context) {
	if d.boxes == nil {
		return
	}
	ps, err := d.st.Policies(ctx)
	if err != nil || !slices.ContainsFunc(ps, func(p rm.Policy) bool {
		return p.IsOwnedBy(d.host.ID) && p.Backend == rm.BackendContainer
	}) {
		return
	}
	live, err := d.st.LiveAttempts(ctx, d.host.ID)
	if err != nil {
		d.log.Warn("leftover containers not looked for: the journal did not answer", "err", err)
		return
	}
	ids := make(map[rm.AttemptID]bool, len(live))
	for _, a := range live {
		ids[a.ID] = true
	}
	if err := d.boxes.removeLeftovers(ctx, ids); err != nil {
		d.log.Warn("leftover containers not all removed", "err", err)
	}
}
