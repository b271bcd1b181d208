package native

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// containment is how a Launcher keeps each attempt's processes
// together, and ends them with the attempt: a cgroup per attempt where the
// host allows it (see platform.Cgroups), else the runner's process group and the
// RUNNER_MANAGER_ATTEMPT marker of its environment, which every process it
// starts inherits.
type containment struct {
	off   bool              // WithoutCgroups
	given *platform.Cgroups // WithCgroups
	grace time.Duration

	openMu sync.Mutex
	opened bool
	cg     *platform.Cgroups // nil: none

	mu sync.Mutex
	// runners are the runners launched or adopted here, for the fallback.
	runners map[rm.AttemptID]procIdent
	// limits are memory limits asked for before their attempt's launch.
	limits map[rm.AttemptID]uint64
	// limitWarn says once that limits cannot be applied here.
	limitWarn sync.Once
}

// procIdent names one process for good; done, when known, is closed at
// its exit.
type procIdent struct {
	pid   int
	start uint64
	done  <-chan struct{}
}

// WithCgroups makes the launcher put each attempt in a group of c (made
// with platform.OpenCgroups) instead of opening its own at the first launch.
func WithCgroups(c *platform.Cgroups) Option {
	return func(l *Launcher) { l.contain.given = c }
}

// WithoutCgroups runs every attempt without a cgroup of its own, as where
// the host allows none: metered from its runner's process tree, its
// leftovers found by process group and environment marker.
func WithoutCgroups() Option {
	return func(l *Launcher) { l.contain.off = true }
}

// WithLeftoverGrace sets how long the processes an attempt left behind get
// between SIGTERM and SIGKILL when it ends (platform.DefaultLeftoverGrace). Cleanup
// waits that long at most, and only while something ignores SIGTERM.
func WithLeftoverGrace(d time.Duration) Option {
	return func(l *Launcher) { l.contain.grace = max(d, 0) }
}

// cgroups opens the launcher's cgroups at the first need, and says once
// how attempts are contained.
func (l *Launcher) cgroups() *platform.Cgroups {
	c := &l.contain
	c.openMu.Lock()
	defer c.openMu.Unlock()
	if c.opened {
		return c.cg
	}
	c.opened = true
	const fallback = "each attempt's processes are metered from its runner's process tree and stopped by process group and environment marker"
	switch {
	case c.off:
		l.log.Info("attempts run without cgroups (turned off): "+fallback, "data_dir", l.dir.Root())
		return nil
	case c.given != nil:
		c.cg = c.given
	default:
		cg, err := platform.OpenCgroups(platform.CgroupScope(l.dir.Root()))
		if err != nil {
			l.log.Info("attempts run without cgroups: "+fallback, "why", err.Error())
			return nil
		}
		c.cg = cg
	}
	l.log.Info("each attempt runs in a cgroup of its own", "cgroups", c.cg.String())
	for _, why := range c.cg.Limits() {
		l.log.Info("the attempts' cgroups lack a controller", "why", why)
	}
	return c.cg
}

// CgroupsInUse says where the attempts' cgroups are and what they use;
// "" when attempts run without (off Linux, unprivileged without a
// delegated subtree, WithoutCgroups). The meters log it at start.
func (l *Launcher) CgroupsInUse() string {
	if cg := l.cgroups(); cg != nil {
		return cg.String()
	}
	return ""
}

// Cgroups returns the groups the launcher puts attempts in, nil when it
// runs them without.
func (l *Launcher) Cgroups() *platform.Cgroups { return l.cgroups() }

// GroupUsage reads what the attempt's cgroup uses now; false when it has
// none (the meters then walk its runner's process tree).
func (l *Launcher) GroupUsage(a rm.AttemptID) (rm.GroupUsage, bool) {
	g, ok := l.findGroup(a)
	if !ok {
		return rm.GroupUsage{}, false
	}
	u, err := g.Usage()
	return u, err == nil
}

// GroupMemory reads the kernel's word on the attempt's memory (peak,
// limit, OOM kills); false without a cgroup with a memory controller. Ask
// before Cleanup removes the group.
func (l *Launcher) GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool) {
	g, ok := l.findGroup(a)
	if !ok {
		return rm.GroupMemory{}, false
	}
	m, err := g.Memory()
	return m, err == nil
}

func (l *Launcher) findGroup(a rm.AttemptID) (*platform.Cgroup, bool) {
	cg := l.cgroups()
	if cg == nil {
		return nil, false
	}
	return cg.Find(a)
}

// SetMemoryLimit limits the attempt's memory (swap included) to bytes, 0
// for none: at once if its cgroup exists, else when Launch makes it, so
// the runner never runs without it. An error wrapping
// platform.ErrNoMemoryController when attempts have no cgroup with a memory
// controller here.
func (l *Launcher) SetMemoryLimit(a rm.AttemptID, bytes uint64) error {
	cg := l.cgroups()
	if cg == nil || !cg.HasMemoryController() {
		l.contain.limitWarn.Do(func() {
			l.log.Warn("a policy sets a memory limit, but attempts have no cgroup with a memory controller here: they run unlimited")
		})
		return fmt.Errorf("memory limit of attempt %s: %w", a, platform.ErrNoMemoryController)
	}
	if g, ok := cg.Find(a); ok {
		return g.SetMemoryLimit(bytes)
	}
	c := &l.contain
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.limits == nil {
		c.limits = map[rm.AttemptID]uint64{}
	}
	c.limits[a] = bytes
	return nil
}

