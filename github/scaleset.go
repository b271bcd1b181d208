package github

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/actions/scaleset"
	"github.com/hashicorp/go-retryablehttp"
	rm "github.com/runner-manager/runner-manager"
)

// ScaleSetOptions tunes a scale-set mode target.
type ScaleSetOptions struct {
	// Owner names this manager as the owner of the message session
	// (default: the host name).
	Owner string
	// Labels are added to the scale set's own label (its name).
	Labels []string
	// DisableUpdate keeps runners from updating themselves; set it: runner
	// updates are the manager's.
	DisableUpdate bool
	// DeleteOnClose deletes the scale set on Close (its policy was removed).
	DeleteOnClose bool
	// NamePrefix is this host's runner name prefix: a conflicting
	// registration is removed only if its name has it.
	NamePrefix string
	// WorkFolder is the runner's work directory (default "_work").
	WorkFolder string
	// SessionConflictRetries is how often opening the message session is
	// retried, with backoff, while another owner holds it (default 4).
	SessionConflictRetries int
	// CapacityCheck is how often maxCapacity is read during a long poll; a
	// change ends the poll so the next one carries it (default 1 s).
	CapacityCheck time.Duration
	// Logger defaults to the client's.
	Logger *slog.Logger
}

// ScaleSetTarget is a scale-set mode target over github.com/actions/scaleset:
// the scale set found or created by name in its runner group, one message
// session long-polled with the admitted capacity, JIT configurations from
// the scale set. Idle, it costs no REST quota: the message queue and the
// Actions service are not REST.
type ScaleSetTarget struct {
	c      *Client
	ss     *scaleset.Client
	target rm.ScaleTarget
	opts   ScaleSetOptions
	set    scaleset.RunnerScaleSet
	log    *slog.Logger

	mu      sync.Mutex // guards session and closed
	session *scaleset.MessageSessionClient
	closed  bool
}

var _ Target = (*ScaleSetTarget)(nil)

// NewScaleSetTarget finds the target's scale set by name in its runner
// group, or creates it, with its labels and DisableUpdate, updating a set
// whose labels or setting differ.
func NewScaleSetTarget(ctx context.Context, c *Client, target rm.ScaleTarget, opts ScaleSetOptions) (*ScaleSetTarget, error) {
	if err := target.Validate(); err != nil {
		return nil, err
	}
	if target.Mode() != rm.ModeScaleSet {
		return nil, fmt.Errorf("%w: target %s has labels, not a scale set: use NewClassicTarget", rm.ErrInvalid, target)
	}
	if opts.Owner == "" {
		opts.Owner, _ = os.Hostname()
		if opts.Owner == "" {
			opts.Owner = "runner-manager"
		}
	}
	if opts.WorkFolder == "" {
		opts.WorkFolder = "_work"
	}
	if opts.SessionConflictRetries <= 0 {
		opts.SessionConflictRetries = 4
	}
	if opts.CapacityCheck <= 0 {
		opts.CapacityCheck = time.Second
	}
	log := opts.Logger
	if log == nil {
		log = c.log
	}
	log = log.With("target", target.String())
	ss, err := c.scaleSetClient(target.Scope, log)
	if err != nil {
		return nil, err
	}
	t := &ScaleSetTarget{c: c, ss: ss, target: target, opts: opts, log: log}
	if err := t.ensureScaleSet(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// ScaleSetID is the scale set's id at GitHub.
func (t *ScaleSetTarget) ScaleSetID() int { return t.set.ID }

// scaleSetClient returns an actions/scaleset client with the Client's
// credentials whose every request passes our rate-limit transport.
func (c *Client) scaleSetClient(scope rm.Scope, log *slog.Logger) (*scaleset.Client, error) {
	configURL := scope.ConfigURL(c.webURL.String())
	info := scaleset.SystemInfo{System: "runner-manager", Version: moduleVersion(), Subsystem: "manager"}
	opts := []scaleset.HTTPOption{scaleset.WithRetryableHTTPClint(c.retryableClient()), scaleset.WithLogger(canceledAtDebug(log))}
	var (
		ss  *scaleset.Client
		err error
	)
	if app := c.cfg.App; app != nil {
		ss, err = scaleset.NewClientWithGitHubApp(scaleset.ClientWithGitHubAppConfig{
			GitHubConfigURL: configURL,
			GitHubAppAuth:   scaleset.GitHubAppAuth{ClientID: app.issuer(), InstallationID: app.InstallationID, PrivateKey: string(app.PrivateKeyPEM)},
			SystemInfo:      info,
		}, opts...)
	} else {
		ss, err = scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
			GitHubConfigURL: configURL, PersonalAccessToken: c.cfg.Token, SystemInfo: info,
		}, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("scale-set client for %s: %w", scope, err)
	}
	return ss, nil
}

// retryableClient is the HTTP client handed to actions/scaleset. That
// library insists on an *http.Transport inside a retryablehttp.Client, so
// the transport is a shell whose http and https protocols are registered to
// our rate-limit transport (which does the sending, the retries of
// idempotent calls and the budget); retryablehttp itself never retries, as
// it would retry a POST. Each scaleset client gets its own instance: the
// library writes to it.
func (c *Client) retryableClient() *retryablehttp.Client {
	var rt http.RoundTripper = c.raw
	if from := scalesetAPIBase(c.webURL.String()); !strings.EqualFold(from, c.apiURL.String()) {
		rt = &rebase{from: from, to: c.apiURL.String(), next: rt}
	}
	shell := &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	shell.RegisterProtocol("http", rt)
	shell.RegisterProtocol("https", rt)
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: shell}
	rc.RetryMax = 0
	rc.CheckRetry = func(ctx context.Context, _ *http.Response, _ error) (bool, error) { return false, nil }
	return rc
}

