package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile/daemon/config"
	"github.com/runner-manager/runner-manager/store"
)

// PolicyCmd groups the policy commands.
type PolicyCmd struct {
	Add    PolicyAddCmd    `cmd:"" help:"Add a policy."`
	List   PolicyListCmd   `cmd:"" aliases:"ls" help:"List policies."`
	Show   PolicyShowCmd   `cmd:"" help:"Show one policy."`
	Edit   PolicyEditCmd   `cmd:"" help:"Change a policy (only the flags given)."`
	Pause  PolicyPauseCmd  `cmd:"" help:"Pause a policy: no new runners; running ones finish their jobs."`
	Resume PolicyResumeCmd `cmd:"" help:"Resume a paused policy."`
	Rm     PolicyRmCmd     `cmd:"" aliases:"remove" help:"Remove a policy (refused while it has live runners: pause it first)."`
	Apply  PolicyApplyCmd  `cmd:"" help:"Make the policies match a TOML file: add, change and remove."`
}

// policySpec is a policy as a user writes it, in flags or in a file.
type policySpec struct {
	Name           string      `toml:"name"`
	Repo           string      `toml:"repo"`
	Org            string      `toml:"org"`
	Enterprise     string      `toml:"enterprise"`
	ScaleSet       string      `toml:"scale_set"`
	Labels         []string    `toml:"labels"`
	RunnerGroup    string      `toml:"runner_group"`
	Max            int         `toml:"max"`
	MinIdle        int         `toml:"min_idle"`
	MemoryEstimate config.Size `toml:"memory_estimate"`
	RunnerDir      string      `toml:"runner_dir"`
	Paused         bool        `toml:"paused"`
	// Spare is nil when the file says nothing: rm.DefaultSpare.
	Spare *int `toml:"spare"`
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", rm.ErrInvalid, fmt.Sprintf(format, args...))
}

