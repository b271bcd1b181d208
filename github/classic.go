package github

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v88/github"
	rm "github.com/runner-manager/runner-manager"
)

// ClassicOptions tunes a classic-mode target.
type ClassicOptions struct {
	// OS and Arch of the runners (Go names; default: this host's). They give
	// the Linux/macOS/Windows and X64/ARM64 labels.
	OS, Arch string
	// Labels are added to the target's labels.
	Labels []string
	// NoDefaultLabels leaves out self-hosted and the OS/arch labels.
	NoDefaultLabels bool
	// NamePrefix is this host's runner name prefix. When set, a conflicting
	// registration is removed only if its name has it, and an in-progress
	// job counts as demand only while it runs on one of our runners.
	NamePrefix string
	// PollInterval between two demand polls of a repository (default
	// DefaultClassicPoll, 2 s); a webhook nudge polls at once. Targets of one scope share
	// one poll, at the shortest interval any of them asks.
	PollInterval time.Duration
	// BusyPollInterval replaces PollInterval while the last poll left
	// queued jobs unread because the figure already kept every target
	// launching (or, for an organization, while webhook-named jobs are
	// being followed): default DefaultClassicBusyPoll, at most PollInterval.
	BusyPollInterval time.Duration
	// WorkFolder is the runner's work directory, relative to its root
	// (default "_work").
	WorkFolder string
	// Logger defaults to the client's.
	Logger *slog.Logger
}

// ClassicTarget is a classic-mode target: runners registered with REST
// generate-jitconfig under a label set, demand polled from a repository's
// queued and in-progress jobs (conditional requests: an unchanged poll
// costs no quota) by a watcher shared with every classic target of the
// repository or, for an organization or enterprise, from the jobs that
// workflow_job webhooks passed to Notify name, as the API reports them.
// Min idle is the reconcile loop's business; without webhooks an
// organization target sees no demand.
type ClassicTarget struct {
	c      *Client
	target rm.ScaleTarget
	opts   ClassicOptions
	labels []string
	log    *slog.Logger
	// scopeLog is for the scope's watcher, which serves other targets too.
	scopeLog *slog.Logger

	groupMu sync.Mutex
	groupID int64
}

// A ClassicTarget is both sides of a loop's target.
var (
	_ rm.Registrar    = (*ClassicTarget)(nil)
	_ rm.DemandSource = (*ClassicTarget)(nil)
	// Every classic target of a repository on one Client reads one runner list.
	_ rm.SharedRunnerLister = (*ClassicTarget)(nil)
)

// jobState is a job as the API last said.
type jobState struct {
	id         int64
	repo       string
	status     string
	runID      int64
	runnerID   int64
	runnerName string
	conclusion string
	workflow   string
	name       string
	labels     []string
	seen       time.Time
	queuedAt   time.Time // the job's created_at
	// startedAt and completedAt are the job's: when a runner took it (the
	// REST started_at, which GitHub sets to created_at while the job is
	// queued: REST description, get-job-for-workflow-run) and when it
	// completed; zero until then.
	startedAt   time.Time
	completedAt time.Time
}

// NewClassicTarget returns the classic-mode side of target. It sends
// nothing.
func NewClassicTarget(c *Client, target rm.ScaleTarget, opts ClassicOptions) (*ClassicTarget, error) {
	if err := target.Validate(); err != nil {
		return nil, err
	}
	if target.Mode() != rm.ModeClassic {
		return nil, fmt.Errorf("%w: target %s names a scale set: use NewScaleSetTarget", rm.ErrInvalid, target)
	}
	if opts.OS == "" {
		opts.OS = runtime.GOOS
	}
	if opts.Arch == "" {
		opts.Arch = runtime.GOARCH
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = DefaultClassicPoll
	}
	if opts.BusyPollInterval <= 0 {
		opts.BusyPollInterval = DefaultClassicBusyPoll
	}
	opts.BusyPollInterval = min(opts.BusyPollInterval, opts.PollInterval)
	if opts.WorkFolder == "" {
		opts.WorkFolder = "_work"
	}
	log := opts.Logger
	if log == nil {
		log = c.log
	}
	labels := runnerLabels(target.Labels, opts.Labels, opts.OS, opts.Arch, opts.NoDefaultLabels)
	if len(labels) > 100 {
		return nil, fmt.Errorf("%w: %d runner labels: GitHub accepts at most 100", rm.ErrInvalid, len(labels))
	}
	return &ClassicTarget{
		c: c, target: target, opts: opts, labels: labels,
		log: log.With("target", target.Short()), scopeLog: log,
	}, nil
}

