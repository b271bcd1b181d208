package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"

	rm "github.com/runner-manager/runner-manager"
)

// Backend is the container backend's launcher, the one a daemon registers
// for rm.BackendContainer: one Launcher per policy, built (and its
// settings checked) from the policy's settings (SettingsOf) at its first
// launch and again when they change, over one engine connected at first
// use. Attempts launched before a restart are adopted, checked and removed
// by a launcher of the same host and runner directory (the image
// contract's): the container's name and labels are all they need.
//
// Each container gets a memory limit: its policy's, or, for a policy that
// sets none or rm.MemoryLimitFromPeaks, twice what admission expects its
// attempt to peak at (SetExpectedPeak), at least rm.MinMemoryLimit, so
// that one job cannot take the host.
type Backend struct {
	addr       string // the engine's address; "": DOCKER_HOST, else the usual sockets
	host       rm.HostID
	failedLogs string
	log        *slog.Logger

	mu       sync.Mutex
	eng      *Engine
	byPolicy map[rm.PolicyID]*Launcher
	replaced []*Launcher // closed at Close: their watches run on
	base     *Launcher   // Adopt, RanJob, Cleanup
	// limits are the memory limits set for attempts about to launch
	// (SetMemoryLimit), taken at their container's creation.
	limits map[rm.AttemptID]uint64
	// procs are the attempts' containers, launched or adopted, until
	// Cleanup: GroupMemory reads their end.
	procs map[rm.AttemptID]*Process
	// expectedPeak is what admission expects an attempt of a policy to
	// peak at: a policy that sets no limit gets twice it (peakLimit).
	expectedPeak func(rm.Policy) uint64
}

var (
	_ rm.Launcher        = (*Backend)(nil)
	_ rm.MemoryContainer = (*Backend)(nil)
	_ rm.LeftoverRemover = (*Backend)(nil)
)

// BackendConfig is what NewBackend needs.
type BackendConfig struct {
	// Engine is the engine's address (Docker, or Podman's compatible
	// service: "unix:///run/podman/podman.sock"); "" takes DOCKER_HOST,
	// else the usual sockets (see Connect). It is connected only once an
	// attempt needs it.
	Engine string
	// Host labels the containers: this host's id.
	Host rm.HostID
	// FailedLogs, when set, keeps a failed attempt's runner output there
	// (see WithFailedLogs).
	FailedLogs string
	// Logger notes what the backend, its engine and its launchers could
	// not do perfectly; default slog.Default().
	Logger *slog.Logger
}

// NewBackend returns the container backend of a host; it connects nothing
// yet. Close it when done.
func NewBackend(c BackendConfig) *Backend {
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return &Backend{addr: c.Engine, host: c.Host, failedLogs: c.FailedLogs, log: c.Logger,
		byPolicy: map[rm.PolicyID]*Launcher{},
		limits:   map[rm.AttemptID]uint64{}, procs: map[rm.AttemptID]*Process{}}
}

// SetExpectedPeak gives what admission expects an attempt of a policy to
// peak at, from which a container whose policy sets no limit gets its
// own. Set it before the first Launch; without it such a container runs
// unlimited.
func (b *Backend) SetExpectedPeak(f func(rm.Policy) uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.expectedPeak = f
}

// peakLimit is the memory limit of a container whose policy sets none:
// the one a policy limited from its peaks gets (rm.PeakMemoryLimit), so
// that one job cannot take the host; 0 when nothing is expected.
func (b *Backend) peakLimit(p rm.Policy) uint64 {
	b.mu.Lock()
	expected := b.expectedPeak
	b.mu.Unlock()
	if expected == nil {
		return 0
	}
	return rm.PeakMemoryLimit(expected(p))
}

// SetMemoryLimit is the memory limit of the attempt's container, set
// before its launch: the policy's limit, or, for rm.MemoryLimitFromPeaks,
// twice the peak admission expects of it (at least rm.MinMemoryLimit). The
// container gets it as its cgroup's limit, swap included.
func (b *Backend) SetMemoryLimit(a rm.AttemptID, bytes uint64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.limits[a] = bytes
	return nil
}

// memoryFor is the limit of an attempt's container at its creation.
func (b *Backend) memoryFor(a rm.AttemptID) uint64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.limits[a]
}