// scope returns the one scope the spec names.
func (s policySpec) scope() (rm.Scope, error) {
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
func (s policySpec) target() (rm.ScaleTarget, error) {
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

// build returns the policy the spec describes for host, checked.
func (s policySpec) build(host rm.HostID) (rm.Policy, error) {
	t, err := s.target()
	if err != nil {
		return rm.Policy{}, err
	}
	dir, err := checkRunnerDir(s.RunnerDir)
	if err != nil {
		return rm.Policy{}, err
	}
	p := rm.Policy{
		Name: s.Name, Host: host, Target: t, Backend: rm.BackendNative,
		RunnerDir: dir, MinIdle: s.MinIdle, Max: s.Max, MemoryEstimate: s.MemoryEstimate.Bytes(), Paused: s.Paused,
		Spare: rm.DefaultSpare,
	}
	if s.Spare != nil {
		p.Spare = *s.Spare
	}
	if err := p.Validate(); err != nil {
		return rm.Policy{}, err
	}
	return p, nil
}

// listenerPath is where an installed runner keeps its listener.
func listenerPath(runnerDir string) string {
	name := "Runner.Listener"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	return filepath.Join(runnerDir, "bin", name)
}

// checkRunnerDir refuses a runner directory without a listener; "" (the
// newest installed runner) is accepted as is.
func checkRunnerDir(dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", invalid("runner directory %q: %v", dir, err)
	}
	if _, err := os.Stat(listenerPath(abs)); err != nil {
		return "", invalid("runner directory %s holds no installed runner (no %s): install one with `runner-manager runner install`, or give the directory where you unpacked actions-runner",
			abs, filepath.Join("bin", filepath.Base(listenerPath(abs))))
	}
	return abs, nil
}

// warnNoRunner says when a policy relies on an installed runner that is not
// there yet.
func (a *App) warnNoRunner(p rm.Policy) {
	if p.RunnerDir != "" {
		return
	}
	c, err := a.Config()
	if err != nil {
		return
	}
	if _, err := platform.NewestRunner(filepath.Join(c.DataDir, runnersDir)); err != nil {
		fmt.Fprintf(a.Stderr, "note: no runner is installed yet: run `runner-manager runner install` before `runner-manager run`\n")
	}
}

// PolicyAddCmd adds a policy.
type PolicyAddCmd struct {
	Name           string      `arg:"" help:"Policy name: letters, digits, '.', '-', '_'."`
	Repo           string      `help:"Serve a repository." placeholder:"OWNER/REPO" group:"Where runners register (one of)"`
	Org            string      `help:"Serve an organization." placeholder:"ORG" group:"Where runners register (one of)"`
	Enterprise     string      `help:"Serve an enterprise." placeholder:"SLUG" group:"Where runners register (one of)"`
	ScaleSet       string      `help:"Scale-set mode (recommended): the scale set's name, which jobs use in runs-on." placeholder:"NAME" group:"Which jobs (one of)"`
	Labels         []string    `help:"Classic mode: runner labels (comma separated); jobs whose runs-on labels are all among them." placeholder:"A,B" sep:"," group:"Which jobs (one of)"`
	RunnerGroup    string      `help:"Runner group (default Default)." placeholder:"GROUP"`
	Max            int         `help:"Most runners at once (default ${default})." default:"1" placeholder:"N"`
	MinIdle        int         `help:"Idle runners kept waiting for jobs (default ${default})." default:"0" placeholder:"N"`
	Spare          int         `help:"Scale-set mode: most warm spares, runners listening beyond the jobs so no job waits for one to boot (default ${default}; 0: none; classic mode keeps none)." default:"1" placeholder:"N"`
	MemoryEstimate config.Size `help:"What a job is expected to peak at, until measured (default 2GiB)." placeholder:"SIZE"`
	RunnerDir      string      `help:"An installed runner directory (default: the newest runner install)." placeholder:"DIR" type:"path"`
	Paused         bool        `help:"Add it paused."`
}

// Help is the long help of policy add.
func (c *PolicyAddCmd) Help() string {
	return `A policy says what this host serves: a repository, organization or
enterprise, and which jobs: in scale-set mode (recommended) a scale set that
jobs name in runs-on, with no inbound URL and no REST quota spent while idle;
in classic mode a set of labels. Then how many runners at once (--max), how
many kept idle (--min-idle), and how much memory a job is expected to use
until the manager has measured it (--memory-estimate).

Examples:
  runner-manager policy add home --repo octo-org/app --scale-set home --max 4
  runner-manager policy add gpu --org octo-org --labels linux,gpu --max 1

Everything is checked before anything is written.`
}

// Run adds the policy.
func (c *PolicyAddCmd) Run(ctx context.Context, a *App) error {
	spec := policySpec{
		Name: c.Name, Repo: c.Repo, Org: c.Org, Enterprise: c.Enterprise, ScaleSet: c.ScaleSet, Labels: c.Labels,
		RunnerGroup: c.RunnerGroup, Max: c.Max, MinIdle: c.MinIdle, MemoryEstimate: c.MemoryEstimate,
		RunnerDir: c.RunnerDir, Paused: c.Paused, Spare: &c.Spare,
	}
	// Check with a placeholder host first: nothing is written (not even
	// the data directory) for an invalid policy.
	if _, err := spec.build(rm.NewHostID()); err != nil {
		return err
	}
	host, err := a.Host(ctx)
	if err != nil {
		return err
	}
	p, err := spec.build(host.ID)
	if err != nil {
		return err
	}
	st, err := a.Store(ctx)
	if err != nil {
		return err
	}
	now := time.Now().UTC()
	p.ID, p.CreatedAt, p.UpdatedAt = rm.NewPolicyID(), now, now
	if err := st.InsertPolicy(ctx, p); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return invalid("a policy named %q exists: choose another name, or change it with `runner-manager policy edit %s`", p.Name, p.Name)
		}
		return err
	}
	a.printf("added policy %s: %s, max %d, min idle %d%s\n", p.Name, p.Target, p.Max, p.MinIdle, pausedNote(p))
	a.warnNoRunner(p)
	a.pokeDaemon(ctx)
	return nil
}

func pausedNote(p rm.Policy) string {
	if p.Paused {
		return " (paused)"
	}
	return ""
}

// policyByName reads a policy, with an error that says how to find names.
func policyByName(ctx context.Context, st store.Store, name string) (rm.Policy, error) {
	p, err := st.PolicyByName(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return p, invalid("no policy named %q: `runner-manager policy list` shows them", name)
	}
	return p, err
}

// PolicyListCmd lists policies.
type PolicyListCmd struct {
	JSON bool `help:"Print JSON."`
}

// Run lists the policies.
func (c *PolicyListCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	ps, err := st.Policies(ctx)
	if err != nil {
		return err
	}
	if c.JSON {
		out := make([]policyJSON, 0, len(ps))
		for _, p := range ps {
			out = append(out, toPolicyJSON(p))
		}
		return writeJSON(a.Stdout, out)
	}
	if len(ps) == 0 {
		a.printf("no policies: add one with `runner-manager policy add NAME --repo OWNER/REPO --scale-set NAME`\n")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTARGET\tMODE\tMAX\tMIN-IDLE\tMEMORY\tSTATE")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\n", p.Name, targetShort(p.Target), p.Target.Mode(), p.Max, p.MinIdle, estimate(p), activeWord(p))
	}
	return tw.Flush()
}

func activeWord(p rm.Policy) string {
	if p.Paused {
		return "paused"
	}
	return "active"
}

func estimate(p rm.Policy) string {
	if p.MemoryEstimate == 0 {
		return "default"
	}
	return config.FormatBytes(p.MemoryEstimate)
}

