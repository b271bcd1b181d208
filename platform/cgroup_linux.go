//go:build linux

package platform

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
)

// Cgroups makes and finds the cgroups of one scope's attempts. It is safe
// for concurrent use.
//
// Where the groups go: under the manager's own cgroup in each hierarchy
// (read from /proc/self/cgroup and /proc/self/mountinfo), so they stay
// inside whatever limits and delegation the manager was given.
//
//   - cgroup v2 (the unified hierarchy, at /sys/fs/cgroup or, on hybrid
//     systems, /sys/fs/cgroup/unified): the runner is started inside its
//     group by clone3 (CLONE_INTO_CGROUP, Linux 5.7), so even its first
//     instruction runs there. A group gives exact membership (cgroup.procs),
//     CPU time (cpu.stat) and cgroup.kill (Linux 5.14) even without
//     controllers; with memory, cpu and pids enabled for the manager's
//     children it also gives memory.current/peak/max/events and
//     pids.current. Under systemd, give the service Delegate=yes: the
//     manager then owns its cgroup. The kernel enables controllers for
//     children only in a cgroup that holds no processes itself, so also set
//     DelegateSubgroup=manager (systemd 254): the manager runs in
//     <service>/manager and its attempts' groups go under <service>, which
//     systemd marks delegated (the trusted.delegate or user.delegate
//     attribute, looked for here). Without that the groups have no memory
//     controller: membership, emptying and CPU still work, memory is summed
//     from the members' resident sets, and no limit can be set.
//   - cgroup v1 (memory, cpuacct and pids hierarchies, for what v2 does not
//     have: all of it on v1-only systems, the controllers on hybrid ones):
//     the runner is forked from a thread the manager first moves into the
//     attempt's groups (a thread's tasks entry) and moves back at once, so
//     the runner is born inside them too: no window in which it or a child
//     could start outside. Memory from memory.usage_in_bytes and
//     memory.stat, peak from memory.max_usage_in_bytes, the limit in
//     memory.limit_in_bytes (and memory.memsw.limit_in_bytes), OOM kills
//     from memory.oom_control; CPU from cpuacct.usage.
//
// Making groups needs root or a delegated subtree; OpenCgroups says why
// it cannot.
type Cgroups struct {
	scope  string
	v2     string   // the scope's directory in the unified hierarchy ("" none)
	v2Ctl  []string // controllers enabled for the scope's groups
	clone3 bool     // clone3 can start a child in a cgroup (Linux 5.7)
	v1     []v1Hierarchy
	// whyNot says what is missing (controllers not delegated), for the log.
	whyNot []string

	mu     sync.Mutex
	groups map[rm.AttemptID]*Cgroup
}

// v1Hierarchy is one cgroup v1 hierarchy the groups use.
type v1Hierarchy struct {
	mount    string   // its mount point
	root     string   // the mount's root within the hierarchy
	mountCtl []string // every controller of the hierarchy
	ctl      []string // the controllers used from it (memory, cpuacct, pids)
	scope    string   // the scope's directory in it
}

// cgroupMount is a cgroup filesystem mount from /proc/self/mountinfo.
type cgroupMount struct {
	point, root string
	v2          bool
	controllers []string // v1
}