// Labels are the labels runners register with.
func (t *ClassicTarget) Labels() []string { return slices.Clone(t.labels) }

// Close holds nothing in classic mode.
func (t *ClassicTarget) Close(context.Context) error { return nil }

// Nudge makes the scope's watcher poll at once (at most once a second).
func (t *ClassicTarget) Nudge() {
	if w := t.c.classic.existing(t.target.Scope); w != nil {
		w.Nudge()
	}
}

// JITConfig registers runnerName with the target's labels and runner group.
// A registration of the same name (409) is looked up, removed when it is
// ours, and the registration retried once.
func (t *ClassicTarget) JITConfig(ctx context.Context, runnerName string) (rm.JITConfig, error) {
	action := "register runner " + runnerName + " for " + t.target.Scope.String()
	gid, err := t.runnerGroupID(ctx)
	if err != nil {
		return rm.JITConfig{}, err
	}
	req := &gh.GenerateJITConfigRequest{Name: runnerName, RunnerGroupID: gid, Labels: t.labels, WorkFolder: &t.opts.WorkFolder}
	for try := 0; ; try++ {
		jit, err := t.generateJIT(ctx, req)
		if err == nil {
			out := rm.JITConfig{RunnerID: jit.GetRunner().GetID(), RunnerName: jit.GetRunner().GetName(), Encoded: jit.GetEncodedJITConfig()}
			if out.RunnerName == "" {
				out.RunnerName = runnerName
			}
			if out.Encoded == "" || out.RunnerID == 0 {
				return rm.JITConfig{}, fmt.Errorf("%s: GitHub answered without a runner id or configuration", action)
			}
			return out, nil
		}
		status, _, _ := statusOf(err)
		if status != http.StatusConflict || try > 0 {
			if status == http.StatusConflict {
				return rm.JITConfig{}, fmt.Errorf("%s: the name is still taken after removing the old registration: %w", action, err)
			}
			return rm.JITConfig{}, restError(err, action, t.target.Scope)
		}
		if t.opts.NamePrefix != "" && !strings.HasPrefix(runnerName, t.opts.NamePrefix) {
			return rm.JITConfig{}, fmt.Errorf("%s: a runner of that name exists and is not ours (no %q prefix): pick another name", action, t.opts.NamePrefix)
		}
		old, err := t.runnerByName(ctx, runnerName)
		if err != nil {
			return rm.JITConfig{}, err
		}
		if old != nil {
			t.log.Info("removing a stale registration of the same name", "runner", runnerName, "id", old.ID)
			if err := t.RemoveRunner(ctx, old.ID); err != nil {
				return rm.JITConfig{}, fmt.Errorf("%s: the name is taken: %w", action, err)
			}
		}
	}
}

func (t *ClassicTarget) generateJIT(ctx context.Context, req *gh.GenerateJITConfigRequest) (*gh.JITRunnerConfig, error) {
	s := t.target.Scope
	switch s.Kind {
	case rm.ScopeRepository:
		owner, repo, _ := strings.Cut(s.Name, "/")
		jit, _, err := t.c.gh.Actions.GenerateRepoJITConfig(ctx, owner, repo, req)
		return jit, err
	case rm.ScopeOrganization:
		jit, _, err := t.c.gh.Actions.GenerateOrgJITConfig(ctx, s.Name, req)
		return jit, err
	default:
		jit, _, err := t.c.gh.Enterprise.GenerateEnterpriseJITConfig(ctx, s.Name, req)
		return jit, err
	}
}

