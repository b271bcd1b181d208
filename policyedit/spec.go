// Package policyedit turns policies as a user writes them (command flags,
// or a TOML file of [[policy]] tables) into journal changes: a Spec builds
// a checked policy, an Edit changes one, and a Plan compares a file with a
// host's policies in the journal and applies the difference in one
// transaction (store.Store.ApplyPolicies): all of the file or none of it.
package policyedit

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/store"
)

// Spec is a policy as a user writes it, in flags or in a file.
type Spec struct {
	Name           string          `toml:"name"`
	Repo           string          `toml:"repo"`
	Org            string          `toml:"org"`
	Enterprise     string          `toml:"enterprise"`
	ScaleSet       string          `toml:"scale_set"`
	Labels         []string        `toml:"labels"`
	RunnerGroup    string          `toml:"runner_group"`
	Max            int             `toml:"max"`
	MinIdle        int             `toml:"min_idle"`
	MemoryEstimate configfile.Size `toml:"memory_estimate"`
	RunnerDir      string          `toml:"runner_dir"`
	Paused         bool            `toml:"paused"`
	// Monitor makes the policy monitor-only (rm.Policy.Monitor): it
	// watches its target's demand and starts no runner.
	Monitor bool `toml:"monitor"`
	// Fleet makes the policy the fleet's (rm.Policy.Fleet): served by
	// every host sharing a PostgreSQL store.
	Fleet bool `toml:"fleet"`
	// Cold runs the policy's attempts from nothing (rm.Policy.Cold): no
	// workspace slot kept between its repository's jobs.
	Cold bool `toml:"cold"`
	// Spare is nil when the file says nothing: rm.DefaultSpare (auto).
	Spare *Spare `toml:"spare"`
	// MemoryLimit caps each attempt's memory (0: none).
	MemoryLimit configfile.Size `toml:"memory_limit"`
	// Backend is "native" (the default), "container" or "vm". Image is
	// the container backend's image reference, or the vm backend's image
	// directory; CPUs, Network, Env and Volumes are for the container
	// backend only, VMForward for the vm backend only.
	Backend string   `toml:"backend"`
	Image   string   `toml:"image"`
	CPUs    float64  `toml:"cpus"`
	Network string   `toml:"network"`
	Env     []string `toml:"env"`
	Volumes []string `toml:"volumes"`
	// VMForward are the host services ("host:port") the vm backend's
	// guests reach beyond the host's [vm] forward (rm.VMSettings.Forward).
	VMForward []string `toml:"vm_forward"`
}

// backend is the spec's backend and its settings, as its kind among
// kinds takes them (rm.BackendKind.FromUser: the vm backend's image
// directory is made absolute and must hold an image); a backend none of
// them names keeps them as written, for Build's check to refuse.
func (s Spec) backend(kinds []rm.BackendKind) (rm.Backend, rm.ContainerSettings, rm.VMSettings, error) {
	b := rm.Backend(strings.TrimSpace(s.Backend)).OrDefault()
	u := rm.UserSettings{Image: s.Image, CPUs: s.CPUs, Network: s.Network, Env: s.Env, Volumes: s.Volumes, Forward: s.VMForward}
	k, ok := rm.KindOf(kinds, rm.Policy{Backend: b})
	if !ok {
		box, fwd := u.AsWritten()
		return b, box, fwd, nil
	}
	box, machine, err := k.FromUser(u)
	if err != nil {
		return b, box, machine, invalid("policy %q: %v", s.Name, err)
	}
	return b, box, machine, nil
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", rm.ErrInvalid, fmt.Sprintf(format, args...))
}

// scope returns the one scope the spec names.
func (s Spec) scope() (rm.Scope, error) {
	n := 0
	for _, v := range []string{s.Repo, s.Org, s.Enterprise} {
		if v != "" {
			n++
		}
	}
	switch {
	case n == 0:
		return rm.Scope{}, invalid("policy %q names no scope: give --repo OWNER/REPO, --org ORG or --enterprise SLUG", s.Name)
	case n > 1:
		return rm.Scope{}, invalid("policy %q names more than one scope: give only one of --repo, --org, --enterprise", s.Name)
	case s.Repo != "":
		return rm.Repository(s.Repo)
	case s.Org != "":
		return rm.Organization(s.Org)
	}
	return rm.Enterprise(s.Enterprise)
}

// target returns the spec's scale target.
func (s Spec) target() (rm.ScaleTarget, error) {
	scope, err := s.scope()
	if err != nil {
		return rm.ScaleTarget{}, err
	}
	labels := slices.DeleteFunc(slices.Clone(s.Labels), func(l string) bool { return strings.TrimSpace(l) == "" })
	switch {
	case s.ScaleSet != "" && len(s.Labels) > 0:
		return rm.ScaleTarget{}, invalid("policy %q: give --scale-set (scale-set mode) or --labels (classic mode), not both", s.Name)
	case s.ScaleSet != "":
		return rm.NewScaleSetTarget(scope, s.RunnerGroup, s.ScaleSet)
	case len(s.Labels) > 0 && len(labels) < len(s.Labels):
		return rm.ScaleTarget{}, invalid("policy %q: a label is empty (labels are comma separated: --labels linux,gpu)", s.Name)
	case len(labels) > 0:
		return rm.NewLabelTarget(scope, s.RunnerGroup, labels)
	}
	return rm.ScaleTarget{}, invalid("policy %q has no labels and no scale set: give --scale-set NAME (scale-set mode, jobs use runs-on: NAME) or --labels a,b (classic mode)", s.Name)
}