// OpenCgroups finds where this process may make cgroups, creates the
// scope's directories (<own cgroup>/runner-manager/<scope> in each
// hierarchy used), and enables the memory, cpu and pids controllers for
// them where it may. An error says why no group can be made here (not
// root and nothing delegated, no cgroup filesystem): attempts then run
// uncontained.
func OpenCgroups(scope string) (*Cgroups, error) {
	if scope == "" || strings.ContainsAny(scope, "/.") {
		return nil, fmt.Errorf("cgroups: scope %q must be a plain name", scope)
	}
	mounts, err := cgroupMounts("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	own, err := ownCgroups("/proc/self/cgroup")
	if err != nil {
		return nil, err
	}
	c := &Cgroups{scope: scope, clone3: kernelAtLeast(5, 7), groups: map[rm.AttemptID]*Cgroup{}}
	var errs []error
	if err := c.openV2(mounts, own); err != nil {
		errs = append(errs, err)
	}
	if err := c.openV1(mounts, own); err != nil {
		errs = append(errs, err)
	}
	if c.v2 == "" && len(c.v1) == 0 {
		errs = append(errs, errors.New("no cgroup hierarchy to make groups in"))
		return nil, fmt.Errorf("cgroups: %w", errors.Join(errs...))
	}
	// The scope's directories exist while it has groups: made again by
	// Create, removed with the last group.
	c.dropScopes()
	return c, nil
}

// scopes lists the scope's directory in each hierarchy.
func (c *Cgroups) scopes() []string {
	var out []string
	if c.v2 != "" {
		out = append(out, c.v2)
	}
	for _, h := range c.v1 {
		out = append(out, h.scope)
	}
	return out
}

// prepareScopes makes the scope's directories, with the v2 controllers
// enabled for their groups.
func (c *Cgroups) prepareScopes() error {
	for _, s := range c.scopes() {
		if err := os.MkdirAll(s, 0o755); err != nil {
			return err
		}
	}
	if c.v2 == "" {
		return nil
	}
	for _, dir := range []string{filepath.Dir(c.v2), c.v2} {
		if err := enableControllers(dir, c.v2Ctl); err != nil {
			return err
		}
	}
	return nil
}

// enableControllers enables ctls for dir's children, one at a time.
func enableControllers(dir string, ctls []string) error {
	f := filepath.Join(dir, "cgroup.subtree_control")
	have := strings.Fields(readString(f))
	for _, ctl := range ctls {
		if slices.Contains(have, ctl) {
			continue
		}
		if err := os.WriteFile(f, []byte("+"+ctl), 0); err != nil {
			return fmt.Errorf("enable the %s controller in %s: %w", ctl, dir, err)
		}
	}
	return nil
}

// dropScopes removes the scope's directories and runner-manager/ above
// them where they are empty.
func (c *Cgroups) dropScopes() {
	for _, s := range c.scopes() {
		if unix.Rmdir(s) == nil {
			_ = unix.Rmdir(filepath.Dir(s))
		}
	}
}

// openV2 sets up the scope in the unified hierarchy.
func (c *Cgroups) openV2(mounts []cgroupMount, own map[string]string) error {
	path, ok := own[""]
	if !ok {
		return nil
	}
	i := slices.IndexFunc(mounts, func(m cgroupMount) bool { return m.v2 })
	if i < 0 {
		return nil
	}
	base, ok := inMount(mounts[i], path)
	if !ok {
		return nil
	}
	base = delegatedBase(mounts[i].point, base)
	scope := filepath.Join(base, cgroupDirName, c.scope)
	if err := os.MkdirAll(scope, 0o755); err != nil {
		return fmt.Errorf("cgroup v2: %w", err)
	}
	if err := unix.Access(scope, unix.W_OK); err != nil {
		return fmt.Errorf("cgroup v2: %s is not writable: %w", scope, err)
	}
	c.v2 = scope
	avail := strings.Fields(readString(filepath.Join(base, "cgroup.controllers")))
	var want []string
	for _, ctl := range []string{"memory", "cpu", "pids"} {
		if slices.Contains(avail, ctl) {
			want = append(want, ctl)
		}
	}
	for _, dir := range []string{base, filepath.Dir(scope), scope} {
		for _, ctl := range want {
			if err := enableControllers(dir, []string{ctl}); err != nil {
				why := "cgroup v2: " + err.Error()
				if errors.Is(err, unix.EBUSY) {
					why += " (it holds processes: under systemd set Delegate=yes and DelegateSubgroup=manager)"
				}
				c.whyNot = append(c.whyNot, why)
				want = slices.DeleteFunc(want, func(s string) bool { return s == ctl })
			}
		}
	}
	enabled := strings.Fields(readString(filepath.Join(scope, "cgroup.subtree_control")))
	for _, ctl := range want {
		if slices.Contains(enabled, ctl) {
			c.v2Ctl = append(c.v2Ctl, ctl)
		}
	}
	return nil
}

// openV1 sets up the scope in the v1 hierarchies of memory, cpuacct and
// pids that the unified hierarchy does not provide.
func (c *Cgroups) openV1(mounts []cgroupMount, own map[string]string) error {
	var errs []error
	for _, ctl := range []string{"memory", "cpuacct", "pids"} {
		if c.hasV2(v2Name(ctl)) {
			continue
		}
		i := slices.IndexFunc(mounts, func(m cgroupMount) bool { return slices.Contains(m.controllers, ctl) })
		if i < 0 {
			continue
		}
		m := mounts[i]
		if j := slices.IndexFunc(c.v1, func(h v1Hierarchy) bool { return h.mount == m.point }); j >= 0 {
			c.v1[j].ctl = append(c.v1[j].ctl, ctl) // co-mounted (cpu,cpuacct)
			continue
		}
		path, ok := ownPathFor(own, m.controllers)
		if !ok {
			continue
		}
		base, ok := inMount(m, path)
		if !ok {
			continue
		}
		scope := filepath.Join(base, cgroupDirName, c.scope)
		if err := os.MkdirAll(scope, 0o755); err != nil {
			errs = append(errs, fmt.Errorf("cgroup v1 %s: %w", ctl, err))
			continue
		}
		c.v1 = append(c.v1, v1Hierarchy{mount: m.point, root: m.root, mountCtl: m.controllers, ctl: []string{ctl}, scope: scope})
	}
	return errors.Join(errs...)
}

// v2Name is the v2 controller that serves what v1's ctl does.
func v2Name(ctl string) string {
	if ctl == "cpuacct" {
		return "cpu"
	}
	return ctl
}

func (c *Cgroups) hasV2(ctl string) bool { return slices.Contains(c.v2Ctl, ctl) }

// v1With returns the v1 hierarchy that serves ctl.
func (c *Cgroups) v1With(ctl string) (v1Hierarchy, bool) {
	for _, h := range c.v1 {
		if slices.Contains(h.ctl, ctl) {
			return h, true
		}
	}
	return v1Hierarchy{}, false
}

// String says what the groups use, for the log line at start.
func (c *Cgroups) String() string {
	var parts []string
	if c.v2 != "" {
		what := "membership, cgroup.kill, cpu.stat"
		if len(c.v2Ctl) > 0 {
			what = "controllers " + strings.Join(c.v2Ctl, ", ")
		}
		parts = append(parts, fmt.Sprintf("cgroup v2 %s (%s)", c.v2, what))
	}
	for _, h := range c.v1 {
		parts = append(parts, fmt.Sprintf("cgroup v1 %s (%s)", h.scope, strings.Join(h.ctl, ", ")))
	}
	return strings.Join(parts, "; ")
}

// Limits lists what the host did not allow (controllers not delegated),
// one sentence each; empty when everything is in place.
func (c *Cgroups) Limits() []string { return slices.Clone(c.whyNot) }

// HasMemoryController reports whether the groups have a memory controller:
// memory read from the kernel's counters, limits possible.
func (c *Cgroups) HasMemoryController() bool {
	_, v1 := c.v1With("memory")
	return c.hasV2("memory") || v1
}

// List returns the attempts that have a group in this scope: after a
// restart, the groups to re-adopt or empty.
func (c *Cgroups) List() ([]rm.AttemptID, error) {
	entries, err := os.ReadDir(c.membershipScope())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list attempt cgroups: %w", err)
	}
	var ids []rm.AttemptID
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if id, err := rm.ParseAttemptID(e.Name()); err == nil && !id.IsZero() && id.String() == e.Name() {
			ids = append(ids, id)
		}
	}
	return ids, nil
}