// targetShort prints a target without the default group.
func targetShort(t rm.ScaleTarget) string {
	s := t.Scope.String()
	if t.RunnerGroup != rm.DefaultRunnerGroup {
		s += " group=" + t.RunnerGroup
	}
	if t.ScaleSet != "" {
		return s + " scale-set=" + t.ScaleSet
	}
	return s + " labels=" + strings.Join(t.Labels, ",")
}

// PolicyShowCmd shows one policy.
type PolicyShowCmd struct {
	Name string `arg:"" help:"Policy name."`
	JSON bool   `help:"Print JSON."`
}

// Run shows the policy.
func (c *PolicyShowCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	p, err := policyByName(ctx, st, c.Name)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(a.Stdout, toPolicyJSON(p))
	}
	live, err := st.ActiveAttempts(ctx, p.ID)
	if err != nil {
		return err
	}
	runnerDir := p.RunnerDir
	if runnerDir == "" {
		runnerDir = "the newest installed runner"
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	for _, row := range [][2]string{
		{"name", p.Name},
		{"id", p.ID.String()},
		{"state", activeWord(p)},
		{"scope", p.Target.Scope.String()},
		{"runner group", p.Target.RunnerGroup},
		{"mode", p.Target.Mode().String()},
		{"scale set", p.Target.ScaleSet},
		{"labels", strings.Join(p.Target.Labels, ",")},
		{"max", fmt.Sprint(p.Max)},
		{"min idle", fmt.Sprint(p.MinIdle)},
		{"spare", fmt.Sprint(p.Spare)},
		{"memory estimate", estimate(p)},
		{"runner dir", runnerDir},
		{"backend", string(cmpOr(p.Backend, rm.BackendNative))},
		{"live attempts", fmt.Sprint(len(live))},
		{"host", p.Host.String()},
		{"created", p.CreatedAt.Local().Format(time.RFC3339)},
		{"updated", p.UpdatedAt.Local().Format(time.RFC3339)},
	} {
		if row[1] == "" {
			continue
		}
		fmt.Fprintf(tw, "%s:\t%s\n", row[0], row[1])
	}
	return tw.Flush()
}

func cmpOr[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}

// PolicyEditCmd changes a policy.
type PolicyEditCmd struct {
	Name           string       `arg:"" help:"Policy name."`
	Rename         *string      `help:"New name." placeholder:"NAME"`
	Max            *int         `help:"Most runners at once." placeholder:"N"`
	MinIdle        *int         `help:"Idle runners kept waiting for jobs." placeholder:"N"`
	Spare          *int         `help:"Most warm spares (0: none)." placeholder:"N"`
	MemoryEstimate *config.Size `help:"What a job is expected to peak at, until measured (0: the default)." placeholder:"SIZE"`
	RunnerDir      *string      `help:"An installed runner directory (\"\": the newest runner install)." placeholder:"DIR"`
	RunnerGroup    *string      `help:"Runner group." placeholder:"GROUP"`
	ScaleSet       *string      `help:"Switch to scale-set mode with this scale set." placeholder:"NAME"`
	Labels         []string     `help:"Switch to classic mode with these labels." placeholder:"A,B" sep:","`
}

// Run changes the policy.
func (c *PolicyEditCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	p, err := policyByName(ctx, st, c.Name)
	if err != nil {
		return err
	}
	before := p
	if c.Rename != nil {
		p.Name = *c.Rename
	}
	if c.Max != nil {
		p.Max = *c.Max
	}
	if c.MinIdle != nil {
		p.MinIdle = *c.MinIdle
	}
	if c.Spare != nil {
		p.Spare = *c.Spare
	}
	if c.MemoryEstimate != nil {
		p.MemoryEstimate = c.MemoryEstimate.Bytes()
	}
	if c.RunnerDir != nil {
		dir, err := checkRunnerDir(*c.RunnerDir)
		if err != nil {
			return err
		}
		p.RunnerDir = dir
	}
	if c.ScaleSet != nil && c.Labels != nil {
		return invalid("give --scale-set or --labels, not both")
	}
	t := p.Target
	if c.RunnerGroup != nil {
		t.RunnerGroup = *c.RunnerGroup
	}
	switch {
	case c.ScaleSet != nil:
		t, err = rm.NewScaleSetTarget(t.Scope, t.RunnerGroup, *c.ScaleSet)
	case c.Labels != nil:
		t, err = rm.NewLabelTarget(t.Scope, t.RunnerGroup, c.Labels)
	default:
		t, err = rm.ScaleTarget{Scope: t.Scope, RunnerGroup: t.RunnerGroup, ScaleSet: t.ScaleSet, Labels: t.Labels}, t.Validate()
	}
	if err != nil {
		return err
	}
	p.Target = t
	if err := p.Validate(); err != nil {
		return err
	}
	changes := policyChanges(before, p)
	if len(changes) == 0 {
		a.printf("policy %s: nothing to change\n", before.Name)
		return nil
	}
	p.UpdatedAt = time.Now().UTC()
	if err := st.UpdatePolicy(ctx, p); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return invalid("a policy named %q exists: choose another name", p.Name)
		}
		return err
	}
	a.printf("changed policy %s: %s\n", before.Name, strings.Join(changes, ", "))
	a.pokeDaemon(ctx)
	return nil
}

