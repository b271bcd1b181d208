package policyedit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/store"
)

// Edit is a change of some of a policy's settings: a nil field (or nil
// Labels) leaves the setting as it is.
type Edit struct {
	Rename         *string
	Max, MinIdle   *int
	MemoryEstimate *uint64
	// RunnerDir "" means the newest installed runner.
	RunnerDir   *string
	RunnerGroup *string
	// ScaleSet switches to scale-set mode, Labels to classic mode.
	ScaleSet *string
	Labels   []string
	Paused   *bool
	// Monitor makes the policy monitor-only (true: it starts no runner)
	// or a serving one again (false).
	Monitor *bool
	// Spare is the most warm spares (0: none; rm.SpareAuto: sized by the
	// day).
	Spare *int
	// Fleet makes the policy the fleet's (true) or its host's again
	// (false: the host that added it, Policy.Host); refused while it has
	// live runners (CheckFleetFlip).
	Fleet *bool
	// Cold runs the policy's attempts without a workspace slot (true) or
	// in one again (false).
	Cold *bool
}

// Apply returns p with the edit made, checked (errors wrap rm.ErrInvalid)
// by the rules every policy holds: an edit leaves the backend and its
// settings as they were checked when the policy was made (Spec.Build).
func (e Edit) Apply(p rm.Policy) (rm.Policy, error) {
	if e.ScaleSet != nil && e.Labels != nil {
		return p, invalid("give --scale-set or --labels, not both")
	}
	set(&p.Name, e.Rename)
	set(&p.Max, e.Max)
	set(&p.MinIdle, e.MinIdle)
	set(&p.MemoryEstimate, e.MemoryEstimate)
	set(&p.Paused, e.Paused)
	set(&p.Monitor, e.Monitor)
	set(&p.Spare, e.Spare)
	set(&p.Fleet, e.Fleet)
	set(&p.Cold, e.Cold)
	if e.RunnerDir != nil {
		dir, err := CheckRunnerDir(*e.RunnerDir)
		if err != nil {
			return p, err
		}
		p.RunnerDir = dir
	}
	t := p.Target
	set(&t.RunnerGroup, e.RunnerGroup)
	var err error
	switch {
	case e.ScaleSet != nil:
		t, err = rm.NewScaleSetTarget(t.Scope, t.RunnerGroup, *e.ScaleSet)
	case e.Labels != nil:
		t, err = rm.NewLabelTarget(t.Scope, t.RunnerGroup, e.Labels)
	default:
		t, err = rm.ScaleTarget{Scope: t.Scope, RunnerGroup: t.RunnerGroup, ScaleSet: t.ScaleSet, Labels: t.Labels}, t.Validate()
	}
	if err != nil {
		return p, err
	}
	p.Target = t
	return p, p.Validate()
}

// Write makes the edit of p in the journal if it changes anything, and
// returns the policy as written with what changed (nothing, and p, when
// the edit changes nothing). A name another policy has is refused with
// rm.ErrInvalid.
func (e Edit) Write(ctx context.Context, st store.Store, p rm.Policy) (rm.Policy, []string, error) {
	q, err := e.Apply(p)
	if err != nil {
		return p, nil, err
	}
	changes := Changes(p, q)
	if len(changes) == 0 {
		return p, nil, nil
	}
	if err := CheckStore(st, q); err != nil {
		return p, nil, err
	}
	if err := CheckFleetFlip(ctx, st, p, q); err != nil {
		return p, nil, err
	}
	q.UpdatedAt = time.Now().UTC()
	if err := st.UpdatePolicy(ctx, q); err != nil {
		var taken *store.TargetTakenError
		if errors.As(err, &taken) {
			return p, nil, invalid("%v", taken)
		}
		if errors.Is(err, store.ErrConflict) {
			return p, nil, invalid("a policy named %q exists: choose another name", q.Name)
		}
		return p, nil, fmt.Errorf("write policy %s to the journal: %w", q.Name, err)
	}
	return q, changes, nil
}

// CheckFleetFlip refuses to make a policy the fleet's, or a host's again,
// while it has live runners. A host policy's runners and its scale set's
// message session are its host's: made the fleet's, another host could
// take the fleet's lease and serve the scale set beside them. A fleet
// policy's runners run on any host: made one host's, those elsewhere would
// be left to a host that no longer serves the policy, and only their own
// host may conclude them. Paused and drained, the change is safe.
func CheckFleetFlip(ctx context.Context, st store.Store, old, new rm.Policy) error {
	if old.Fleet == new.Fleet || old.ID.IsZero() {
		return nil
	}
	live, err := st.ActiveAttempts(ctx, old.ID)
	if err != nil {
		return err
	}
	if len(live) == 0 {
		return nil
	}
	what := "make it the fleet's"
	if old.Fleet {
		what = "make it one host's"
	}
	return fmt.Errorf("policy %s has %d live runner(s): pause it (`runner-manager policy pause %s`), wait for them to finish (`runner-manager status`), then %s and resume it (while runners live, their host holds the scale set's session); nothing was changed",
		old.Name, len(live), old.Name, what)
}

func set[T any](dst *T, v *T) {
	if v != nil {
		*dst = *v
	}
}

