package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/runnerpkg"
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
	Rm     PolicyRmCmd     `cmd:"" aliases:"remove" help:"Remove a policy, keeping its attempt history unless --purge (refused while it has live runners: pause it first)."`
	Apply  PolicyApplyCmd  `cmd:"" help:"Make the policies match a TOML file: add, change and remove."`
	Move   PolicyMoveCmd   `cmd:"" help:"Hand a policy to another host sharing the store (refused while it has live runners)."`
}

func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: %s", rm.ErrInvalid, fmt.Sprintf(format, args...))
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
	if _, err := runnerpkg.Newest(c.DataDir); err != nil {
		fmt.Fprintf(a.Stderr, "note: no runner is installed yet: run `runner-manager runner install` before `runner-manager run`\n")
	}
}

// noteAdmissible says when a policy's max is more than this host's memory
// can hold at its memory estimate: the max is kept (admission cuts it), but
// the user learns what to expect.
func (a *App) noteAdmissible(p rm.Policy) {
	c, err := a.Config()
	if err != nil {
		return
	}
	total, _, err := platform.HostMemory()
	reserve := c.Admission.MemoryReserve.Bytes()
	if err != nil || total <= reserve {
		return
	}
	est := p.MemoryEstimate
	if est == 0 {
		est = reconcile.DefaultMemoryEstimate
	}
	if fits := int((total - reserve) / est); p.Max > fits {
		fmt.Fprintf(a.Stderr, "note: max %d is more than this host can hold: %s of memory (less the %s reserve) admits about %d runners of %s at once; admission holds the rest back\n",
			p.Max, bytesize.Format(total), bytesize.Format(reserve), fits, bytesize.Format(est))
	}
}

