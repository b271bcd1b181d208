package github

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/actions/scaleset"

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
	// Journal records each message session opened, so that after a crash
	// this manager's stale session is deleted by id (at the first open and
	// on a 409) instead of blocking the scale set. Without one, a stale
	// session is only waited out.
	Journal rm.SessionJournal
	// HostID is recorded with each session; a recorded session is taken
	// for this manager's only if its owner (and host id, when both are
	// set) match.
	HostID string
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
	target rm.ScaleTarget
	opts   ScaleSetOptions
	log    *slog.Logger

	// renewMu serializes rebuilding the client and looking the scale set
	// up again, which the watch and a reconcile pass may both want at once.
	renewMu sync.Mutex

	mu sync.Mutex // guards the fields below; never held across a call
	// ss is replaced on a 401: actions/scaleset keeps its admin token
	// until near its expiry, even after GitHub stopped accepting it.
	ss *scaleset.Client
	// gen counts replacements of ss and set, so that of two callers that
	// saw the same failure only the first repairs it.
	gen     uint64
	set     scaleset.RunnerScaleSet
	session *scaleset.MessageSessionClient
	closed  bool
	// opened is set by the first session: the first open deletes a stale
	// session of this manager's first.
	opened bool
	// stale: the scale set may be gone (a 404): look it up (or create
	// it) before the next session.
	stale bool
	// waitErr is why the watch is not serving, since waitFrom.
	waitErr  error
	waitFrom time.Time

	// pending is the jobs offered or assigned that no runner started yet,
	// for people (Demand.Pending); it has its own lock.
	pending pendingBook
}

// A ScaleSetTarget is both sides of a loop's target.
var (
	_ rm.Registrar    = (*ScaleSetTarget)(nil)
	_ rm.DemandSource = (*ScaleSetTarget)(nil)
)