// membershipScope is the scope directory whose groups say who is in an
// attempt: v2's when there is one, else the first v1 hierarchy's.
func (c *Cgroups) membershipScope() string {
	if c.v2 != "" {
		return c.v2
	}
	return c.v1[0].scope
}

// Create makes the attempt's group in every hierarchy used (an existing
// one is taken as it is).
func (c *Cgroups) Create(a rm.AttemptID) (*Cgroup, error) {
	if a.IsZero() {
		return nil, errors.New("cgroup: no attempt named")
	}
	g := c.layout(a)
	var err error
	for range 3 { // again if the last group's Remove took the scope meanwhile
		if err = c.prepareScopes(); err == nil {
			if err = g.mkdirs(); err == nil || !errors.Is(err, fs.ErrNotExist) {
				break
			}
		}
	}
	if err != nil {
		_ = g.removeDirs()
		return nil, fmt.Errorf("cgroup of attempt %s: %w", a, err)
	}
	c.mu.Lock()
	c.groups[a] = g
	c.mu.Unlock()
	return g, nil
}

// mkdirs makes the group's directories; existing ones are kept.
func (g *Cgroup) mkdirs() error {
	for _, dir := range g.dirs {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return err
		}
	}
	return nil
}

// Find returns the attempt's group if it exists (one made by an earlier
// manager of this data directory included).
func (c *Cgroups) Find(a rm.AttemptID) (*Cgroup, bool) {
	c.mu.Lock()
	g, ok := c.groups[a]
	c.mu.Unlock()
	if ok {
		return g, true
	}
	if a.IsZero() {
		return nil, false
	}
	g = c.layout(a)
	if _, err := os.Stat(g.procs); err != nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if have, ok := c.groups[a]; ok {
		return have, true
	}
	c.groups[a] = g
	return g, true
}