// runnerGroupID looks the target's runner group up by name once; the
// Default group is 1 everywhere. A repository has only the Default group.
func (t *ClassicTarget) runnerGroupID(ctx context.Context) (int64, error) {
	name := t.target.RunnerGroup
	if name == "" || strings.EqualFold(name, rm.DefaultRunnerGroup) {
		return 1, nil
	}
	t.groupMu.Lock()
	defer t.groupMu.Unlock()
	if t.groupID != 0 {
		return t.groupID, nil
	}
	id, err := findRunnerGroup(ctx, t.c.gh, t.target.Scope, name)
	if err != nil {
		return 0, err
	}
	t.groupID = id
	return id, nil
}

func findRunnerGroup(ctx context.Context, c *gh.Client, s rm.Scope, name string) (int64, error) {
	action := fmt.Sprintf("find runner group %q in %s", name, s)
	opts := gh.ListOptions{PerPage: 100}
	for {
		var (
			groups []*gh.RunnerGroup
			resp   *gh.Response
			err    error
		)
		switch s.Kind {
		case rm.ScopeOrganization:
			var gs *gh.RunnerGroups
			gs, resp, err = c.Actions.ListOrganizationRunnerGroups(ctx, s.Name, &gh.ListOrgRunnerGroupOptions{ListOptions: opts})
			if gs != nil {
				groups = gs.RunnerGroups
			}
		case rm.ScopeEnterprise:
			var gs *gh.EnterpriseRunnerGroups
			gs, resp, err = c.Enterprise.ListRunnerGroups(ctx, s.Name, &gh.ListEnterpriseRunnerGroupOptions{ListOptions: opts})
			if gs != nil {
				for _, g := range gs.RunnerGroups {
					groups = append(groups, &gh.RunnerGroup{ID: g.ID, Name: g.Name})
				}
			}
		default:
			return 0, fmt.Errorf("%s: %w: a repository's runners can only join the %s group; runner groups belong to organizations and enterprises", action, rm.ErrInvalid, rm.DefaultRunnerGroup)
		}
		if err != nil {
			return 0, restError(err, action, s)
		}
		for _, g := range groups {
			if strings.EqualFold(g.GetName(), name) {
				return g.GetID(), nil
			}
		}
		if resp.NextPage == 0 {
			return 0, fmt.Errorf("%s: %w: no such runner group; create it in the settings of %s or use %s", action, rm.ErrNotFound, describeScope(s), rm.DefaultRunnerGroup)
		}
		opts.Page = resp.NextPage
	}
}

// RemoveRunner deletes a registration: ErrRunnerBusy while it runs a job,
// nil when it is already gone. Once removed, the registration is left out
// of the scope's shared lists sent before (RunnersSince).
func (t *ClassicTarget) RemoveRunner(ctx context.Context, id int64) error {
	err := removeRESTRunner(ctx, t.c.gh, t.target.Scope, id)
	if err == nil {
		t.c.runnerLists.of(t.target.Scope).noteRemoved(id, t.c.cfg.Now())
	}
	return err
}

func removeRESTRunner(ctx context.Context, c *gh.Client, s rm.Scope, id int64) error {
	var err error
	switch s.Kind {
	case rm.ScopeRepository:
		owner, repo, _ := strings.Cut(s.Name, "/")
		_, err = c.Actions.RemoveRunner(ctx, owner, repo, id)
	case rm.ScopeOrganization:
		_, err = c.Actions.RemoveOrganizationRunner(ctx, s.Name, id)
	default:
		_, err = c.Enterprise.RemoveRunner(ctx, s.Name, id)
	}
	status, _, msg := statusOf(err)
	switch {
	case err == nil, status == http.StatusNotFound:
		return nil
	case status == http.StatusUnprocessableEntity:
		return fmt.Errorf("remove runner %d from %s: %w (GitHub said: %s)", id, s, rm.ErrRunnerBusy, msg)
	}
	return restError(err, fmt.Sprintf("remove runner %d from %s", id, s), s)
}

