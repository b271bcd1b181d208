package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	// 30 s); a webhook nudge polls at once.
	PollInterval time.Duration
	// WorkFolder is the runner's work directory, relative to its root
	// (default "_work").
	WorkFolder string
	// Logger defaults to the client's.
	Logger *slog.Logger
}

// ClassicTarget is a classic-mode target: runners registered with REST
// generate-jitconfig under a label set, demand polled from a repository's
// queued and in-progress jobs (conditional requests: an unchanged poll
// costs no quota) or, for an organization or enterprise, learned from
// workflow_job webhooks passed to Notify. Min idle is the reconcile loop's
// business; without webhooks an organization target sees no demand.
type ClassicTarget struct {
	c      *Client
	target rm.ScaleTarget
	opts   ClassicOptions
	labels []string
	log    *slog.Logger
	nudge  chan struct{}

	groupMu sync.Mutex
	groupID int64

	mu      sync.Mutex
	known   map[int64]jobState // jobs seen by the last poll
	primed  bool
	hooked  map[int64]jobState // jobs learned from webhooks
	pending []JobEvent         // webhook events not yet reported
}

var _ Target = (*ClassicTarget)(nil)

type jobState struct {
	status     string
	runID      int64
	runnerID   int64
	runnerName string
	conclusion string
	workflow   string
	name       string
	labels     []string
	seen       time.Time
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
		opts.PollInterval = 30 * time.Second
	}
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
		log:   log.With("target", target.String()),
		nudge: make(chan struct{}, 1),
		known: map[int64]jobState{}, hooked: map[int64]jobState{},
	}, nil
}

// Labels are the labels runners register with.
func (t *ClassicTarget) Labels() []string { return slices.Clone(t.labels) }

// Close holds nothing in classic mode.
func (t *ClassicTarget) Close(context.Context) error { return nil }

// Nudge makes Watch poll at once.
func (t *ClassicTarget) Nudge() {
	select {
	case t.nudge <- struct{}{}:
	default:
	}
}

// JITConfig registers runnerName with the target's labels and runner group.
// A registration of the same name (409) is looked up, removed when it is
// ours, and the registration retried once.
func (t *ClassicTarget) JITConfig(ctx context.Context, runnerName string) (JITConfig, error) {
	action := "register runner " + runnerName + " for " + t.target.Scope.String()
	gid, err := t.runnerGroupID(ctx)
	if err != nil {
		return JITConfig{}, err
	}
	req := &gh.GenerateJITConfigRequest{Name: runnerName, RunnerGroupID: gid, Labels: t.labels, WorkFolder: &t.opts.WorkFolder}
	for try := 0; ; try++ {
		jit, err := t.generateJIT(ctx, req)
		if err == nil {
			out := JITConfig{RunnerID: jit.GetRunner().GetID(), RunnerName: jit.GetRunner().GetName(), Encoded: jit.GetEncodedJITConfig()}
			if out.RunnerName == "" {
				out.RunnerName = runnerName
			}
			if out.Encoded == "" || out.RunnerID == 0 {
				return JITConfig{}, fmt.Errorf("%s: GitHub answered without a runner id or configuration", action)
			}
			return out, nil
		}
		status, _, _ := statusOf(err)
		if status != http.StatusConflict || try > 0 {
			if status == http.StatusConflict {
				return JITConfig{}, fmt.Errorf("%s: the name is still taken after removing the old registration: %w", action, err)
			}
			return JITConfig{}, restError(err, action, t.target.Scope)
		}
		if t.opts.NamePrefix != "" && !strings.HasPrefix(runnerName, t.opts.NamePrefix) {
			return JITConfig{}, fmt.Errorf("%s: a runner of that name exists and is not ours (no %q prefix): pick another name", action, t.opts.NamePrefix)
		}
		old, err := t.runnerByName(ctx, runnerName)
		if err != nil {
			return JITConfig{}, err
		}
		if old != nil {
			t.log.Info("removing a stale registration of the same name", "runner", runnerName, "id", old.ID)
			if err := t.RemoveRunner(ctx, old.ID); err != nil {
				return JITConfig{}, fmt.Errorf("%s: the name is taken: %w", action, err)
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
			return 0, fmt.Errorf("%s: %w: no such runner group; create it in the settings of %s or use %s", action, ErrNotFound, describeScope(s), rm.DefaultRunnerGroup)
		}
		opts.Page = resp.NextPage
	}
}

// RemoveRunner deletes a registration: ErrRunnerBusy while it runs a job,
// nil when it is already gone.
func (t *ClassicTarget) RemoveRunner(ctx context.Context, id int64) error {
	return removeRESTRunner(ctx, t.c.gh, t.target.Scope, id)
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
		return fmt.Errorf("remove runner %d from %s: %w (GitHub said: %s)", id, s, ErrRunnerBusy, msg)
	}
	return restError(err, fmt.Sprintf("remove runner %d from %s", id, s), s)
}