// MinMemoryEstimate is the smallest memory estimate a policy takes: below
// it a size was surely mistyped (no runner starts in less).
const MinMemoryEstimate = 16 << 20

// Build returns the policy the spec describes for host, checked (errors
// wrap rm.ErrInvalid), its backend by kinds, the backends known (package
// backends lists them). It has no id or timestamps yet.
func (s Spec) Build(host rm.HostID, kinds []rm.BackendKind) (rm.Policy, error) {
	if e := s.MemoryEstimate; e != 0 && e < MinMemoryEstimate {
		return rm.Policy{}, invalid("policy %q: memory estimate %s is below %s: give what a job peaks at, such as 2GiB",
			s.Name, e, configfile.Size(MinMemoryEstimate))
	}
	t, err := s.target()
	if err != nil {
		return rm.Policy{}, err
	}
	dir, err := CheckRunnerDir(s.RunnerDir)
	if err != nil {
		return rm.Policy{}, err
	}
	backend, box, machine, err := s.backend(kinds)
	if err != nil {
		return rm.Policy{}, err
	}
	p := rm.Policy{
		Name: s.Name, Host: host, Target: t, Backend: backend, Container: box, VM: machine,
		RunnerDir: dir, MinIdle: s.MinIdle, Max: s.Max, MemoryEstimate: s.MemoryEstimate.Bytes(),
		MemoryLimit: s.MemoryLimit.Bytes(), Paused: s.Paused, Monitor: s.Monitor, Fleet: s.Fleet, Cold: s.Cold,
		Spare: rm.DefaultSpare,
	}
	if s.Spare != nil {
		p.Spare = int(*s.Spare)
	}
	if err := p.ValidateWith(kinds); err != nil {
		return rm.Policy{}, err
	}
	return p, nil
}

// Insert builds the policy for host (Build) and adds it to the journal,
// with a new id, stamped now. A name the journal has is refused with
// rm.ErrInvalid.
func (s Spec) Insert(ctx context.Context, st store.Store, host rm.HostID, kinds []rm.BackendKind) (rm.Policy, error) {
	p, err := s.Build(host, kinds)
	if err != nil {
		return p, err
	}
	if err := CheckStore(st, p); err != nil {
		return p, err
	}
	if p.Target.ScaleSet != "" {
		existing, err := st.Policies(ctx)
		if err != nil {
			return p, err
		}
		for _, o := range existing {
			if o.Target.Key() == p.Target.Key() {
				return p, rm.WithClass(rm.ClassConflict, invalid("policy %q serves %s already: one scale set is one policy's (their runners would mix); change that policy, or give another --scale-set", o.Name, p.Target))
			}
		}
	}
	now := time.Now().UTC()
	p.ID, p.CreatedAt, p.UpdatedAt = rm.NewPolicyID(), now, now
	if err := st.InsertPolicy(ctx, p); err != nil {
		var taken *store.TargetTakenError
		if errors.As(err, &taken) {
			return p, invalid("%v", taken)
		}
		if errors.Is(err, store.ErrConflict) {
			return p, invalid("a policy named %q exists: choose another name, or change it with `runner-manager policy edit %s`", p.Name, p.Name)
		}
		return p, err
	}
	return p, nil
}

// CheckStore refuses (rm.ErrInvalid) a fleet policy in a store that
// cannot serve one: its hosts must share the store, and it must hold the
// lease and the shares of the fleet's scale sets (store.FleetSets:
// PostgreSQL). The SQLite journal is one host's.
func CheckStore(st store.Store, p rm.Policy) error {
	if !p.Fleet {
		return nil
	}
	if _, ok := st.(store.FleetSets); ok {
		return nil
	}
	return NeedsFleetStore(p)
}

// NeedsFleetStore is the refusal of fleet policy p in a store of one
// host's: for a caller that knows so before it opens the store (nothing
// is written then, not even the store).
func NeedsFleetStore(p rm.Policy) error {
	return invalid("policy %q is a fleet policy (--fleet, fleet = true), served by every host sharing the store: that store must be PostgreSQL ([store] url; docs/fleet.md), and this one is one host's (the SQLite journal in the data directory); nothing was written", p.Name)
}

// CheckRunnerDir returns dir with a leading "~" expanded and made absolute
// (relative to the current directory), refusing (rm.ErrInvalid) a
// directory that holds no installed runner; "" (the newest installed
// runner) is accepted as is.
func CheckRunnerDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	dir, err := configfile.ExpandTilde(dir, nil)
	if err != nil {
		return "", invalid("runner directory: %v", err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", invalid("runner directory %q: %v", dir, err)
	}
	listener := runnerpkg.ListenerPath(abs)
	if _, err := os.Stat(listener); err != nil {
		return "", invalid("runner directory %s holds no installed runner (no %s): install one with `runner-manager runner install`, or give the directory where you unpacked actions-runner",
			abs, filepath.Join("bin", filepath.Base(listener)))
	}
	return abs, nil
}

// ByName reads the policy named name; a name the journal does not know is
// an error wrapping rm.ErrInvalid that says where names are listed.
func ByName(ctx context.Context, st store.Store, name string) (rm.Policy, error) {
	p, err := st.PolicyByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return p, rm.WithClass(rm.ClassNotFound, invalid("no policy named %q: `runner-manager policy list` shows them", name))
	}
	return p, err
}