// scalesetAPIBase is the REST base actions/scaleset derives from a web URL.
func scalesetAPIBase(web string) string {
	u, err := parseBaseURL("web URL", web)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Host)
	switch {
	case host == "www.github.com":
		return u.Scheme + "://api.github.com"
	case host == "github.com" || host == "github.localhost" || strings.HasSuffix(host, ".ghe.com"):
		return u.Scheme + "://api." + u.Host
	}
	return u.Scheme + "://" + u.Host + "/api/v3"
}

// rebase sends requests for the REST base actions/scaleset derived to the
// configured API URL instead.
type rebase struct {
	from, to string
	next     http.RoundTripper
}

func (r *rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL.String()
	if len(u) >= len(r.from) && strings.EqualFold(u[:len(r.from)], r.from) && (len(u) == len(r.from) || u[len(r.from)] == '/') {
		nr := req.Clone(req.Context())
		parsed, err := nr.URL.Parse(r.to + u[len(r.from):])
		if err != nil {
			return nil, err
		}
		nr.URL, nr.Host = parsed, ""
		return r.next.RoundTrip(nr)
	}
	return r.next.RoundTrip(req)
}

// call runs fn with a call record and maps its error: rate limits as
// *RateLimitError, 401/403 as ErrUnauthorized, 404 as ErrNotFound; it
// returns the HTTP status of the last answer (0 if none).
func (t *ScaleSetTarget) call(ctx context.Context, action string, fn func(context.Context) error) (int, error) {
	rctx, rec := withCallRecord(ctx)
	err := fn(rctx)
	status, _, _ := rec.last()
	return status, t.mapCall(ctx, action, err, rec)
}

func (t *ScaleSetTarget) mapCall(ctx context.Context, action string, err error, rec *callRecord) error {
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", action, ctx.Err())
	}
	if rle, ok := asRateLimit(err); ok {
		return fmt.Errorf("%s: %w", action, rle)
	}
	status, header, body := rec.last()
	_, msg := actionsMessage(body)
	if mapped := statusError(status, header, msg, action, t.target.Scope); mapped != nil {
		return mapped
	}
	return fmt.Errorf("%s: %w", action, err)
}

