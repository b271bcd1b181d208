package policyedit

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/store"
)

// File is a policy file: every policy a host should have, one [[policy]]
// table each.
type File struct {
	// Path names the file in errors.
	Path   string `toml:"-"`
	Policy []Spec `toml:"policy"`
	// Backends are the backends known (package backend lists them): each
	// policy's backend is checked by its own.
	Backends []rm.BackendKind `toml:"-"`
	// lines are the lines of the [[policy]] headers, for errors.
	lines []int
}

// ReadFile reads and decodes a policy file, refusing unknown keys (with
// their line) and checking every policy (Check) with kinds, the backends
// known.
func ReadFile(path string, kinds []rm.BackendKind) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, invalid("read %s: %v", path, err)
	}
	f := File{Path: path, Backends: kinds, lines: policyLines(data)}
	if _, _, err := configfile.DecodeStrict(path, data, &f); err != nil {
		return File{}, err
	}
	// A policy without max gets 1, as `policy add` gives it.
	var maxes struct {
		Policy []struct {
			Max *int `toml:"max"`
		} `toml:"policy"`
	}
	if _, err := toml.Decode(string(data), &maxes); err == nil {
		for i := range f.Policy {
			if i < len(maxes.Policy) && maxes.Policy[i].Max == nil {
				f.Policy[i].Max = 1
			}
		}
	}
	// A runner_dir is written as the configuration's paths are: "~" and
	// $VAR expanded, a relative one beside the file.
	base, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return File{}, invalid("read %s: %v", path, err)
	}
	for i := range f.Policy {
		dir, err := configfile.ExpandPath(f.Policy[i].RunnerDir, base, nil)
		if err != nil {
			return File{}, invalid("%s: policy %q: runner_dir: %v", f.at(i), f.Policy[i].Name, err)
		}
		f.Policy[i].RunnerDir = dir
	}
	return f, f.Check()
}

// Check checks every policy of the file, without the journal: names given
// and distinct, each policy valid.
func (f File) Check() error {
	seen := map[string]bool{}
	targets := map[string]string{}
	for i, s := range f.Policy {
		if s.Name == "" {
			return invalid("%s: policy #%d has no name", f.at(i), i+1)
		}
		if seen[s.Name] {
			return invalid("%s: policy %q is listed twice", f.at(i), s.Name)
		}
		seen[s.Name] = true
		p, err := s.Build(rm.NewHostID(), f.Backends)
		if err != nil {
			return fmt.Errorf("%s: %w", f.at(i), err)
		}
		if other, ok := targets[p.Target.Key()]; ok && p.Target.ScaleSet != "" {
			return invalid("%s: policies %q and %q both serve %s: one scale set is one policy's (their runners would mix)", f.at(i), other, s.Name, p.Target)
		}
		targets[p.Target.Key()] = s.Name
	}
	return nil
}

// at names policy i of the file in errors: "path:line", the line of its
// [[policy]] header when the file was read, else the path.
func (f File) at(i int) string {
	if i < len(f.lines) {
		return fmt.Sprintf("%s:%d", f.Path, f.lines[i])
	}
	return f.Path
}

// policyLines are the lines (from 1) of the [[policy]] headers of data.
func policyLines(data []byte) []int {
	var out []int
	for n, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "[[") && strings.TrimSpace(strings.Trim(strings.SplitN(t, "#", 2)[0], "[] \t")) == "policy" {
			out = append(out, n+1)
		}
	}
	return out
}

// Op is what a plan does to one policy.
type Op byte

// The operations, printed as a plan prints them.
const (
	Add    Op = '+'
	Change Op = '~'
	Remove Op = '-'
)

// Step is one change of a plan.
type Step struct {
	Op     Op
	Policy rm.Policy
	// Changes describes a Change (see Changes).
	Changes []string
}

// Plan is what makes a host's policies in the journal match a file.
type Plan []Step