// Runners lists the target's registrations whose name starts with
// namePrefix, every page.
func (t *ClassicTarget) Runners(ctx context.Context, namePrefix string) ([]Runner, error) {
	return listRESTRunners(ctx, t.c.gh, t.target.Scope, namePrefix, nil)
}

// LookupRunner reads one registration from the REST API: by id (GET
// runners/{id}), or by name when id is 0.
func (t *ClassicTarget) LookupRunner(ctx context.Context, id int64, name string) (Runner, bool, error) {
	if id == 0 {
		r, err := t.runnerByName(ctx, name)
		if err != nil || r == nil {
			return Runner{}, false, err
		}
		return *r, true, nil
	}
	return getRESTRunner(ctx, t.c.gh, t.target.Scope, id)
}

func getRESTRunner(ctx context.Context, c *gh.Client, s rm.Scope, id int64) (Runner, bool, error) {
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
		return Runner{}, false, nil
	}
	if err != nil {
		return Runner{}, false, restError(err, fmt.Sprintf("get runner %d of %s", id, s), s)
	}
	return restRunner(r), true, nil
}

func restRunner(r *gh.Runner) Runner {
	var labels []string
	for _, l := range r.Labels {
		labels = append(labels, l.GetName())
	}
	return Runner{ID: r.GetID(), Name: r.GetName(), Online: r.GetStatus() == "online", Busy: r.GetBusy(), Labels: labels}
}