func (t *ScaleSetTarget) ensureScaleSet(ctx context.Context) error {
	name := t.target.ScaleSet
	groupID := 1 // the default group, everywhere
	if g := t.target.RunnerGroup; g != "" && !strings.EqualFold(g, rm.DefaultRunnerGroup) {
		var group *scaleset.RunnerGroup
		_, err := t.call(ctx, fmt.Sprintf("find runner group %q in %s", g, t.target.Scope), func(ctx context.Context) (err error) {
			group, err = t.ss.GetRunnerGroupByName(ctx, g)
			return err
		})
		if err != nil {
			if strings.Contains(err.Error(), "no runner group found") {
				return fmt.Errorf("find runner group %q in %s: %w: no such runner group; create it or use %s", g, t.target.Scope, ErrNotFound, rm.DefaultRunnerGroup)
			}
			return err
		}
		groupID = group.ID
	}

	labels := []scaleset.Label{{Name: name, Type: "System"}}
	for _, l := range t.opts.Labels {
		if !slices.ContainsFunc(labels, func(x scaleset.Label) bool { return strings.EqualFold(x.Name, l) }) {
			labels = append(labels, scaleset.Label{Name: l, Type: "System"})
		}
	}
	want := scaleset.RunnerScaleSet{
		Name: name, RunnerGroupID: groupID, Labels: labels,
		RunnerSetting: scaleset.RunnerSetting{DisableUpdate: t.opts.DisableUpdate},
	}

	var found *scaleset.RunnerScaleSet
	if _, err := t.call(ctx, fmt.Sprintf("find scale set %q in %s", name, t.target.Scope), func(ctx context.Context) (err error) {
		found, err = t.ss.GetRunnerScaleSet(ctx, groupID, name)
		return err
	}); err != nil {
		return err
	}
	switch {
	case found == nil:
		var created *scaleset.RunnerScaleSet
		if _, err := t.call(ctx, fmt.Sprintf("create scale set %q in %s", name, t.target.Scope), func(ctx context.Context) (err error) {
			w := want
			created, err = t.ss.CreateRunnerScaleSet(ctx, &w)
			return err
		}); err != nil {
			return err
		}
		t.log.Info("created the scale set", "id", created.ID)
		t.set = *created
	case !sameLabels(found.Labels, labels) || found.RunnerSetting.DisableUpdate != t.opts.DisableUpdate:
		var updated *scaleset.RunnerScaleSet
		if _, err := t.call(ctx, fmt.Sprintf("update scale set %q in %s", name, t.target.Scope), func(ctx context.Context) (err error) {
			w := want
			updated, err = t.ss.UpdateRunnerScaleSet(ctx, found.ID, &w)
			return err
		}); err != nil {
			return err
		}
		t.log.Info("updated the scale set's labels and settings", "id", found.ID)
		t.set = *updated
	default:
		t.set = *found
	}
	if t.set.ID == 0 {
		return fmt.Errorf("scale set %q in %s: GitHub answered without an id", name, t.target.Scope)
	}
	return nil
}

func sameLabels(a, b []scaleset.Label) bool {
	if len(a) != len(b) {
		return false
	}
	for _, l := range a {
		if !slices.ContainsFunc(b, func(x scaleset.Label) bool { return strings.EqualFold(x.Name, l.Name) }) {
			return false
		}
	}
	return true
}

// JITConfig registers runnerName in the scale set. A runner of the same
// name that is ours is removed and the registration retried once.
func (t *ScaleSetTarget) JITConfig(ctx context.Context, runnerName string) (JITConfig, error) {
	action := fmt.Sprintf("register runner %s in scale set %q", runnerName, t.target.ScaleSet)
	for try := 0; ; try++ {
		var jit *scaleset.RunnerScaleSetJitRunnerConfig
		status, err := t.call(ctx, action, func(ctx context.Context) (err error) {
			jit, err = t.ss.GenerateJitRunnerConfig(ctx, &scaleset.RunnerScaleSetJitRunnerSetting{Name: runnerName, WorkFolder: t.opts.WorkFolder}, t.set.ID)
			return err
		})
		if err == nil {
			if jit == nil || jit.Runner == nil || jit.Runner.ID == 0 || jit.EncodedJITConfig == "" {
				return JITConfig{}, fmt.Errorf("%s: GitHub answered without a runner id or configuration", action)
			}
			name := jit.Runner.Name
			if name == "" {
				name = runnerName
			}
			return JITConfig{RunnerID: int64(jit.Runner.ID), RunnerName: name, Encoded: jit.EncodedJITConfig}, nil
		}
		exists := errors.Is(err, scaleset.RunnerExistsError) || status == http.StatusConflict
		if !exists || try > 0 {
			return JITConfig{}, err
		}
		if t.opts.NamePrefix != "" && !strings.HasPrefix(runnerName, t.opts.NamePrefix) {
			return JITConfig{}, fmt.Errorf("%s: a runner of that name exists and is not ours (no %q prefix): pick another name", action, t.opts.NamePrefix)
		}
		var old *scaleset.RunnerReference
		if _, err := t.call(ctx, "look up runner "+runnerName, func(ctx context.Context) (err error) {
			old, err = t.ss.GetRunnerByName(ctx, runnerName)
			return err
		}); err != nil {
			return JITConfig{}, err
		}
		if old != nil {
			t.log.Info("removing a stale registration of the same name", "runner", runnerName, "id", old.ID)
			if err := t.RemoveRunner(ctx, int64(old.ID)); err != nil {
				return JITConfig{}, fmt.Errorf("%s: the name is taken: %w", action, err)
			}
		}
	}
}