// Make compares the file with host's policies in the journal: a policy
// missing from the journal is added, one that differs is changed (keeping
// its id), and one of host's the file does not list is removed. Fleet
// policies are every host's: any host's file changes one, only the file of
// the host that added it removes it. It refuses a name that another
// host's policy holds, a fleet policy in a store that cannot serve one
// (CheckStore), the removal of a policy with live runners (the user pauses
// it first) and a change of who serves one with live runners
// (CheckFleetFlip); nothing is written.
func Make(ctx context.Context, st store.Store, host rm.HostID, f File) (Plan, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	existing, err := st.Policies(ctx)
	if err != nil {
		return nil, err
	}
	byName := map[string]rm.Policy{}
	for _, p := range existing {
		byName[p.Name] = p
	}
	var plan Plan
	listed := map[string]bool{}
	for _, s := range f.Policy {
		listed[s.Name] = true
		want, err := s.Build(host, f.Backends)
		if err != nil {
			return nil, err
		}
		if err := CheckStore(st, want); err != nil {
			return nil, fmt.Errorf("%s: %w", f.Path, err)
		}
		old, ok := byName[s.Name]
		switch {
		case !ok:
			plan = append(plan, Step{Op: Add, Policy: want})
			continue
		case !old.IsOwnedBy(host):
			return nil, invalid("%s: policy %q belongs to another host (%s): rename it in the file", f.Path, s.Name, old.Host)
		}
		want.ID, want.CreatedAt, want.UpdatedAt = old.ID, old.CreatedAt, old.UpdatedAt
		// A fleet policy keeps the host that added it, whichever host's
		// file changes it; made a host policy by this file, it is this
		// host's.
		if old.Fleet && want.Fleet {
			want.Host = old.Host
		}
		ch := Changes(old, want)
		if old.Host != want.Host && !want.Fleet {
			ch = append(ch, fmt.Sprintf("host %s → %s (this host)", old.Host, want.Host))
		}
		if len(ch) > 0 || !equal(old, want) {
			if err := CheckFleetFlip(ctx, st, old, want); err != nil {
				return nil, err
			}
			plan = append(plan, Step{Op: Change, Policy: want, Changes: ch})
		}
	}
	for _, p := range existing {
		// A fleet policy is every host's to serve but only its adder's
		// file removes it: another host's file that does not list it
		// must not take it from the whole fleet.
		if !p.IsOwnedBy(host) || listed[p.Name] || p.Host != host {
			continue
		}
		live, err := st.ActiveAttempts(ctx, p.ID)
		if err != nil {
			return nil, err
		}
		if len(live) > 0 {
			return nil, fmt.Errorf("policy %s is not in %s but still has %d live runner(s): pause it (`runner-manager policy pause %s`), wait for them to finish, and apply again; nothing was changed",
				p.Name, f.Path, len(live), p.Name)
		}
		plan = append(plan, Step{Op: Remove, Policy: p})
	}
	return plan, nil
}

// Changes are the plan's store changes, stamped now; new policies get
// their ids here.
func (p Plan) Changes(now time.Time) store.PolicyChanges {
	var c store.PolicyChanges
	for _, s := range p {
		pol := s.Policy
		switch s.Op {
		case Add:
			pol.ID, pol.CreatedAt, pol.UpdatedAt = rm.NewPolicyID(), now, now
			c.Insert = append(c.Insert, pol)
		case Change:
			pol.UpdatedAt = now
			c.Update = append(c.Update, pol)
		case Remove:
			c.Delete = append(c.Delete, pol.ID)
		}
	}
	return c
}

// Apply makes the plan in one transaction: all of it, or nothing when a
// change is refused (a name taken or a runner started since the plan was
// made).
func (p Plan) Apply(ctx context.Context, st store.Store, now time.Time) error {
	if err := st.ApplyPolicies(ctx, p.Changes(now)); err != nil {
		return fmt.Errorf("apply the policies: %w (nothing was changed)", err)
	}
	return nil
}