// GroupMemory is the kernel's word on an ended container's memory: its
// limit, its peak where known, and its processes the OOM killer ended,
// which make the attempt Failed(OOMKilled) and the meters bank its limit
// as a peak. false for a container not ended, or not this backend's.
func (b *Backend) GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool) {
	b.mu.Lock()
	p := b.procs[a]
	b.mu.Unlock()
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
func (b *Backend) keep(a rm.AttemptID, p rm.Process) {
	if cp, ok := p.(*Process); ok {
		b.mu.Lock()
		b.procs[a] = cp
		b.mu.Unlock()
	}
}

// engine connects the engine at the first call.
func (b *Backend) engine() (*Engine, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.engineLocked()
}

func (b *Backend) engineLocked() (*Engine, error) {
	if b.eng != nil {
		return b.eng, nil
	}
	e, err := Connect(b.addr, WithEngineLogger(b.log))
	if err != nil {
		return nil, err
	}
	b.eng = e
	return e, nil
}

// SettingsOf are the settings of a container policy's launcher. An image
// named localhost/… (Podman's name for an image built on the host) is
// never pulled: no registry has it, and a missing one is said as missing,
// not as a pull that failed.
func SettingsOf(p rm.Policy) Settings {
	s := Settings{
		Image: p.Container.Image, CPUs: p.Container.CPUs, Network: p.Container.Network,
		Volumes: slices.Clone(p.Container.Volumes), PassEnv: slices.Clone(p.Container.Env),
	}
	if strings.HasPrefix(p.Container.Image, "localhost/") {
		s.Pull = PullNever
	}
	if p.MemoryLimit != rm.MemoryLimitFromPeaks {
		s.MemoryBytes = p.MemoryLimit
	}
	return s
}

// forPolicy is the launcher of policy p's settings.
func (b *Backend) forPolicy(p rm.Policy) (*Launcher, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := SettingsOf(p)
	if l := b.byPolicy[p.ID]; l != nil && fmt.Sprint(l.Settings()) == fmt.Sprint(s) {
		return l, nil
	}
	e, err := b.engineLocked()
	if err != nil {
		return nil, err
	}
	l, err := NewLauncher(e, b.host, s, b.options()...)
	if err != nil {
		return nil, fmt.Errorf("policy %q: %w", p.Name, err)
	}
	if old := b.byPolicy[p.ID]; old != nil {
		// Its containers' watches run until Close.
		b.replaced = append(b.replaced, old)
	}
	b.byPolicy[p.ID] = l
	return l, nil
}

func (b *Backend) options() []Option {
	opts := []Option{WithMemoryFor(b.memoryFor)}
	if b.failedLogs != "" {
		opts = append(opts, WithFailedLogs(b.failedLogs))
	}
	return opts
}

// baseLauncher serves the calls that name an attempt only.
func (b *Backend) baseLauncher() (*Launcher, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.base != nil {
		return b.base, nil
	}
	e, err := b.engineLocked()
	if err != nil {
		return nil, err
	}
	// The image is never used: this launcher launches nothing.
	l, err := NewLauncher(e, b.host, Settings{Image: "runner-manager-adopt"}, b.options()...)
	if err != nil {
		return nil, err
	}
	b.base = l
	return l, nil
}

// Launch starts the attempt in a container of its policy's settings.
func (b *Backend) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	defer func() {
		b.mu.Lock()
		delete(b.limits, spec.Attempt)
		b.mu.Unlock()
	}()
	if spec.Policy.MemoryLimit == 0 {
		// The loop limits only a policy that sets a limit; a container
		// always gets one.
		if limit := b.peakLimit(spec.Policy); limit > 0 {
			b.mu.Lock()
			b.limits[spec.Attempt] = limit
			b.mu.Unlock()
		}
	}
	l, err := b.forPolicy(spec.Policy)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	p, err := l.Launch(ctx, b.launchSpec(l, spec))
	if err == nil {
		b.keep(spec.Attempt, p)
	}
	return p, err
}

// Adopt finds the attempt's container.
func (b *Backend) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	l, err := b.baseLauncher()
	if err != nil {
		return nil, fmt.Errorf("adopt attempt %s: %w", a, err)
	}
	p, err := l.Adopt(a, pid, start)
	if err == nil {
		b.keep(a, p)
	}
	return p, err
}

// RanJob reads the runner's trace in the attempt's container.
func (b *Backend) RanJob(a rm.AttemptID) bool {
	l, err := b.baseLauncher()
	return err == nil && l.RanJob(a)
}

// Cleanup removes the attempt's container.
func (b *Backend) Cleanup(a rm.AttemptID, failed bool) error {
	b.mu.Lock()
	delete(b.procs, a)
	b.mu.Unlock()
	l, err := b.baseLauncher()
	if err != nil {
		return fmt.Errorf("clean up attempt %s: %w", a, err)
	}
	return l.Cleanup(a, failed)
}

// RemoveLeftovers removes this host's containers whose attempt is not
// live: what a crash between a container's creation and its journal
// record, or a lost Cleanup, leaves.
func (b *Backend) RemoveLeftovers(ctx context.Context, live func(rm.AttemptID) bool) error {
	e, err := b.engine()
	if err != nil {
		return err
	}
	gone, err := e.RemoveLeftovers(ctx, b.host, live)
	for _, ct := range gone {
		b.log.Info("removed a leftover container", "attempt", ct.Attempt, "container", ct.Name)
	}
	return err
}

// Close ends the launchers' watches and the engine's connection; the
// containers stay (the next start re-adopts them).
func (b *Backend) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	var errs []error
	for _, l := range b.byPolicy {
		errs = append(errs, l.Close())
	}
	for _, l := range b.replaced {
		errs = append(errs, l.Close())
	}
	if b.base != nil {
		errs = append(errs, b.base.Close())
	}
	if b.eng != nil {
		errs = append(errs, b.eng.Close())
	}
	return errors.Join(errs...)
}