// RemoveRunner deletes a registration through the Actions service:
// ErrRunnerBusy while it runs a job, nil when it is already gone.
func (t *ScaleSetTarget) RemoveRunner(ctx context.Context, id int64) error {
	action := fmt.Sprintf("remove runner %d from scale set %q", id, t.target.ScaleSet)
	status, err := t.call(ctx, action, func(ctx context.Context) error { return t.ss.RemoveRunner(ctx, id) })
	switch {
	case err == nil:
		return nil
	case errors.Is(err, scaleset.RunnerNotFoundError), status == http.StatusNotFound:
		return nil
	case errors.Is(err, scaleset.JobStillRunningError), status == http.StatusUnprocessableEntity:
		return fmt.Errorf("%s: %w", action, ErrRunnerBusy)
	}
	return err
}

// Runners lists the scope's registrations whose name starts with
// namePrefix, from the REST runner list (scale-set runners are listed
// there), every page; unchanged pages are revalidated for free.
func (t *ScaleSetTarget) Runners(ctx context.Context, namePrefix string) ([]Runner, error) {
	return listRESTRunners(ctx, t.c.gh, t.target.Scope, namePrefix, nil)
}

// LookupRunner asks the Actions service (the service that registered a
// scale set's runners) for one runner: by id, or by name when id is 0. A
// 404 (or an empty lookup by name) means the registration is gone. The
// service says nothing of busy or online: the journal and job messages do.
func (t *ScaleSetTarget) LookupRunner(ctx context.Context, id int64, name string) (Runner, bool, error) {
	var ref *scaleset.RunnerReference
	action := fmt.Sprintf("look up runner %d in scale set %q", id, t.target.ScaleSet)
	if id == 0 {
		action = fmt.Sprintf("look up runner %s in scale set %q", name, t.target.ScaleSet)
	}
	status, err := t.call(ctx, action, func(ctx context.Context) (err error) {
		if id == 0 {
			ref, err = t.ss.GetRunnerByName(ctx, name)
		} else {
			ref, err = t.ss.GetRunner(ctx, int(id))
		}
		return err
	})
	switch {
	case err == nil && ref == nil, errors.Is(err, scaleset.RunnerNotFoundError), status == http.StatusNotFound:
		return Runner{}, false, nil
	case err != nil:
		return Runner{}, false, err
	}
	return Runner{ID: int64(ref.ID), Name: ref.Name}, true, nil
}

var ownerInMessage = regexp.MustCompile(`(?i)owner\s+'?([^'\s]+?)'?\.?$`)

