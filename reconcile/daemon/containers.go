package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/meter"
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
	// limits are the memory limits reconcile set for attempts about to
	// launch (SetMemoryLimit), taken at their container's creation.
	limits map[rm.AttemptID]uint64
	// procs are the attempts' containers, launched or adopted, until
	// Cleanup: GroupMemory reads their end.
	procs map[rm.AttemptID]*container.Process
	// expectedPeak is what admission expects an attempt of a policy to
	// peak at: a policy that sets no limit gets twice it (peakLimit).
	expectedPeak func(rm.Policy) uint64
}

// peakLimit is the memory limit of a container whose policy sets none:
// twice what admission expects it to peak at, at least
// rm.MinMemoryLimit, as rm.MemoryLimitFromPeaks gives, so that one job
// cannot take the host; 0 when nothing is expected.
func (c *containers) peakLimit(p rm.Policy) uint64 {
	if c.expectedPeak == nil {
		return 0
	}
	exp := c.expectedPeak(p)
	if exp == 0 || exp*2/2 != exp {
		return 0
	}
	return max(exp*2, rm.MinMemoryLimit)
}

var (
	_ rm.Launcher        = (*containers)(nil)
	_ rm.MemoryContainer = (*containers)(nil)
)

func newContainers(host string, hostID rm.HostID, failedLogs string, log *slog.Logger) *containers {
	return &containers{host: host, hostID: hostID, failedLogs: failedLogs, log: log,
		byPolicy: map[rm.PolicyID]*container.Launcher{},
		limits:   map[rm.AttemptID]uint64{}, procs: map[rm.AttemptID]*container.Process{}}
}

// SetMemoryLimit is the memory limit of the attempt's container, set by
// reconcile before its launch: the policy's limit, or, for
// rm.MemoryLimitFromPeaks, twice the peak admission expects of it (at
// least rm.MinMemoryLimit). The container gets it as its cgroup's limit,
// swap included.
func (c *containers) SetMemoryLimit(a rm.AttemptID, bytes uint64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limits[a] = bytes
	return nil
}

// memoryFor is the limit of an attempt's container at its creation.
func (c *containers) memoryFor(a rm.AttemptID) uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.limits[a]
}

// GroupMemory is the kernel's word on an ended container's memory: its
// limit, its peak where known, and its processes the OOM killer ended,
// which make reconcile conclude the attempt Failed(OOMKilled) and the
// meters bank its limit as a peak. false for a container not ended, or
// not this launcher's.
func (c *containers) GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool) {
	c.mu.Lock()
	p := c.procs[a]
	c.mu.Unlock()
	if p == nil {
		return rm.GroupMemory{}, false
	}
	select {
	case <-p.Done():
	default:
		return rm.GroupMemory{}, false
	}
	m := p.Memory()
	return rm.GroupMemory{LimitBytes: m.LimitBytes, PeakBytes: m.PeakBytes, OOMKills: m.OOMKills}, true
}

// keep notes an attempt's container for GroupMemory.
func (c *containers) keep(a rm.AttemptID, p rm.Process) {
	if cp, ok := p.(*container.Process); ok {
		c.mu.Lock()
		c.procs[a] = cp
		c.mu.Unlock()
	}
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
// An image named localhost/… (Podman's name for an image built on the
// host) is never pulled: no registry has it, and a missing one is said as
// missing, not as a pull that failed.
func Settings(p rm.Policy) container.Settings {
	s := container.Settings{
		Image: p.Container.Image, CPUs: p.Container.CPUs, Network: p.Container.Network,
		Volumes: slices.Clone(p.Container.Volumes), PassEnv: slices.Clone(p.Container.Env),
	}
	if strings.HasPrefix(p.Container.Image, "localhost/") {
		s.Pull = container.PullNever
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
	opts := []container.Option{container.WithMemoryFor(c.memoryFor)}
	if c.failedLogs != "" {
		opts = append(opts, container.WithFailedLogs(c.failedLogs))
	}
	return opts
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
	defer func() {
		c.mu.Lock()
		delete(c.limits, spec.Attempt)
		c.mu.Unlock()
	}()
	if spec.Policy.MemoryLimit == 0 {
		// reconcile limits only a policy that sets a limit; a container
		// always gets one.
		if limit := c.peakLimit(spec.Policy); limit > 0 {
			c.mu.Lock()
			c.limits[spec.Attempt] = limit
			c.mu.Unlock()
		}
	}
	l, err := c.forPolicy(spec.Policy)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	p, err := l.Launch(ctx, spec)
	if err == nil {
		c.keep(spec.Attempt, p)
	}
	return p, err
}

// Adopt finds the attempt's container.
func (c *containers) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	l, err := c.baseLauncher()
	if err != nil {
		return nil, fmt.Errorf("adopt attempt %s: %w", a, err)
	}
	p, err := l.Adopt(a, pid, start)
	if err == nil {
		c.keep(a, p)
	}
	return p, err
}

// RanJob reads the runner's trace in the attempt's container.
func (c *containers) RanJob(a rm.AttemptID) bool {
	l, err := c.baseLauncher()
	return err == nil && l.RanJob(a)
}

// Cleanup removes the attempt's container.
func (c *containers) Cleanup(a rm.AttemptID, failed bool) error {
	c.mu.Lock()
	delete(c.procs, a)
	c.mu.Unlock()
	l, err := c.baseLauncher()
	if err != nil {
		return fmt.Errorf("clean up attempt %s: %w", a, err)
	}
	return l.Cleanup(a, failed)
}

// withContainerMemory is the meters' view of the launchers' groups: the
// native launcher's cgroups, and the containers' memory at their end, so
// that a container the OOM killer ended banks its limit as its peak.
type withContainerMemory struct {
	meter.Groups
	boxes *containers
}

func (g withContainerMemory) GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool) {
	if m, ok := g.Groups.GroupMemory(a); ok {
		return m, true
	}
	return g.boxes.GroupMemory(a)
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

// expectedPeak is admission's expected peak of a policy's attempt: its
// banked peaks, else its estimate, else admission's default.
func expectedPeak(m reconcile.Meters, a *reconcile.Admission) func(rm.Policy) uint64 {
	return func(p rm.Policy) uint64 {
		est := p.MemoryEstimate
		if est == 0 {
			est = a.DefaultEstimate
		}
		if est == 0 {
			est = reconcile.DefaultMemoryEstimate
		}
		return m.ExpectedPeak(p.ID, est)
	}
}