// PolicyAddCmd adds a policy.
type PolicyAddCmd struct {
	Name           string           `arg:"" help:"Policy name: letters, digits, '.', '-', '_'."`
	Repo           string           `help:"Serve a repository." placeholder:"OWNER/REPO" group:"Where runners register (one of)"`
	Org            string           `help:"Serve an organization." placeholder:"ORG" group:"Where runners register (one of)"`
	Enterprise     string           `help:"Serve an enterprise." placeholder:"SLUG" group:"Where runners register (one of)"`
	ScaleSet       string           `help:"Scale-set mode (recommended): the scale set's name, which jobs use in runs-on." placeholder:"NAME" group:"Which jobs (one of)"`
	Labels         []string         `help:"Classic mode: runner labels (comma separated; without case, as GitHub: Linux,linux is one); jobs whose runs-on labels are all among them and the implicit self-hosted, OS and architecture labels." placeholder:"A,B" sep:"," group:"Which jobs (one of)"`
	RunnerGroup    string           `help:"Runner group (default Default)." placeholder:"GROUP"`
	Max            int              `help:"Most jobs at once: the capacity GitHub is told, so it never assigns more (default ${default}); warm spares (--spare) listen beyond it." default:"1" placeholder:"N"`
	MinIdle        int              `help:"Idle runners kept waiting for jobs (default ${default})." default:"0" placeholder:"N"`
	Spare          policyedit.Spare `help:"Scale-set mode: warm spares, runners listening beyond --max so the next job finds one instead of waiting for a boot: auto (the default) keeps as many as the jobs' pace and the measured boot call for, one while quiet, at most twice max (and 8), within memory and the host's max_spares; N keeps at most N; 0 none. Classic mode keeps none." default:"auto" placeholder:"auto|N"`
	MemoryEstimate configfile.Size  `help:"What a job is expected to peak at, until measured (default 2GiB)." placeholder:"SIZE"`
	RunnerDir      string           `help:"An installed runner directory (default: the newest runner install)." placeholder:"DIR" type:"path"`
	Paused         bool             `help:"Add it paused."`
	Monitor        bool             `help:"Monitor only: watch the target's jobs, their waits and GitHub's budget (status, jobs, the TUI) and never start a runner."`
	Fleet          bool             `help:"Served by every host of the fleet (a PostgreSQL journal): one holds the scale set's session, each job is placed on a host with room; --max bounds the fleet's jobs at once."`
	Offline        bool             `help:"Do not ask GitHub whether the repository (organization, enterprise), the runner group and the scale set exist."`
	MemoryLimit    configfile.Size  `help:"Cap each runner's memory: a job going over is killed and concluded as OOM-killed (default: no limit)." placeholder:"SIZE"`
	Cold           bool             `help:"Run every job from nothing: no workspace slot kept between the repository's jobs (docs/warm.md). A repository's policy runs warm by default."`

	Backend string   `help:"How runners are isolated: native (host processes), container (a new container per job) or vm (a new microVM per job)." enum:"native,container,vm" default:"native" group:"Container and VM backends"`
	Image   string   `help:"Container backend: the image holding the runner (see docs/containers.md). VM backend: the image directory (see docs/vm.md)." placeholder:"IMAGE" group:"Container and VM backends"`
	CPUs    float64  `name:"cpus" help:"Container backend: CPUs each container may use (default: no limit)." placeholder:"N" group:"Container and VM backends"`
	Network string   `help:"Container backend: the engine network (host, none, bridge or a name; default the engine's)." placeholder:"NET" group:"Container and VM backends"`
	Env     []string `help:"Container backend: a variable of the manager's environment to pass in (repeatable; NAME* for a prefix)." placeholder:"NAME" group:"Container and VM backends"`
	Volume  []string `help:"Container backend: a volume for caches, SRC:DST[:ro] (repeatable)." placeholder:"SRC:DST" group:"Container and VM backends"`

	VMForward []string `name:"vm-forward" help:"VM backend: a host service the guests may reach, HOST:PORT (repeatable or comma separated); by default they reach GitHub's services and the host's [vm] forward only." placeholder:"HOST:PORT" sep:"," group:"Container and VM backends"`
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
  runner-manager policy add boxed --repo octo-org/app --scale-set boxed --max 4 \
      --backend container --image ghcr.io/actions/actions-runner:latest \
      --memory-limit 4GiB --cpus 2 --volume gocache:/cache
  runner-manager policy add forks --repo octo-org/app --scale-set forks --max 2 \
      --backend vm --image /var/lib/runner-manager/images/debian --memory-limit 4GiB \
      --vm-forward cache.lan:8080

In classic mode every runner also has three implicit labels, which the
official runner adds: self-hosted, its OS (Linux, macOS, Windows) and its
architecture (X64, ARM64, ARM, X86); "policy show" lists them. A job whose
runs-on labels are all among a runner's labels runs on it, so --labels
self-hosted alone serves every job of the repository (or organization)
asking for a self-hosted runner of this OS and architecture: give a label of its own
(--labels self-hosted,gpu) and name it in runs-on. Labels ignore case, as
GitHub matches them: Linux,linux is one label, kept as first spelled.

Everything is checked before anything is written, at GitHub too when
credentials are configured: the repository (organization, enterprise)
exists and they may manage its runners, the runner group exists, and
whether the scale set exists (the daemon creates it if not). --offline
skips GitHub.

A policy is this host's; with --fleet it is the fleet's, served by every
host sharing a PostgreSQL store ([store] url): one host holds the scale
set's session at a time, and each job goes to a host with room. --max then
bounds the fleet's jobs at once, and each host's own admission (memory,
disk, [host] max_jobs) its share (docs/fleet.md):
  runner-manager policy add home --repo octo-org/app --scale-set home --max 12 --fleet`
}

// Run adds the policy.
func (c *PolicyAddCmd) Run(ctx context.Context, a *App) error {
	if c.MemoryEstimate == 0 && a.flagGiven("--memory-estimate") {
		return invalid("--memory-estimate 0: give what a job peaks at, such as 2GiB (leave the flag out for the default, %s)",
			bytesize.Format(reconcile.DefaultMemoryEstimate))
	}
	spec := policyedit.Spec{
		Name: c.Name, Repo: c.Repo, Org: c.Org, Enterprise: c.Enterprise, ScaleSet: c.ScaleSet, Labels: c.Labels,
		RunnerGroup: c.RunnerGroup, Max: c.Max, MinIdle: c.MinIdle, MemoryEstimate: c.MemoryEstimate,
		RunnerDir: c.RunnerDir, Paused: c.Paused, Monitor: c.Monitor, MemoryLimit: c.MemoryLimit, Spare: &c.Spare, Fleet: c.Fleet, Cold: c.Cold,
		Backend: c.Backend, Image: c.Image, CPUs: c.CPUs, Network: c.Network, Env: c.Env, Volumes: c.Volume,
		VMForward: c.VMForward,
	}
	// Check with a placeholder host first: nothing is written (not even
	// the data directory) for an invalid policy.
	draft, err := spec.Build(rm.NewHostID(), backend.All())
	if err != nil {
		return err
	}
	if draft.Fleet {
		// Known from the configuration: the SQLite journal is not made
		// for a policy it cannot hold.
		cfg, err := a.Config()
		if err != nil {
			return err
		}
		if !daemon.StoreConfigOf(cfg).Postgres() {
			return policyedit.NeedsFleetStore(draft)
		}
	}
	checked := func() {}
	if !c.Offline {
		if checked, err = a.checkAtGitHub(ctx, draft); err != nil {
			return err
		}
	}
	host, err := a.Host(ctx)
	if err != nil {
		return err
	}
	st, err := a.Store(ctx)
	if err != nil {
		return err
	}
	p, err := spec.Insert(ctx, st, host.ID, backend.All())
	if err != nil {
		return err
	}
	a.printf("added policy %s: %s, max %d, min idle %d%s%s\n", p.Name, p.Target, p.Max, p.MinIdle, fleetNote(p), pausedNote(p))
	a.printf("it %s\n", policyedit.Arms(p))
	checked()
	if p.Monitor {
		a.pokeDaemon(ctx)
		return nil
	}
	if !p.Fleet { // a fleet's max is no one host's to hold
		a.noteAdmissible(p)
	}
	a.noteLabels(ctx, st, c.Labels, p)
	a.warnNoRunner(p)
	a.pokeDaemon(ctx)
	return nil
}

// fleetNote says a policy is the fleet's.
func fleetNote(p rm.Policy) string {
	if p.Fleet {
		return ", the fleet's (every host serves it)"
	}
	return ""
}

func pausedNote(p rm.Policy) string {
	if p.Paused {
		return " (paused)"
	}
	return ""
}

// PolicyListCmd lists policies.
type PolicyListCmd struct {
	All  bool `help:"List the removed policies too, kept for their attempt history."`
	JSON bool `help:"Print JSON."`
}

// Run lists the policies.
func (c *PolicyListCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ReadStore(ctx)
	if err != nil {
		return err
	}
	ps, err := st.Policies(ctx)
	if err != nil {
		return err
	}
	if c.All {
		removed, err := st.RemovedPolicies(ctx)
		if err != nil {
			return err
		}
		ps = append(ps, removed...)
	}
	if c.JSON {
		out := make([]policyJSON, 0, len(ps))
		for _, p := range ps {
			out = append(out, a.withWarmth(toPolicyJSON(p, implicitLabels(ctx, st, p)), p))
		}
		return writeJSON(a.Stdout, out)
	}
	if len(ps) == 0 {
		a.printf("no policies: add one with `runner-manager policy add NAME --repo OWNER/REPO --scale-set NAME`\n")
		return nil
	}
	hosts := hostNames(ctx, st)
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tTARGET\tMODE\tHOST\tMAX\tMIN-IDLE\tMEMORY\tWORKSPACE\tSTATE")
	for _, p := range ps {
		state := policyedit.State(p)
		if !p.RemovedAt.IsZero() {
			state = "removed " + p.RemovedAt.Local().Format(time.DateTime)
		}
		warmth, _ := policyedit.Warmth(p, a.warmEnabled())
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", p.Name, policyedit.ShortTarget(p.Target), p.Target.Mode(), servedBy(p, hosts), p.Max, p.MinIdle, policyedit.Estimate(p), warmText(warmth), state)
	}
	return tw.Flush()
}

// PolicyShowCmd shows one policy.
type PolicyShowCmd struct {
	Name string `arg:"" help:"Policy name." predictor:"policy"`
	JSON bool   `help:"Print JSON."`
}

// Run shows the policy.
func (c *PolicyShowCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ReadStore(ctx)
	if err != nil {
		return err
	}
	p, err := policyedit.ByName(ctx, st, c.Name)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(a.Stdout, a.withWarmth(toPolicyJSON(p, implicitLabels(ctx, st, p)), p))
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
		{"state", policyedit.State(p)},
		{"arms", policyedit.Arms(p)},
		{"scope", p.Target.Scope.String()},
		{"runner group", p.Target.RunnerGroup},
		{"mode", p.Target.Mode().String()},
		{"scale set", p.Target.ScaleSet},
		{"labels", strings.Join(p.Target.Labels, ",")},
		{"implicit labels", implicitRow(implicitLabels(ctx, st, p))},
		{"max", fmt.Sprint(p.Max)},
		{"min idle", fmt.Sprint(p.MinIdle)},
		{"spare", spareRow(p)},
		{"memory estimate", policyedit.Estimate(p)},
		{"runner dir", runnerDir},
		{"backend", string(p.Backend.OrDefault())},
		{"workspace", a.warmthRow(p)},
		{"vm image", p.VM.Image},
		{"vm forward", vmForwardRow(p)},
		{"live attempts", fmt.Sprint(len(live))},
		{"host", hostRow(p, hostNames(ctx, st))},
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

// hostNames maps the store's hosts to their names; empty when it cannot
// tell (ids are shown then).
func hostNames(ctx context.Context, st store.Store) map[rm.HostID]string {
	out := map[rm.HostID]string{}
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return out
	}
	for _, h := range hosts {
		out[h.ID] = h.Name
	}
	return out
}

// servedBy is who serves a policy, for people: "fleet" (every host) or
// its host's name.
func servedBy(p rm.Policy, hosts map[rm.HostID]string) string {
	if p.Fleet {
		return "fleet"
	}
	if n := hosts[p.Host]; n != "" {
		return n
	}
	return cmpOr(p.Host.String(), "-")
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
	Name           string            `arg:"" help:"Policy name." predictor:"policy"`
	Rename         *string           `help:"New name." placeholder:"NAME"`
	Max            *int              `help:"Most jobs at once (the capacity GitHub is told)." placeholder:"N"`
	MinIdle        *int              `help:"Idle runners kept waiting for jobs." placeholder:"N"`
	Spare          *policyedit.Spare `help:"Warm spares: auto (sized by the day), N at most, 0 none." placeholder:"auto|N"`
	MemoryEstimate *configfile.Size  `help:"What a job is expected to peak at, until measured (0: the default)." placeholder:"SIZE"`
	RunnerDir      *string           `help:"An installed runner directory (\"\": the newest runner install)." placeholder:"DIR"`
	RunnerGroup    *string           `help:"Runner group." placeholder:"GROUP"`
	ScaleSet       *string           `help:"Switch to scale-set mode with this scale set." placeholder:"NAME"`
	Labels         []string          `help:"Switch to classic mode with these labels." placeholder:"A,B" sep:","`
	Cold           bool              `help:"Run its jobs from nothing: no workspace slot kept between the repository's jobs."`
	Warm           bool              `help:"Run its jobs in workspace slots again (a repository's policy; the default)."`
	Fleet          *bool             `help:"Make it the fleet's, served by every host of a PostgreSQL store (--fleet), or its host's again (--no-fleet): refused while it has live runners." negatable:""`
	Monitor        *bool             `help:"Monitor only: watch its jobs and start no runner (--monitor), or serve them again (--no-monitor)." negatable:""`
}

// Run changes the policy.
func (c *PolicyEditCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	before, err := policyedit.ByName(ctx, st, c.Name)
	if err != nil {
		return err
	}
	e := policyedit.Edit{Rename: c.Rename, Max: c.Max, MinIdle: c.MinIdle, RunnerDir: c.RunnerDir,
		RunnerGroup: c.RunnerGroup, ScaleSet: c.ScaleSet, Labels: c.Labels, Fleet: c.Fleet, Monitor: c.Monitor}
	switch {
	case c.Cold && c.Warm:
		return invalid("give --cold or --warm, not both")
	case c.Cold, c.Warm:
		e.Cold = new(c.Cold)
	}
	if c.Spare != nil {
		e.Spare = new(int(*c.Spare))
	}
	if c.MemoryEstimate != nil {
		e.MemoryEstimate = new(c.MemoryEstimate.Bytes())
	}
	after, changes, err := e.Write(ctx, st, before)
	if err != nil {
		return err
	}
	if len(changes) == 0 {
		a.printf("policy %s: nothing to change\n", before.Name)
		return nil
	}
	a.printf("changed policy %s: %s\n", before.Name, strings.Join(changes, ", "))
	if before.Fleet && !after.Fleet {
		a.printf("policy %s is served by host %s only now, the host that added it (`runner-manager policy move %s --host HOST` hands it to another)\n",
			after.Name, servedBy(after, hostNames(ctx, st)), after.Name)
	}
	if c.Labels != nil {
		a.noteLabels(ctx, st, c.Labels, after)
	}
	a.pokeDaemon(ctx)
	return nil
}

// PolicyPauseCmd pauses a policy.
type PolicyPauseCmd struct {
	Name string `arg:"" help:"Policy name." predictor:"policy"`
}

// Run pauses the policy.
func (c *PolicyPauseCmd) Run(ctx context.Context, a *App) error {
	return setPaused(ctx, a, c.Name, true)
}

// PolicyResumeCmd resumes a policy.
type PolicyResumeCmd struct {
	Name string `arg:"" help:"Policy name." predictor:"policy"`
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
	p, err := policyedit.ByName(ctx, st, name)
	if err != nil {
		return err
	}
	if _, changes, err := (policyedit.Edit{Paused: &paused}).Write(ctx, st, p); err != nil {
		return err
	} else if len(changes) == 0 {
		a.printf("policy %s is already %s\n", p.Name, policyedit.State(p))
		return nil
	}
	if paused {
		a.printf("paused policy %s: no new runners; running ones finish their jobs\n", p.Name)
	} else {
		a.printf("resumed policy %s\n", p.Name)
	}
	a.pokeDaemon(ctx)
	return nil
}

// policyJSON is the stable JSON form of a policy (docs/json.md): every key
// always present.
type policyJSON struct {
	ID             string   `json:"id"`
	Name           string   `json:"name"`
	Host           string   `json:"host"`
	Scope          string   `json:"scope"`
	RunnerGroup    string   `json:"runner_group"`
	Mode           string   `json:"mode"`
	ScaleSet       string   `json:"scale_set"`
	Labels         []string `json:"labels"`
	ImplicitLabels []string `json:"implicit_labels"`
	Backend        string   `json:"backend"`
	RunnerDir      string   `json:"runner_dir"`
	Max            int      `json:"max"`
	MinIdle        int      `json:"min_idle"`
	Spare          int      `json:"spare"`
	SpareAuto      bool     `json:"spare_auto"`
	MemoryEstimate uint64   `json:"memory_estimate_bytes"`
	Paused         bool     `json:"paused"`
	Monitor        bool     `json:"monitor"`
	Fleet          bool     `json:"fleet"`
	// Cold is the policy's own switch; Warm whether its attempts run in
	// workspace slots on this host, ColdWhy why not.
	Cold      bool     `json:"cold"`
	Warm      bool     `json:"warm"`
	ColdWhy   string   `json:"cold_why"`
	VMForward []string `json:"vm_forward"`
	CreatedAt string   `json:"created_at"`
	UpdatedAt string   `json:"updated_at"`
	RemovedAt *string  `json:"removed_at"`
}

// warmEnabled is the host's [warm] enabled (its default when the
// configuration cannot be read: the command reading it says why).
func (a *App) warmEnabled() bool {
	c, err := a.Config()
	if err != nil {
		return configfile.DefaultWarm().Enabled
	}
	return c.Warm.Enabled
}

// withWarmth adds whether p runs warm on this host to its JSON form.
func (a *App) withWarmth(j policyJSON, p rm.Policy) policyJSON {
	j.Warm, j.ColdWhy = policyedit.Warmth(p, a.warmEnabled())
	return j
}

// warmthRow is policy show's workspace: warm, or cold and why.
func (a *App) warmthRow(p rm.Policy) string {
	if warm, why := policyedit.Warmth(p, a.warmEnabled()); !warm {
		return "cold: " + why
	}
	return "warm: jobs run in workspace slots of " + p.Target.Scope.Name + " kept between its jobs (`runner-manager warm list`)"
}

func warmText(warm bool) string {
	if warm {
		return "warm"
	}
	return "cold"
}

// hostRow is policy show's host: its id and name, and for a fleet
// policy that every host serves it.
func hostRow(p rm.Policy, hosts map[rm.HostID]string) string {
	h := p.Host.String()
	if n := hosts[p.Host]; n != "" {
		h = n + " (" + h + ")"
	}
	if p.Fleet {
		return "the fleet's: every host serves it (added by " + h + ")"
	}
	return h
}

// implicitRow is policy show's row of the implicit labels: "" (no row) in
// scale-set mode.
func implicitRow(implicit []string) string {
	if len(implicit) == 0 {
		return ""
	}
	return strings.Join(implicit, ",") + " (every runner has them; runs-on of only these matches any runner)"
}

// toPolicyJSON is p's JSON form; implicit are its runners' implicit labels
// (implicitLabels).
func toPolicyJSON(p rm.Policy, implicit []string) policyJSON {
	var removed *string
	if !p.RemovedAt.IsZero() {
		removed = new(p.RemovedAt.UTC().Format(time.RFC3339Nano))
	}
	return policyJSON{
		ID: p.ID.String(), Name: p.Name, Host: p.Host.String(), Scope: p.Target.Scope.String(),
		RunnerGroup: p.Target.RunnerGroup, Mode: p.Target.Mode().String(), ScaleSet: p.Target.ScaleSet,
		Labels: append([]string{}, p.Target.Labels...), ImplicitLabels: append([]string{}, implicit...), Backend: string(p.Backend.OrDefault()), RunnerDir: p.RunnerDir,
		Max: p.Max, MinIdle: p.MinIdle, Spare: p.Spares(), SpareAuto: p.SparesAuto() && p.Spares() > 0, MemoryEstimate: p.MemoryEstimate, Paused: p.Paused, Monitor: p.Monitor, Fleet: p.Fleet, Cold: p.Cold,
		VMForward: append([]string{}, p.VM.Forward...),
		CreatedAt: p.CreatedAt.UTC().Format(time.RFC3339Nano), UpdatedAt: p.UpdatedAt.UTC().Format(time.RFC3339Nano),
		RemovedAt: removed,
	}
}

func writeJSON(w interface{ Write([]byte) (int, error) }, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// vmForwardRow is policy show's vm forward: "" (no row) but for a VM
// policy (the one with an image directory), whose guests reach GitHub
// (and the host's [vm] forward) only unless it opens more.
func vmForwardRow(p rm.Policy) string {
	if p.VM.Image == "" {
		return ""
	}
	if len(p.VM.Forward) == 0 {
		return "none (GitHub's services and the host's [vm] forward only)"
	}
	return strings.Join(p.VM.Forward, ",") + " (beside GitHub's services and the host's [vm] forward)"
}

// spareRow is policy show's spare: the cap in scale-set mode; none in
// classic mode, where an idle registered runner would take any matching job.
func spareRow(p rm.Policy) string {
	if p.Target.Mode() == rm.ModeClassic {
		return "0 (classic mode keeps none)"
	}
	if p.SparesAuto() {
		return fmt.Sprintf("auto (sized by the day: one while quiet, at most %d)", p.Spares())
	}
	return fmt.Sprint(p.Spare)
}

// checkTimeout bounds policy add's questions to GitHub.
const checkTimeout = 30 * time.Second

// checkAtGitHub asks GitHub whether the policy's target can be served
// (github.Client.CheckTarget) and returns how to say what it found, once
// the policy is added. A target GitHub does not know is bad input; GitHub
// not answering is an error too, with --offline as the way past it.
// Without credentials configured there is nothing to ask with: the policy
// is added unchecked, and that is said.
func (a *App) checkAtGitHub(ctx context.Context, p rm.Policy) (report func(), _ error) {
	client, err := a.GitHub()
	if errors.Is(err, configfile.ErrNoCredentials) {
		return func() {
			fmt.Fprintf(a.Stderr, "note: policy %s is not checked at GitHub: no credentials are configured; `runner-manager doctor` checks them and the policies' scopes once they are\n", p.Name)
		}, nil
	}
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	chk, err := client.CheckTarget(ctx, p.Target)
	const past = "nothing was written; --offline adds the policy without asking GitHub"
	switch {
	case errors.Is(err, rm.ErrNotFound):
		return nil, fmt.Errorf("policy %s: %w\n(%s)", p.Name, err, past)
	case errors.Is(err, rm.ErrInvalid):
		return nil, fmt.Errorf("%w: policy %s: %w\n(%s)", rm.ErrInvalid, p.Name, err, past)
	case err != nil:
		return nil, fmt.Errorf("policy %s: GitHub did not confirm its target: %w\n(%s)", p.Name, err, past)
	}
	out := fmt.Sprintf("checked at GitHub: %s, runner group %s", p.Target.Scope, cmpOr(p.Target.RunnerGroup, rm.DefaultRunnerGroup))
	if p.Target.Mode() == rm.ModeScaleSet {
		if chk.ScaleSetID != 0 {
			out += fmt.Sprintf("; scale set %s exists (id %d) and will be served", p.Target.ScaleSet, chk.ScaleSetID)
		} else {
			out += fmt.Sprintf("; scale set %s does not exist yet: the daemon creates it when it starts", p.Target.ScaleSet)
		}
	}
	return func() { a.printf("%s\n", out) }, nil
}