// openSession opens the scale set's message session, retrying with backoff
// while another owner holds it.
func (t *ScaleSetTarget) openSession(ctx context.Context) (*scaleset.MessageSessionClient, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, fmt.Errorf("scale set %q: the target is closed", t.target.ScaleSet)
	}
	if t.session != nil {
		return t.session, nil
	}
	action := fmt.Sprintf("open the message session of scale set %q", t.target.ScaleSet)
	for try := 0; ; try++ {
		rctx, rec := withCallRecord(ctx)
		s, err := t.ss.MessageSessionClient(rctx, t.set.ID, t.opts.Owner, scaleset.WithRetryableHTTPClint(t.c.retryableClient()))
		if err == nil {
			t.session = s
			t.log.Info("message session open", "owner", t.opts.Owner)
			return s, nil
		}
		status, _, body := rec.last()
		if status != http.StatusConflict {
			return nil, t.mapCall(ctx, action, err, rec)
		}
		_, msg := actionsMessage(body)
		if try >= t.opts.SessionConflictRetries {
			owner := "unknown"
			if m := ownerInMessage.FindStringSubmatch(msg); m != nil {
				owner = m[1]
			}
			return nil, fmt.Errorf("%w: another manager (owner %s) holds the session of scale set %q; stop it or wait (GitHub said: %s)",
				ErrSessionConflict, owner, t.target.ScaleSet, msg)
		}
		wait := (&limiter{retry: RetryPolicy{Base: 2 * time.Second, Cap: 30 * time.Second}}).backoff(try)
		t.log.Warn("the message session is held by another owner, retrying", "try", try+1, "wait", wait, "github", msg)
		if err := t.c.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// dropSession forgets a session GitHub answered 404 for, deleting it
// first in case it still exists (a reopened session would conflict with
// it).
func (t *ScaleSetTarget) dropSession(ctx context.Context, s *scaleset.MessageSessionClient) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.session == s {
		t.session = nil
	}
	if _, err := t.call(ctx, "delete the lost message session", func(ctx context.Context) error { return s.Close(ctx) }); err != nil {
		t.log.Debug("the lost message session could not be deleted", "error", err.Error())
	}
}

var errCapacityChanged = errors.New("capacity changed")

// Watch opens the message session and long-polls it until ctx ends (nil)
// or a fatal error (ErrUnauthorized, ErrNotFound, ErrSessionConflict).
// Each message is acknowledged, its available jobs acquired, and its
// statistics.TotalAssignedJobs reported as demand with its job events.
// maxCapacity is sent with every poll; it is also read every
// CapacityCheck during a poll, from another goroutine, and a change ends
// the poll early so GitHub learns it at once. Transient errors are retried
// with backoff; a rate limit is waited out; an expired queue token
// refreshes the session, a lost session is reopened.
func (t *ScaleSetTarget) Watch(ctx context.Context, maxCapacity func() int, report func(Demand)) error {
	var (
		sess     *scaleset.MessageSessionClient
		lastID   int
		failures int
		// wanted is the last figure reported: repeated after an empty poll
		// (202) while it is above zero, as the scale-set listener does, so
		// a report that came while a finished runner had not yet exited is
		// not the last word.
		wanted int
	)
	for ctx.Err() == nil {
		var err error
		if sess == nil {
			if sess, err = t.openSession(ctx); err == nil {
				lastID = 0
				d := Demand{At: t.c.cfg.Now()}
				if st := sess.Session().Statistics; st != nil {
					d.Wanted = st.TotalAssignedJobs
				}
				wanted = d.Wanted
				report(d)
			}
		} else {
			var msg *scaleset.RunnerScaleSetMessage
			msg, err = t.poll(ctx, sess, lastID, maxCapacity)
			switch {
			case err == nil && msg != nil:
				lastID = msg.MessageID
				d := t.handle(ctx, sess, msg)
				wanted = d.Wanted
				report(d)
			case err == nil && wanted > 0:
				// Idle (nothing wanted) stays silent: no pass, no call.
				report(Demand{Wanted: wanted, At: t.c.cfg.Now()})
			}
		}
		switch {
		case err == nil, errors.Is(err, errCapacityChanged):
			failures = 0
			continue
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, ErrSessionConflict), errors.Is(err, ErrUnauthorized):
			return err
		case errors.Is(err, ErrNotFound):
			if sess == nil {
				return err
			}
			// The session (not the scale set) is gone: open a new one.
			t.log.Warn("the message session was lost; opening a new one", "error", err.Error())
			t.dropSession(ctx, sess)
			sess = nil
			continue
		}
		wait := watchBackoff(failures)
		failures++
		if rle, ok := asRateLimit(err); ok {
			wait = max(rle.Reset.Sub(t.c.cfg.Now()), time.Second)
		}
		t.log.Warn("scale-set poll failed, retrying", "error", err.Error(), "wait", wait)
		if err := t.c.cfg.Sleep(ctx, wait); err != nil {
			return nil
		}
	}
	return nil
}