// Runners lists the target's registrations whose name starts with
// namePrefix, every page: a request sent now, whose answer then serves
// the scope's RunnersSince callers too.
func (t *ClassicTarget) Runners(ctx context.Context, namePrefix string) ([]rm.Runner, error) {
	rs, _, err := t.c.runnerLists.of(t.target.Scope).since(ctx, t.c, namePrefix, time.Time{}, true)
	return rs, err
}

// LookupRunner reads one registration from the REST API: by id (GET
// runners/{id}), or by name when id is 0.
func (t *ClassicTarget) LookupRunner(ctx context.Context, id int64, name string) (rm.Runner, bool, error) {
	if id == 0 {
		r, err := t.runnerByName(ctx, name)
		if err != nil || r == nil {
			return rm.Runner{}, false, err
		}
		return *r, true, nil
	}
	return getRESTRunner(ctx, t.c.gh, t.target.Scope, id)
}

func getRESTRunner(ctx context.Context, c *gh.Client, s rm.Scope, id int64) (rm.Runner, bool, error) {
	var (
		r   *gh.Runner
		err error
	)
	switch s.Kind {
	case rm.ScopeRepository:
		owner, repo, _ := strings.Cut(s.Name, "/")
		r, _, err = c.Actions.GetRunner(ctx, owner, repo, id)
	case rm.ScopeOrganization:
		r, _, err = c.Actions.GetOrganizationRunner(ctx, s.Name, id)
	default:
		r, _, err = c.Enterprise.GetRunner(ctx, s.Name, id)
	}
	if status, _, _ := statusOf(err); status == http.StatusNotFound {
		return rm.Runner{}, false, nil
	}
	if err != nil {
		return rm.Runner{}, false, restError(err, fmt.Sprintf("get runner %d of %s", id, s), s)
	}
	return restRunner(r), true, nil
}

func restRunner(r *gh.Runner) rm.Runner {
	var labels []string
	for _, l := range r.Labels {
		labels = append(labels, l.GetName())
	}
	return rm.Runner{ID: r.GetID(), Name: r.GetName(), Online: r.GetStatus() == "online", Busy: r.GetBusy(), Labels: labels}
}

func (t *ClassicTarget) runnerByName(ctx context.Context, name string) (*rm.Runner, error) {
	rs, err := listRESTRunners(ctx, t.c.gh, t.target.Scope, name, &name)
	if err != nil {
		return nil, err
	}
	for _, r := range rs {
		if r.Name == name {
			return &r, nil
		}
	}
	return nil, nil
}

func listRESTRunners(ctx context.Context, c *gh.Client, s rm.Scope, prefix string, exact *string) ([]rm.Runner, error) {
	opts := &gh.ListRunnersOptions{Name: exact, ListOptions: gh.ListOptions{PerPage: 100}}
	var out []rm.Runner
	for {
		var (
			page *gh.Runners
			resp *gh.Response
			err  error
		)
		switch s.Kind {
		case rm.ScopeRepository:
			owner, repo, _ := strings.Cut(s.Name, "/")
			page, resp, err = c.Actions.ListRunners(ctx, owner, repo, opts)
		case rm.ScopeOrganization:
			page, resp, err = c.Actions.ListOrganizationRunners(ctx, s.Name, opts)
		default:
			page, resp, err = c.Enterprise.ListRunners(ctx, s.Name, opts)
		}
		if err != nil {
			return nil, restError(err, "list runners of "+s.String(), s)
		}
		for _, r := range page.Runners {
			if !strings.HasPrefix(r.GetName(), prefix) {
				continue
			}
			out = append(out, restRunner(r))
		}
		if resp.NextPage == 0 {
			return out, nil
		}
		opts.Page = resp.NextPage
	}
}