// policyChanges describes what differs between two versions of a policy.
func policyChanges(old, new rm.Policy) []string {
	var out []string
	add := func(what string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, fmt.Sprintf("%s %v → %v", what, a, b))
		}
	}
	add("name", old.Name, new.Name)
	add("target", targetShort(old.Target), targetShort(new.Target))
	add("max", old.Max, new.Max)
	add("min idle", old.MinIdle, new.MinIdle)
	add("spare", old.Spare, new.Spare)
	add("memory estimate", estimate(old), estimate(new))
	add("runner dir", cmpOr(old.RunnerDir, "(newest)"), cmpOr(new.RunnerDir, "(newest)"))
	add("state", activeWord(old), activeWord(new))
	return out
}

// PolicyPauseCmd pauses a policy.
type PolicyPauseCmd struct {
	Name string `arg:"" help:"Policy name."`
}

// Run pauses the policy.
func (c *PolicyPauseCmd) Run(ctx context.Context, a *App) error {
	return setPaused(ctx, a, c.Name, true)
}

// PolicyResumeCmd resumes a policy.
type PolicyResumeCmd struct {
	Name string `arg:"" help:"Policy name."`
}

// Run resumes the policy.
func (c *PolicyResumeCmd) Run(ctx context.Context, a *App) error {
	return setPaused(ctx, a, c.Name, false)
}

func setPaused(ctx context.Context, a *App, name string, paused bool) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	p, err := policyByName(ctx, st, name)
	if err != nil {
		return err
	}
	if p.Paused == paused {
		a.printf("policy %s is already %s\n", p.Name, activeWord(p))
		return nil
	}
	p.Paused = paused
	p.UpdatedAt = time.Now().UTC()
	if err := st.UpdatePolicy(ctx, p); err != nil {
		return err
	}
	if paused {
		a.printf("paused policy %s: no new runners; running ones finish their jobs\n", p.Name)
	} else {
		a.printf("resumed policy %s\n", p.Name)
	}
	a.pokeDaemon(ctx)
	return nil
}

// PolicyRmCmd removes a policy.
type PolicyRmCmd struct {
	Name string `arg:"" help:"Policy name."`
}

// Run removes the policy.
func (c *PolicyRmCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	p, err := policyByName(ctx, st, c.Name)
	if err != nil {
		return err
	}
	if err := st.DeletePolicy(ctx, p.ID); err != nil {
		if errors.Is(err, store.ErrConflict) {
			return fmt.Errorf("policy %s still has live runners: pause it (`runner-manager policy pause %s`), wait for them to finish (`runner-manager status`), then remove it", p.Name, p.Name)
		}
		return err
	}
	a.printf("removed policy %s and its ended attempts\n", p.Name)
	a.pokeDaemon(ctx)
	return nil
}

// policyJSON is the stable JSON form of a policy.
type policyJSON struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Host           string   `json:"host"`
	Scope          string   `json:"scope"`
	RunnerGroup    string   `json:"runner_group"`
	Mode           string   `json:"mode"`
	ScaleSet       string   `json:"scale_set,omitempty"`
	Labels         []string `json:"labels,omitempty"`
	Backend        string   `json:"backend"`
	RunnerDir      string   `json:"runner_dir,omitempty"`
	Max            int      `json:"max"`
	MinIdle        int      `json:"min_idle"`
	Spare          int      `json:"spare"`
	MemoryEstimate uint64   `json:"memory_estimate_bytes"`
	Paused         bool     `json:"paused"`
	CreatedAt      string   `json:"created_at"`
	UpdatedAt      string   `json:"updated_at"`
}

func toPolicyJSON(p rm.Policy) policyJSON {
	return policyJSON{
		ID: p.ID.String(), Name: p.Name, Host: p.Host.String(), Scope: p.Target.Scope.String(),
		RunnerGroup: p.Target.RunnerGroup, Mode: p.Target.Mode().String(), ScaleSet: p.Target.ScaleSet,
		Labels: p.Target.Labels, Backend: string(cmpOr(p.Backend, rm.BackendNative)), RunnerDir: p.RunnerDir,
		Max: p.Max, MinIdle: p.MinIdle, Spare: p.Spare, MemoryEstimate: p.MemoryEstimate, Paused: p.Paused,
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339Nano), UpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339Nano),
	}
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