func (t *ClassicTarget) runnerByName(ctx context.Context, name string) (*Runner, error) {
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

func listRESTRunners(ctx context.Context, c *gh.Client, s rm.Scope, prefix string, exact *string) ([]Runner, error) {
	opts := &gh.ListRunnersOptions{Name: exact, ListOptions: gh.ListOptions{PerPage: 100}}
	var out []Runner
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

// Notify takes a workflow_job webhook: for a repository target it nudges
// the poll; for an organization or enterprise it is the demand itself.
// Events of other scopes or label sets are ignored.
func (t *ClassicTarget) Notify(ev WorkflowJobEvent) {
	if !t.concerns(ev) || !MatchLabels(ev.Labels, t.labels) {
		return
	}
	if t.target.Scope.Kind != rm.ScopeRepository {
		if ev.At.IsZero() {
			ev.At = t.c.cfg.Now()
		}
		t.mu.Lock()
		prev, had := t.hooked[ev.JobID]
		st := jobState{status: ev.Action, runID: ev.RunID, runnerID: ev.RunnerID, runnerName: ev.RunnerName,
			conclusion: ev.Conclusion, workflow: ev.WorkflowName, name: ev.JobName, labels: ev.Labels, seen: ev.At}
		if ev.Action == "completed" {
			delete(t.hooked, ev.JobID)
		} else if !had || prev.status != "completed" {
			t.hooked[ev.JobID] = st
		}
		if je, ok := ev.JobEvent(); ok {
			t.pending = append(t.pending, je)
		}
		t.mu.Unlock()
	}
	t.Nudge()
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

// counts reports whether a job in state st is demand for this target.
func (t *ClassicTarget) counts(st jobState) bool {
	switch st.status {
	case "queued":
		return true
	case "in_progress":
		return t.opts.NamePrefix == "" || strings.HasPrefix(st.runnerName, t.opts.NamePrefix)
	}
	return false
}

// Watch reports the target's demand until ctx ends (nil) or GitHub refuses
// the credentials or the scope (ErrUnauthorized, ErrNotFound). A
// repository is polled every PollInterval and at once on Nudge or Notify;
// while a rate limit holds, Watch waits for its reset; other errors are
// logged and retried with backoff. maxCapacity is not used in classic mode.
func (t *ClassicTarget) Watch(ctx context.Context, _ func() int, report func(Demand)) error {
	if t.target.Scope.Kind != rm.ScopeRepository {
		return t.watchHooks(ctx, report)
	}
	failures := 0
	for {
		d, err := t.poll(ctx)
		wait := t.opts.PollInterval
		switch {
		case ctx.Err() != nil:
			return nil
		case err == nil:
			failures = 0
			report(d)
		case errors.Is(err, ErrUnauthorized), errors.Is(err, ErrNotFound):
			return err
		default:
			if rle, ok := asRateLimit(err); ok {
				wait = max(rle.Reset.Sub(t.c.cfg.Now()), time.Second)
				t.log.Warn("demand poll waits for the rate limit to lift", "until", rle.Reset, "secondary", rle.Secondary)
			} else {
				wait = watchBackoff(failures)
				failures++
				t.log.Warn("demand poll failed, retrying", "error", err.Error(), "wait", wait)
			}
			if err := t.c.cfg.Sleep(ctx, wait); err != nil {
				return nil
			}
			continue
		}
		if err := t.waitNudge(ctx, wait); err != nil {
			return nil
		}
	}
}

func (t *ClassicTarget) waitNudge(ctx context.Context, d time.Duration) error {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.nudge:
	case <-timer.C:
	}
	return nil
}

// watchBackoff is the wait after n consecutive failures: 1 s doubling to
// 5 min, the upper half jittered.
func watchBackoff(n int) time.Duration {
	lim := limiter{retry: RetryPolicy{Base: time.Second, Cap: 5 * time.Minute}}
	return lim.backoff(n)
}

// watchHooks reports demand learned from webhooks (organization and
// enterprise scopes): at once on each Notify, else every PollInterval.
// Jobs not heard of for a day are forgotten (a missed completed event).
func (t *ClassicTarget) watchHooks(ctx context.Context, report func(Demand)) error {
	for {
		now := t.c.cfg.Now()
		t.mu.Lock()
		d := Demand{At: now, Events: t.pending}
		t.pending = nil
		for id, st := range t.hooked {
			if now.Sub(st.seen) > 24*time.Hour {
				delete(t.hooked, id)
				continue
			}
			if t.counts(st) {
				d.Wanted++
			}
		}
		t.mu.Unlock()
		report(d)
		if err := t.waitNudge(ctx, t.opts.PollInterval); err != nil {
			return nil
		}
	}
}

// poll counts the repository's matching jobs: runs queued and in progress,
// then their jobs, every list a conditional request.
func (t *ClassicTarget) poll(ctx context.Context) (Demand, error) {
	owner, repo, _ := strings.Cut(t.target.Scope.Name, "/")
	runIDs := map[int64]bool{}
	for _, status := range []string{"queued", "in_progress"} {
		opts := &gh.ListWorkflowRunsOptions{Status: status, ListOptions: gh.ListOptions{PerPage: 100}}
		for {
			runs, resp, err := t.c.gh.Actions.ListRepositoryWorkflowRuns(ctx, owner, repo, opts)
			if err != nil {
				return Demand{}, restError(err, "list "+status+" workflow runs of "+t.target.Scope.Name, t.target.Scope)
			}
			for _, r := range runs.WorkflowRuns {
				runIDs[r.GetID()] = true
			}
			if resp.NextPage == 0 {
				break
			}
			opts.Page = resp.NextPage
		}
	}
	now := t.c.cfg.Now()
	seen := map[int64]jobState{}
	ids := slices.Sorted(maps.Keys(runIDs))
	for _, id := range ids {
		if err := t.runJobs(ctx, owner, repo, id, now, seen); err != nil {
			return Demand{}, err
		}
	}

	// Only Watch polls: known and primed are read and written here alone.
	t.mu.Lock()
	known, primed := t.known, t.primed
	t.mu.Unlock()
	var events []JobEvent
	if primed {
		// A job we saw queued or running whose run left both lists ended
		// (or was cancelled): ask its run once how.
		var gone []int64
		for id, prev := range known {
			if _, ok := seen[id]; !ok && prev.status != "completed" && !slices.Contains(gone, prev.runID) {
				gone = append(gone, prev.runID)
			}
		}
		slices.Sort(gone)
		for _, runID := range gone {
			if err := t.runJobs(ctx, owner, repo, runID, now, seen); err != nil {
				t.log.Debug("cannot learn how a finished run's jobs ended", "run", runID, "error", err.Error())
			}
		}
		for _, id := range slices.Sorted(maps.Keys(seen)) {
			st, prev := seen[id], known[id]
			started := st.runnerName != "" && (st.status == "in_progress" || st.status == "completed")
			if started && (prev.runnerName == "" || prev.status == "queued") {
				events = append(events, st.event(JobStarted, id, now))
			}
			if st.status == "completed" && prev.status != "completed" {
				events = append(events, st.event(JobCompleted, id, now))
			}
		}
	}
	d := Demand{At: now, Events: events}
	for id, st := range seen {
		if st.status == "completed" {
			if _, stillListed := runIDs[st.runID]; !stillListed {
				delete(seen, id) // its run is over: forget it
				continue
			}
		}
		if t.counts(st) {
			d.Wanted++
		}
	}
	t.mu.Lock()
	t.known, t.primed = seen, true
	t.mu.Unlock()
	return d, nil
}

// runJobs adds the matching jobs of one run to seen.
func (t *ClassicTarget) runJobs(ctx context.Context, owner, repo string, runID int64, now time.Time, seen map[int64]jobState) error {
	opts := &gh.ListWorkflowJobsOptions{Filter: "latest", ListOptions: gh.ListOptions{PerPage: 100}}
	for {
		jobs, resp, err := t.c.gh.Actions.ListWorkflowJobs(ctx, owner, repo, runID, opts)
		if err != nil {
			status, _, _ := statusOf(err)
			if status == http.StatusNotFound {
				return nil // the run was deleted meanwhile
			}
			return restError(err, fmt.Sprintf("list jobs of run %d of %s", runID, t.target.Scope.Name), t.target.Scope)
		}
		for _, j := range jobs.Jobs {
			if !MatchLabels(j.Labels, t.labels) {
				continue
			}
			seen[j.GetID()] = jobState{
				status: j.GetStatus(), runID: j.GetRunID(), runnerID: j.GetRunnerID(), runnerName: j.GetRunnerName(),
				conclusion: j.GetConclusion(), workflow: j.GetWorkflowName(), name: j.GetName(), labels: j.Labels, seen: now,
			}
		}
		if resp.NextPage == 0 {
			return nil
		}
		opts.Page = resp.NextPage
	}
}

func (st jobState) event(kind JobEventKind, id int64, at time.Time) JobEvent {
	e := JobEvent{Kind: kind, JobID: id, RunID: st.runID, RunnerID: st.runnerID, RunnerName: st.runnerName,
		Workflow: st.workflow, DisplayName: st.name, Labels: st.labels, At: at}
	if kind == JobCompleted {
		e.Result = st.conclusion
	}
	return e
}