// poll long-polls one message with the current capacity, ending early
// when the capacity changes.
func (t *ScaleSetTarget) poll(ctx context.Context, sess *scaleset.MessageSessionClient, lastID int, maxCapacity func() int) (*scaleset.RunnerScaleSetMessage, error) {
	capacity := clampCapacity(maxCapacity())
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var changed atomic.Bool
	done := make(chan struct{})
	defer close(done)
	go func() {
		tick := time.NewTicker(t.opts.CapacityCheck)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-pctx.Done():
				return
			case <-tick.C:
				if clampCapacity(maxCapacity()) != capacity {
					changed.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	var msg *scaleset.RunnerScaleSetMessage
	_, err := t.call(pctx, "poll the message queue of scale set "+strconv.Quote(t.target.ScaleSet), func(ctx context.Context) (err error) {
		msg, err = sess.GetMessage(ctx, lastID, capacity)
		return err
	})
	if err != nil && changed.Load() && ctx.Err() == nil {
		return nil, errCapacityChanged
	}
	return msg, err
}

func clampCapacity(n int) int { return min(max(n, 0), math.MaxInt32) }

// handle acknowledges a message, acquires its available jobs and turns it
// into a Demand.
func (t *ScaleSetTarget) handle(ctx context.Context, sess *scaleset.MessageSessionClient, msg *scaleset.RunnerScaleSetMessage) Demand {
	now := t.c.cfg.Now()
	if _, err := t.call(ctx, "acknowledge a message", func(ctx context.Context) error { return sess.DeleteMessage(ctx, msg.MessageID) }); err != nil {
		t.log.Warn("cannot acknowledge a message; it may come again", "message", msg.MessageID, "error", err.Error())
	}
	if len(msg.JobAvailableMessages) > 0 {
		ids := make([]int64, 0, len(msg.JobAvailableMessages))
		for _, j := range msg.JobAvailableMessages {
			ids = append(ids, j.RunnerRequestID)
		}
		if _, err := t.call(ctx, "acquire jobs", func(ctx context.Context) error {
			_, err := sess.AcquireJobs(ctx, ids)
			return err
		}); err != nil {
			t.log.Warn("cannot acquire jobs; GitHub offers them again", "count", len(ids), "error", err.Error())
		}
	}
	d := Demand{At: now}
	if msg.Statistics != nil {
		d.Wanted = msg.Statistics.TotalAssignedJobs
	}
	for _, j := range msg.JobAssignedMessages {
		d.Events = append(d.Events, jobEvent(JobAssigned, j.JobMessageBase, 0, "", "", now))
	}
	for _, j := range msg.JobStartedMessages {
		d.Events = append(d.Events, jobEvent(JobStarted, j.JobMessageBase, j.RunnerID, j.RunnerName, "", now))
	}
	for _, j := range msg.JobCompletedMessages {
		d.Events = append(d.Events, jobEvent(JobCompleted, j.JobMessageBase, j.RunnerID, j.RunnerName, j.Result, now))
	}
	return d
}

func jobEvent(kind JobEventKind, b scaleset.JobMessageBase, runnerID int, runnerName, result string, now time.Time) JobEvent {
	id, _ := strconv.ParseInt(b.JobID, 10, 64)
	return JobEvent{
		Kind: kind, JobID: id, RunID: b.WorkflowRunID, RunnerID: int64(runnerID), RunnerName: runnerName,
		Result: result, Workflow: b.JobWorkflowRef, DisplayName: b.JobDisplayName, Labels: b.RequestLabels, At: now,
	}
}

// Close deletes the message session, and the scale set with DeleteOnClose.
func (t *ScaleSetTarget) Close(ctx context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	if t.session != nil {
		s := t.session
		t.session = nil
		status, err := t.call(ctx, "delete the message session", func(ctx context.Context) error { return s.Close(ctx) })
		if err != nil && status != http.StatusNotFound {
			errs = append(errs, err)
		}
	}
	if t.opts.DeleteOnClose {
		status, err := t.call(ctx, fmt.Sprintf("delete scale set %q", t.target.ScaleSet), func(ctx context.Context) error {
			return t.ss.DeleteRunnerScaleSet(ctx, t.set.ID)
		})
		if err != nil && status != http.StatusNotFound {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