// NewScaleSetTarget finds the target's scale set by name in its runner
// group, or creates it, with its labels and DisableUpdate, updating a set
// whose labels or setting differ.
func NewScaleSetTarget(ctx context.Context, c *Client, target rm.ScaleTarget, opts ScaleSetOptions) (*ScaleSetTarget, error) {
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
	t, err := newScaleSetTarget(c, target, opts)
	if err != nil {
		return nil, err
	}
	log := t.log
	for try := 0; ; try++ {
		err := t.ensureScaleSet(ctx, t.ss)
		if err == nil {
			return t, nil
		}
		if try >= connectRetries || !transientConnect(err) || ctx.Err() != nil {
			return nil, err
		}
		// GitHub's clients retry the token exchange on 401 and 403 as on
		// 5xx (actions/scaleset client.go getActionsServiceAdminConnectionRequest,
		// 4 retries by default: common_client.go defaults): so do we,
		// with new tokens, before the caller's slower retry.
		wait := outage.Wait(try)
		log.Debug("cannot connect to the scale set yet, retrying", "err", err, "wait", wait)
		if errors.Is(err, rm.ErrUnauthorized) {
			if ss, rerr := c.scaleSetClient(target.Scope, log); rerr == nil {
				t.ss = ss
			}
		}
		if err := c.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// newScaleSetTarget checks target and makes its ScaleSetTarget with a
// scale-set client of c, calling nothing at GitHub yet.
func newScaleSetTarget(c *Client, target rm.ScaleTarget, opts ScaleSetOptions) (*ScaleSetTarget, error) {
	if err := target.Validate(); err != nil {
		return nil, err
	}
	if target.Mode() != rm.ModeScaleSet {
		return nil, fmt.Errorf("%w: target %s has labels, not a scale set: use NewClassicTarget", rm.ErrInvalid, target)
	}
	log := opts.Logger
	if log == nil {
		log = c.log
	}
	log = log.With("target", target.Short())
	ss, err := c.scaleSetClient(target.Scope, log)
	if err != nil {
		return nil, err
	}
	return &ScaleSetTarget{c: c, ss: ss, target: target, opts: opts, log: log}, nil
}

// connectRetries is how often NewScaleSetTarget retries a transient
// failure: as often as actions/scaleset retries a request by default.
const connectRetries = 4

// transientConnect reports whether a failure to connect may pass by
// itself: refused tokens (GitHub's clients retry 401 and 403 there), 5xx
// and network errors; not a missing scope or group, a bad target, or a
// rate limit (waited out by the caller).
func transientConnect(err error) bool {
	if _, ok := asRateLimit(err); ok {
		return false
	}
	return !errors.Is(err, rm.ErrNotFound) && !errors.Is(err, rm.ErrInvalid)
}

// ScaleSetID is the scale set's id at GitHub (it changes if the scale set
// vanished and was created again).
func (t *ScaleSetTarget) ScaleSetID() int {
	_, id, _ := t.current()
	return id
}

// Waiting says why the watch is not serving demand now (credentials
// refused, GitHub unreachable, a lost scale set being found again), and
// since when; nil while it serves.
func (t *ScaleSetTarget) Waiting() (reason error, since time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.waitErr, t.waitFrom
}

func (t *ScaleSetTarget) setWaiting(err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err == nil {
		t.waitErr, t.waitFrom = nil, time.Time{}
		return
	}
	if t.waitErr == nil {
		t.waitFrom = t.c.cfg.Now()
	}
	t.waitErr = err
}

// current returns the client, the scale set's id and their generation.
func (t *ScaleSetTarget) current() (*scaleset.Client, int, uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ss, t.set.ID, t.gen
}

// renewClient replaces the scale-set client after a 401, unless another
// caller did since generation gen: the new client exchanges a new
// registration token for a new admin token at its first call.
func (t *ScaleSetTarget) renewClient(gen uint64) error {
	t.renewMu.Lock()
	defer t.renewMu.Unlock()
	if _, _, now := t.current(); now != gen {
		return nil
	}
	ss, err := t.c.scaleSetClient(t.target.Scope, t.log)
	if err != nil {
		return err
	}
	t.mu.Lock()
	t.ss = ss
	t.gen++
	t.mu.Unlock()
	t.log.Info("the Actions service refused our token: getting new registration and admin tokens")
	return nil
}

// refindScaleSet looks the scale set up again (creating it if it is gone)
// after a 404, unless another caller did since generation gen.
func (t *ScaleSetTarget) refindScaleSet(ctx context.Context, gen uint64) error {
	t.renewMu.Lock()
	defer t.renewMu.Unlock()
	ss, _, now := t.current()
	if now != gen {
		return nil
	}
	return t.ensureScaleSet(ctx, ss)
}

// recovering runs fn with the current client and scale set; on a 401 it
// renews the client, and with setLost on a 404 it finds or creates the
// scale set again, then runs fn once more.
func (t *ScaleSetTarget) recovering(ctx context.Context, action string, setLost bool, fn func(ctx context.Context, ss *scaleset.Client, setID int) error) (int, error) {
	for try := 0; ; try++ {
		ss, setID, gen := t.current()
		status, err := t.call(ctx, action, func(ctx context.Context) error { return fn(ctx, ss, setID) })
		if err == nil || try > 0 || ctx.Err() != nil {
			return status, err
		}
		switch {
		case errors.Is(err, rm.ErrUnauthorized):
			if rerr := t.renewClient(gen); rerr != nil {
				return status, err
			}
		case setLost && errors.Is(err, rm.ErrNotFound):
			t.log.Warn("the scale set is gone at GitHub: finding or creating it again", "err", err)
			if rerr := t.refindScaleSet(ctx, gen); rerr != nil {
				return status, fmt.Errorf("%w (finding the scale set again: %v)", err, rerr)
			}
		default:
			return status, err
		}
	}
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
	credential := rec.credentialRoute()
	msg := ""
	if !credential {
		_, msg = actionsMessage(body)
	}
	if mapped := statusError(status, header, msg, action, t.target.Scope); mapped != nil {
		return mapped
	}
	if credential && status != 0 {
		// actions/scaleset's error quotes the answer's body.
		return unavailable(status, fmt.Errorf("%s: %w", action, &quietError{status: status, err: err}))
	}
	return unavailable(status, fmt.Errorf("%s: %w", action, err))
}

// ensureScaleSet finds the target's scale set with ss, or creates it, and
// makes it the target's.
func (t *ScaleSetTarget) ensureScaleSet(ctx context.Context, ss *scaleset.Client) error {
	name := t.target.ScaleSet
	groupID, found, err := t.findScaleSet(ctx, ss)
	if err != nil {
		return err
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

	switch {
	case found == nil:
		var created *scaleset.RunnerScaleSet
		if _, err := t.call(ctx, fmt.Sprintf("create scale set %q in %s", name, t.target.Scope), func(ctx context.Context) (err error) {
			w := want
			created, err = ss.CreateRunnerScaleSet(ctx, &w)
			return err
		}); err != nil {
			// Hosts of a fleet serving one scale set start at once: the
			// one whose create lost finds the winner's.
			if _, again, ferr := t.findScaleSet(ctx, ss); ferr == nil && again != nil {
				t.log.Info("another manager created the scale set meanwhile", "id", again.ID)
				found = again
				break
			}
			return err
		}
		t.log.Info("created the scale set", "id", created.ID)
		t.recordCreated(ctx, created)
		found = created
	case !sameLabels(found.Labels, labels) || found.RunnerSetting.DisableUpdate != t.opts.DisableUpdate:
		var updated *scaleset.RunnerScaleSet
		if _, err := t.call(ctx, fmt.Sprintf("update scale set %q in %s", name, t.target.Scope), func(ctx context.Context) (err error) {
			w := want
			updated, err = ss.UpdateRunnerScaleSet(ctx, found.ID, &w)
			return err
		}); err != nil {
			return err
		}
		t.log.Info("updated the scale set's labels and settings", "id", found.ID)
		found = updated
	}
	if found == nil || found.ID == 0 {
		return fmt.Errorf("scale set %q in %s: GitHub answered without an id", name, t.target.Scope)
	}
	t.mu.Lock()
	oldID := t.set.ID
	t.set = *found
	t.gen++
	t.mu.Unlock()
	if oldID != 0 && oldID != found.ID {
		t.log.Warn("the scale set was gone at GitHub (deleted there, or GitHub restarted): created again", "old_id", oldID, "id", found.ID)
		t.forgetSessionOf(ctx, oldID)
	}
	return nil
}

// findScaleSet looks the target's runner group up (1, the default group,
// everywhere) and its scale set in it: nil when there is none yet.
func (t *ScaleSetTarget) findScaleSet(ctx context.Context, ss *scaleset.Client) (groupID int, found *scaleset.RunnerScaleSet, err error) {
	groupID = 1
	if g := t.target.RunnerGroup; g != "" && !strings.EqualFold(g, rm.DefaultRunnerGroup) {
		var group *scaleset.RunnerGroup
		_, err := t.call(ctx, fmt.Sprintf("find runner group %q in %s", g, t.target.Scope), func(ctx context.Context) (err error) {
			group, err = ss.GetRunnerGroupByName(ctx, g)
			return err
		})
		if err != nil {
			if strings.Contains(err.Error(), "no runner group found") {
				return 0, nil, fmt.Errorf("find runner group %q in %s: %w: no such runner group; create it or use %s", g, t.target.Scope, rm.ErrNotFound, rm.DefaultRunnerGroup)
			}
			return 0, nil, err
		}
		groupID = group.ID
	}
	name := t.target.ScaleSet
	if _, err := t.call(ctx, fmt.Sprintf("find scale set %q in %s", name, t.target.Scope), func(ctx context.Context) (err error) {
		found, err = ss.GetRunnerScaleSet(ctx, groupID, name)
		return err
	}); err != nil {
		return 0, nil, err
	}
	return groupID, found, nil
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

var ownerInMessage = regexp.MustCompile(`(?i)owner\s+'?([^'\s]+?)'?\.?$`)

// errTargetClosed ends a watch whose target was closed under it.
var errTargetClosed = errors.New("the scale-set target is closed")

// Close deletes the message session (and forgets it in the journal), and
// the scale set with DeleteOnClose.
func (t *ScaleSetTarget) Close(ctx context.Context) error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	s := t.session
	t.session = nil
	ss, setID := t.ss, t.set.ID
	t.mu.Unlock()
	var errs []error
	if s != nil {
		if err := t.endSession(ctx, s, "delete the message session"); err != nil {
			errs = append(errs, err)
		}
	}
	if t.opts.DeleteOnClose {
		if err := t.deleteScaleSet(ctx, ss, fmt.Sprintf("delete scale set %q", t.target.ScaleSet), setID); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}