// Changes describes what differs between two versions of a policy, one
// "what old → new" entry per setting.
func Changes(old, new rm.Policy) []string {
	var out []string
	add := func(what string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, fmt.Sprintf("%s %v → %v", what, a, b))
		}
	}
	add("name", old.Name, new.Name)
	add("target", ShortTarget(old.Target), ShortTarget(new.Target))
	add("max", old.Max, new.Max)
	add("min idle", old.MinIdle, new.MinIdle)
	add("spare", Spare(old.Spare), Spare(new.Spare))
	add("memory estimate", Estimate(old), Estimate(new))
	add("runner dir", or(old.RunnerDir, "(newest)"), or(new.RunnerDir, "(newest)"))
	add("memory limit", limitText(old), limitText(new))
	add("backend", old.Backend.OrDefault(), new.Backend.OrDefault())
	add("container", old.Container, new.Container)
	add("vm", old.VM, new.VM)
	add("state", State(old), State(new))
	add("fleet", yesNo(old.Fleet), yesNo(new.Fleet))
	add("workspace", warmText(old), warmText(new))
	return out
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func warmText(p rm.Policy) string {
	if p.Cold {
		return "cold"
	}
	return "warm"
}

// Warmth says whether a policy's attempts run warm, in a workspace slot
// of its repository kept between its jobs (docs/warm.md), and if not
// why; enabled is the host's [warm] enabled. A launcher that cannot keep
// a slot on this host runs its attempts cold as well, which the daemon
// says when it happens.
func Warmth(p rm.Policy, enabled bool) (warm bool, why string) {
	switch {
	case !enabled:
		return false, "warm jobs are off on this host ([warm] enabled = false)"
	case p.Cold:
		return false, "the policy's own switch (--cold; `policy edit --warm` turns it back)"
	case p.Target.Scope.Kind != rm.ScopeRepository:
		what := "an organization's"
		if p.Target.Scope.Kind == rm.ScopeEnterprise {
			what = "an enterprise's"
		}
		return false, what + " policy: its jobs' repository is known only once a job runs"
	}
	return true, ""
}

// ShortTarget writes a target without the default runner group:
// "repo:octo/app scale-set=home", "org:octo labels=linux,gpu".
func ShortTarget(t rm.ScaleTarget) string {
	s := t.Scope.String()
	if t.RunnerGroup != rm.DefaultRunnerGroup {
		s += " group=" + t.RunnerGroup
	}
	if t.ScaleSet != "" {
		return s + " scale-set=" + t.ScaleSet
	}
	return s + " labels=" + strings.Join(t.Labels, ",")
}

// Estimate writes a policy's memory estimate ("default" when it has none).
func Estimate(p rm.Policy) string {
	if p.MemoryEstimate == 0 {
		return "default"
	}
	return bytesize.Format(p.MemoryEstimate)
}

func limitText(p rm.Policy) string {
	switch p.MemoryLimit {
	case 0:
		return "none"
	case rm.MemoryLimitFromPeaks:
		return "from peaks"
	}
	return bytesize.Format(p.MemoryLimit)
}

// State is "paused" or "active".
func State(p rm.Policy) string {
	switch {
	case p.Paused && p.Monitor:
		return "paused (monitor only)"
	case p.Paused:
		return "paused"
	case p.Monitor:
		return "monitor only"
	}
	return "active"
}

// Arms says in plain words what a policy in force does: how many runners
// it may start, or that it starts none (monitor only, paused).
func Arms(p rm.Policy) string {
	switch {
	case p.Monitor && p.Paused:
		return "monitors only, and is paused: watches nothing until `runner-manager policy resume " + p.Name + "`; starts no runner"
	case p.Monitor:
		return "monitors only: watches " + p.Target.Scope.String() + "'s jobs, their waits and GitHub's budget; starts no runner"
	case p.Paused:
		return "is paused: starts no runner until `runner-manager policy resume " + p.Name + "`"
	}
	out := fmt.Sprintf("will start up to %d runner", p.Max)
	if p.Max != 1 {
		out += "s"
	}
	out += " at once for its jobs"
	if p.MinIdle > 0 {
		out += fmt.Sprintf(", keeping %d idle", p.MinIdle)
	}
	switch n := p.Spares(); {
	case n > 0 && p.SparesAuto():
		out += fmt.Sprintf(", plus warm spares sized by the day (at most %d)", n)
	case n > 0:
		out += fmt.Sprintf(", plus up to %d warm spares", n)
	}
	return out
}

func or[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// equal compares what a user sets of a policy.
func equal(a, b rm.Policy) bool {
	return a.Name == b.Name && a.Target.Key() == b.Target.Key() && a.Target.String() == b.Target.String() &&
		a.Backend.OrDefault() == b.Backend.OrDefault() && a.RunnerDir == b.RunnerDir &&
		a.MinIdle == b.MinIdle && a.Max == b.Max && a.MemoryEstimate == b.MemoryEstimate && a.Paused == b.Paused && a.Monitor == b.Monitor &&
		a.Spare == b.Spare && a.Fleet == b.Fleet && a.Cold == b.Cold &&
		a.MemoryLimit == b.MemoryLimit && fmt.Sprint(a.Container) == fmt.Sprint(b.Container) && fmt.Sprint(a.VM) == fmt.Sprint(b.VM)
}