// forget drops a removed group from the cache.
func (c *Cgroups) forget(a rm.AttemptID) {
	c.mu.Lock()
	g := c.groups[a]
	delete(c.groups, a)
	c.mu.Unlock()
	if g != nil {
		g.closeFiles()
	}
}

// Close removes every empty group of the scope, then the scope's
// directories if nothing is left in them; groups with processes stay (a
// runner that outlives the manager is adopted at its next start).
func (c *Cgroups) Close() error {
	ids, err := c.List()
	for _, a := range ids {
		g := c.layout(a)
		if n, err := g.count(); err == nil && n == 0 {
			_ = g.removeDirs()
			c.forget(a)
		}
	}
	c.dropScopes()
	return err
}

// cgroupMounts reads the cgroup filesystems from a mountinfo file.
func cgroupMounts(path string) ([]cgroupMount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	defer f.Close()
	var out []cgroupMount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// id parent maj:min root point options [optional…] - type source super
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		f1, f2 := strings.Fields(pre), strings.Fields(post)
		if len(f1) < 5 || len(f2) < 3 {
			continue
		}
		m := cgroupMount{root: unescapeMount(f1[3]), point: unescapeMount(f1[4])}
		switch f2[0] {
		case "cgroup2":
			m.v2 = true
		case "cgroup":
			for _, o := range strings.Split(f2[2], ",") {
				switch o {
				case "memory", "cpuacct", "pids", "cpu", "cpuset", "blkio", "devices", "freezer",
					"net_cls", "net_prio", "perf_event", "hugetlb", "rdma", "misc":
					m.controllers = append(m.controllers, o)
				}
			}
			if len(m.controllers) == 0 {
				continue // a named hierarchy (name=systemd)
			}
		default:
			continue
		}
		out = append(out, m)
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if v, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups reads a /proc/<pid>/cgroup file: the process's cgroup path per
// hierarchy, keyed by its controllers as listed there ("" for v2).
func ownCgroups(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	out := map[string]string{}
	for line := range bytes.SplitSeq(b, []byte{'\n'}) {
		parts := strings.SplitN(string(line), ":", 3)
		if len(parts) != 3 {
			continue
		}
		out[parts[1]] = parts[2]
	}
	return out, nil
}

// inMount is the directory of cgroup path in mount m, if m shows it.
func inMount(m cgroupMount, path string) (string, bool) {
	rel := path
	if m.root != "/" {
		var ok bool
		if rel, ok = strings.CutPrefix(path, m.root); !ok || (rel != "" && rel[0] != '/') {
			return "", false
		}
	}
	return filepath.Join(m.point, rel), true
}

// delegatedBase is where the groups go in the unified hierarchy: the
// manager's own cgroup, or its parent when systemd delegated the parent
// and runs the manager in a subgroup of it (DelegateSubgroup=).
func delegatedBase(mount, own string) string {
	if delegated(own) || own == mount {
		return own
	}
	if parent := filepath.Dir(own); strings.HasPrefix(parent, mount) && delegated(parent) {
		return parent
	}
	return own
}

// delegated reports whether systemd marked the cgroup directory as
// delegated to its unit.
func delegated(dir string) bool {
	var buf [8]byte
	for _, attr := range []string{"trusted.delegate", "user.delegate"} {
		if n, err := unix.Getxattr(dir, attr, buf[:]); err == nil && n > 0 && buf[0] == '1' {
			return true
		}
	}
	return false
}

// kernelAtLeast reports whether the running kernel is major.minor or newer.
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	rel := unix.ByteSliceToString(u.Release[:])
	var ma, mi int
	if _, err := fmt.Sscanf(rel, "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