// attemptGroup makes the attempt's cgroup, with the memory limit asked
// for it; nil (logged) when it runs without one.
func (l *Launcher) attemptGroup(a rm.AttemptID) *platform.Cgroup {
	cg := l.cgroups()
	c := &l.contain
	c.mu.Lock()
	limit, limited := c.limits[a]
	delete(c.limits, a)
	c.mu.Unlock()
	if cg == nil {
		return nil
	}
	g, err := cg.Create(a)
	if err != nil {
		l.log.Warn("the attempt runs without a cgroup of its own", "attempt", a.String(), "err", err)
		return nil
	}
	if limited {
		if err := g.SetMemoryLimit(limit); err != nil {
			l.log.Warn("the attempt's memory limit could not be set", "attempt", a.String(), "limit_bytes", limit, "err", err)
		}
	}
	return g
}

// startRunner starts cmd inside g (nil: as it is). A runner that cannot be
// started inside its group is started without it.
func (l *Launcher) startRunner(a rm.AttemptID, cmd *exec.Cmd, g *platform.Cgroup) error {
	if g == nil {
		return cmd.Start()
	}
	err := g.Start(cmd)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, platform.ErrNotPlaced):
		l.log.Warn("the runner could not start inside its cgroup; it runs without", "attempt", a.String(), "err", err)
		_ = g.Remove()
		return cmd.Start()
	case errors.Is(err, platform.ErrStartedOutside):
		l.log.Warn("the runner started outside its cgroup; it runs without", "attempt", a.String(), "err", err)
		_ = g.Remove()
		return nil
	default:
		_ = g.Remove()
		return err
	}
}

// remember notes the runner of attempt a, for RunnerRunning and the
// fallback at its end.
func (l *Launcher) remember(a rm.AttemptID, pid int, start uint64, done <-chan struct{}) {
	c := &l.contain
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runners == nil {
		c.runners = map[rm.AttemptID]procIdent{}
	}
	c.runners[a] = procIdent{pid, start, done}
}

// RunnerRunning says whether the runner (pid, start) of attempt a still
// runs, from what the launcher knows without a look at the process table:
// the exit notification of a runner it launched or adopted. known is
// false for a runner it does not watch (then ask platform.Alive).
func (l *Launcher) RunnerRunning(a rm.AttemptID, pid int, start uint64) (running, known bool) {
	c := &l.contain
	c.mu.Lock()
	r, ok := c.runners[a]
	c.mu.Unlock()
	if !ok || r.done == nil || r.pid != pid || (start != 0 && r.start != start) {
		return false, false
	}
	select {
	case <-r.done:
		return false, true
	default:
		return true, true
	}
}

// emptyAttempt stops every process the attempt left and removes its
// cgroup: all of its group's members where it has one; else its runner's
// process group and the processes whose environment names it.
func (l *Launcher) emptyAttempt(a rm.AttemptID) error {
	c := &l.contain
	c.mu.Lock()
	runner := c.runners[a]
	delete(c.runners, a)
	delete(c.limits, a)
	c.mu.Unlock()
	grace := platform.DefaultLeftoverGrace
	if c.grace > 0 {
		grace = c.grace
	}
	if g, ok := l.findGroup(a); ok {
		left, err := g.Empty(grace)
		l.logLeftovers(a, left, "cgroup")
		if err != nil {
			return fmt.Errorf("cleanup attempt %s: %w", a, err)
		}
		if err := g.Remove(); err != nil {
			return fmt.Errorf("cleanup attempt %s: %w", a, err)
		}
		return nil
	}
	left, err := reapUncontained(a, runner, grace)
	l.logLeftovers(a, left, "process group and environment marker")
	if err != nil {
		return fmt.Errorf("cleanup attempt %s: %w", a, err)
	}
	return nil
}

// logLeftovers says which processes an attempt left behind, by command.
func (l *Launcher) logLeftovers(a rm.AttemptID, left []platform.Leftover, how string) {
	if len(left) == 0 {
		return
	}
	l.log.Info("stopped the processes the attempt left behind", "attempt", a.String(),
		"processes", len(left), "commands", commandSummary(left), "found_by", how)
}

// commandSummary is "sleep ×2, python3": each command once, with its count.
func commandSummary(left []platform.Leftover) string {
	n := map[string]int{}
	for _, p := range left {
		n[cmp.Or(p.Command, "?")]++
	}
	names := slices.Sorted(maps.Keys(n))
	parts := make([]string, len(names))
	for i, name := range names {
		parts[i] = name
		if n[name] > 1 {
			parts[i] += fmt.Sprintf(" ×%d", n[name])
		}
	}
	return strings.Join(parts, ", ")
}

// closeCgroups removes the empty groups and directories, if any were
// opened.
func (l *Launcher) closeCgroups() error {
	c := &l.contain
	c.openMu.Lock()
	cg := c.cg
	c.openMu.Unlock()
	if cg == nil || cg == c.given {
		return nil // a given Cgroups is its owner's to close
	}
	return cg.Close()
}

// groupRoots lists the attempts with a cgroup, for Roots.
func (l *Launcher) groupRoots() []rm.AttemptID {
	cg := l.cgroups()
	if cg == nil {
		return nil
	}
	ids, err := cg.List()
	if err != nil {
		l.log.Warn("cannot list the attempts' cgroups", "err", err)
	}
	return ids
}