// Notify takes a workflow_job webhook as a nudge to look, never as
// demand: a signed payload can be replayed under a new delivery id. For a
// repository it makes the shared watcher poll now; for an organization or
// enterprise the job it names is tracked and read from the API (GET
// /repos/{owner}/{repo}/actions/jobs/{id}, conditional) until it
// completes, and only what the API says counts. Events of other scopes or
// label sets are ignored.
func (t *ClassicTarget) Notify(ev WorkflowJobEvent) {
	if !t.concerns(ev) || !MatchLabels(ev.Labels, t.labels) {
		return
	}
	w := t.c.classic.existing(t.target.Scope)
	if w == nil {
		return // nobody watches: the first poll will look anyway
	}
	if t.target.Scope.Kind == rm.ScopeRepository {
		w.hookSeen(ev)
	}
	if w.heard(ev) {
		return // a job it holds started or ended: told at once, no poll needed
	}
	switch {
	case t.target.Scope.Kind != rm.ScopeRepository:
		w.track(ev.JobID, ev.Repository)
	case ev.Action == "queued":
		w.NudgeQueued()
		return
	}
	w.Nudge()
}

func (t *ClassicTarget) concerns(ev WorkflowJobEvent) bool {
	s := t.target.Scope
	switch s.Kind {
	case rm.ScopeRepository:
		return strings.EqualFold(ev.Repository, s.Name)
	case rm.ScopeOrganization:
		owner, _, _ := strings.Cut(ev.Repository, "/")
		return strings.EqualFold(ev.Organization, s.Name) || strings.EqualFold(owner, s.Name)
	default:
		return strings.EqualFold(ev.Enterprise, s.Name)
	}
}

// Watch reports the target's demand until ctx ends (nil) or GitHub refuses
// the credentials or the scope (ErrUnauthorized, ErrNotFound). Every
// classic target of one scope on one Client shares one watcher, and so one
// poll: a repository's queued and in-progress runs and the jobs of the
// runs that changed, conditional requests all (an unchanged answer costs
// no quota), every PollInterval, every BusyPollInterval while more is
// queued than the figure says, and at once on Nudge or Notify. The figure
// counts the matching jobs queued and in progress on this host's runners;
// the events name the runner of each job started or completed, on the
// first report too (jobs running and jobs completed within the hour), so
// that runners that ended while the manager was down are known to have
// run a job. While a rate limit holds, the watcher waits for its reset;
// other errors are retried with backoff. maxCapacity bounds how many
// queued jobs the poll needs to read to keep the target launching.
// Waiting is always nil: a classic Watch returns its errors, which the
// loop shows.
func (t *ClassicTarget) Waiting() (error, time.Time) { return nil, time.Time{} }

func (t *ClassicTarget) Watch(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error {
	sub := &demandSub{labels: t.labels, prefix: t.opts.NamePrefix, idle: t.opts.PollInterval, busy: t.opts.BusyPollInterval,
		capacity: maxCapacity, report: report, fatal: make(chan error, 1)}
	w := t.c.classic.watcher(t.c, t.target.Scope, t.scopeLog, sub)
	defer w.release(sub)
	select {
	case <-ctx.Done():
		return nil
	case err := <-sub.fatal:
		return err
	}
}

func (st *jobState) event(kind rm.JobEventKind, at time.Time) rm.JobEvent {
	e := rm.JobEvent{Kind: kind, JobID: restJobID(st.id), JobNumber: st.id, RunID: st.runID, RunnerID: st.runnerID, RunnerName: st.runnerName,
		Workflow: st.workflow, DisplayName: st.name, Labels: st.labels, At: at, QueuedAt: st.queuedAt,
		RunnerAssignedAt: st.startedAt, FinishedAt: st.completedAt}
	if kind == rm.JobCompleted {
		e.Result = st.conclusion
	}
	return e
}
