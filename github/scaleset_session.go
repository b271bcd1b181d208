package github

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/actions/scaleset"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
)

// The scale set's message session: opened (and a stale one of this host
// deleted), long-polled, and the demand and job events read from it.

// openSession opens the scale set's message session. The first open, and
// a 409 naming this manager as owner (or no owner), delete the session the
// journal says this manager left (a crash kept it at GitHub), then open at
// once; a session of another owner is never touched: it is retried with
// backoff, then refused with ErrSessionConflict naming the owner.
func (t *ScaleSetTarget) openSession(ctx context.Context) (*scaleset.MessageSessionClient, error) {
	t.mu.Lock()
	closed, stale, first := t.closed, t.stale, !t.opened
	t.mu.Unlock()
	if closed {
		return nil, fmt.Errorf("scale set %q: %w", t.target.ScaleSet, errTargetClosed)
	}
	if stale {
		_, _, gen := t.current()
		if err := t.refindScaleSet(ctx, gen); err != nil {
			return nil, err
		}
		t.mu.Lock()
		t.stale = false
		t.mu.Unlock()
	}
	action := fmt.Sprintf("open the message session of scale set %q", t.target.ScaleSet)
	cleared := false
	if first {
		var err error
		if cleared, err = t.clearOwnSession(ctx); err != nil {
			return nil, err
		}
	}
	for try := 0; ; try++ {
		ss, setID, _ := t.current()
		rctx, rec := withCallRecord(ctx)
		s, err := ss.MessageSessionClient(rctx, setID, t.opts.Owner, scaleset.WithRetryableHTTPClint(t.c.retryableClient()))
		if err == nil {
			return t.adopt(ctx, s)
		}
		status, _, body := rec.last()
		if status != http.StatusConflict {
			return nil, t.mapCall(ctx, action, err, rec)
		}
		// The create is a credential route: of its answer only the owner
		// the 409's message names is kept, never the message itself.
		_, msg := actionsMessage(body)
		owner := ""
		if m := ownerInMessage.FindStringSubmatch(msg); m != nil {
			owner = m[1]
		}
		if !cleared && (owner == "" || owner == t.opts.Owner) {
			cleared = true
			ok, err := t.clearOwnSession(ctx)
			if err != nil {
				return nil, err
			}
			if ok {
				continue
			}
		}
		if try >= t.opts.SessionConflictRetries {
			if owner == "" {
				owner = "unknown"
			}
			if owner == t.opts.Owner {
				// A session of this name the journal does not know: a
				// create whose answer was cut off, or another manager
				// running under the same name. Only GitHub can let it go.
				return nil, fmt.Errorf("%w%w: GitHub holds a message session of scale set %q under this manager's own name (%s) that the journal has no record of (a session create whose answer was lost, or another manager running under this name); waiting for GitHub to let it go",
					rm.ErrSessionConflict, errOwnSessionHeld, t.target.ScaleSet, owner)
			}
			return nil, fmt.Errorf("%w: another manager (owner %s) holds the session of scale set %q; stop it or wait",
				rm.ErrSessionConflict, owner, t.target.ScaleSet)
		}
		// Our own name is retried as often as an outage (it is ours to
		// take once GitHub lets it go); another owner's, slower.
		pace := backoff.Policy{Base: 2 * time.Second, Cap: 30 * time.Second}
		if owner == t.opts.Owner {
			pace = outage
		}
		wait := pace.Wait(try)
		t.log.Debug("the message session is held, retrying", "owner", owner, "try", try+1, "wait", wait)
		if err := t.c.cfg.Sleep(ctx, wait); err != nil {
			return nil, err
		}
	}
}

// adopt makes s the target's session and records it in the journal; a
// target closed meanwhile deletes it again.
func (t *ScaleSetTarget) adopt(ctx context.Context, s *scaleset.MessageSessionClient) (*scaleset.MessageSessionClient, error) {
	_, setID, _ := t.current()
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		_, _ = t.call(ctx, "delete the message session", s.Close)
		return nil, fmt.Errorf("scale set %q: %w", t.target.ScaleSet, errTargetClosed)
	}
	t.session, t.opened = s, true
	t.mu.Unlock()
	id := s.Session().SessionID.String()
	t.recordSession(ctx, s, rm.SessionRecord{ScaleSetID: setID, SessionID: id, Owner: t.opts.Owner, HostID: t.opts.HostID, Scope: t.target.Scope.String(), CreatedAt: t.c.cfg.Now()})
	t.log.Info("message session open", "owner", t.opts.Owner, "session", id, "scale_set_id", setID)
	return s, nil
}

// clearOwnSession deletes, at GitHub and in the journal, the session the
// journal says this manager (same owner, same host) opened on the scale
// set and never closed. It reports whether there was one.
func (t *ScaleSetTarget) clearOwnSession(ctx context.Context) (bool, error) {
	j := t.opts.Journal
	if j == nil {
		return false, nil
	}
	_, setID, _ := t.current()
	rec, found, err := j.SessionOf(ctx, setID)
	if err != nil {
		t.log.Warn("cannot read the journal's record of the message session", "err", err)
		return false, nil
	}
	if !found || rec.Owner != t.opts.Owner || (t.opts.HostID != "" && rec.HostID != "" && rec.HostID != t.opts.HostID) {
		return false, nil
	}
	t.log.Info("deleting the message session this manager left open", "session", rec.SessionID, "opened", rec.CreatedAt)
	if err := t.c.deleteSession(ctx, t.target.Scope, setID, rec.SessionID); err != nil {
		return false, err
	}
	if err := j.ForgetSession(ctx, setID, rec.SessionID); err != nil {
		t.log.Warn("cannot forget the deleted message session in the journal", "session", rec.SessionID, "err", err)
	}
	return true, nil
}

// forgetSessionOf forgets this manager's session of a scale set that is
// gone: GitHub forgot it with its scale set.
func (t *ScaleSetTarget) forgetSessionOf(ctx context.Context, setID int) {
	j := t.opts.Journal
	if j == nil {
		return
	}
	rec, found, err := j.SessionOf(ctx, setID)
	if err != nil || !found || rec.Owner != t.opts.Owner {
		return
	}
	if err := j.ForgetSession(ctx, setID, rec.SessionID); err != nil {
		t.log.Warn("cannot forget the message session of the lost scale set", "session", rec.SessionID, "err", err)
	}
}

// dropSession deletes a session the watch gives up (lost, refused, or
// restarted so that GitHub offers its jobs again) and forgets it in the
// journal once GitHub no longer has it. A failed delete keeps the record:
// the next open's 409 deletes it by id.
func (t *ScaleSetTarget) dropSession(ctx context.Context, s *scaleset.MessageSessionClient) {
	t.mu.Lock()
	if t.session == s {
		t.session = nil
	}
	t.mu.Unlock()
	t.endSession(ctx, s, "delete the message session")
}

// endSession deletes s at GitHub and then in the journal.
func (t *ScaleSetTarget) endSession(ctx context.Context, s *scaleset.MessageSessionClient, action string) error {
	_, setID, _ := t.current()
	id := s.Session().SessionID.String()
	status, err := t.call(ctx, action, s.Close)
	if err != nil && status != http.StatusNotFound {
		t.log.Debug("the message session could not be deleted", "session", id, "err", err)
		return err
	}
	if j := t.opts.Journal; j != nil {
		if err := j.ForgetSession(ctx, setID, id); err != nil {
			t.log.Warn("cannot forget the message session in the journal", "session", id, "err", err)
		}
	}
	return nil
}

var errCapacityChanged = errors.New("capacity changed")

// errOwnSessionHeld marks a conflict with a session of this manager's own
// name that the journal cannot name: ours to take once GitHub lets it go,
// so Watch keeps trying at the outage pace instead of returning it.
var errOwnSessionHeld = errors.New("")

// Watch opens the message session and long-polls it until ctx ends (nil),
// the target is closed, or another owner keeps the session
// (ErrSessionConflict). Each message is acknowledged, its available jobs
// acquired, and its statistics.TotalAssignedJobs reported as demand with
// its job events. maxCapacity is sent with every poll; it is also read
// every CapacityCheck during a poll, from another goroutine, and a change
// ends the poll early so GitHub learns it at once.
//
// Watch recovers by itself, with backoff from about 1 s capped at
// MaxOutageWait, and Waiting says why it waits (each failure is logged
// once per change): a 401 (admin, queue or session token, or the
// credentials themselves) renews the registration and admin tokens and
// opens a new session; a 404 (the session forgotten, or the scale set
// deleted) finds or creates the scale set again and opens a new session; a
// session without a message-queue URL is deleted and another opened; a
// session held under this manager's own name that the journal cannot name
// is waited for; 5xx and network errors are retried; a rate limit is
// waited out.
func (t *ScaleSetTarget) Watch(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error {
	var (
		sess     *scaleset.MessageSessionClient
		lastID   int
		failures int
		// quick counts repairs retried at once (a new token, the scale
		// set found again): a 401 or 404 after a repair backs off.
		quick int
		// wanted is the last figure reported: repeated after an empty poll
		// (202) while it is above zero, as the scale-set listener does, so
		// a report that came while a finished runner had not yet exited is
		// not the last word.
		wanted int
	)
	var note changeNote
	for ctx.Err() == nil {
		var err error
		if sess != nil && sess.Session().MessageQueueURL == "" {
			// Never polled: GitHub's listener exits on such a session
			// (actions/actions-runner-controller #4370); this one is
			// deleted and another opened, with backoff.
			t.log.Debug("deleting a message session that came without a queue URL", "session", sess.Session().SessionID.String())
			t.dropSession(ctx, sess)
			sess = nil
			err = fmt.Errorf("open the message session of scale set %q: %w: GitHub answered without a message-queue URL (the session was deleted); opening another", t.target.ScaleSet, ErrNoQueueURL)
		} else if sess == nil {
			if sess, err = t.openSession(ctx); err == nil && sess.Session().MessageQueueURL == "" {
				continue // deleted above, before any poll
			} else if err == nil {
				lastID = 0
				d := rm.Demand{At: t.c.cfg.Now()}
				if st := sess.Session().Statistics; st != nil {
					d.Wanted, d.Queued = st.TotalAssignedJobs, queued(st)
					d.Running, d.RunningCounted = st.TotalRunningJobs, true
					d.Pending, d.PendingListed = t.pending.apply(nil, st, d.At), true
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
				d, acquireErr := t.handle(ctx, sess, msg)
				wanted = d.Wanted
				report(d)
				if acquireErr != nil && ctx.Err() == nil {
					// As GitHub's own listener does: a new session is
					// offered the jobs this one could not acquire.
					t.log.Warn("cannot acquire jobs: restarting the message session so that GitHub offers them again", "err", acquireErr)
					t.dropSession(ctx, sess)
					sess, err = nil, acquireErr
				}
			case err == nil && wanted > 0:
				// Idle (nothing wanted) stays silent: no pass, no call.
				report(rm.Demand{Wanted: wanted, At: t.c.cfg.Now()})
			}
		}
		switch {
		case err == nil, errors.Is(err, errCapacityChanged):
			if failures > 0 || quick > 0 {
				note.recovered(t.log)
			}
			failures, quick = 0, 0
			t.setWaiting(nil)
			continue
		case ctx.Err() != nil:
			return nil
		case errors.Is(err, errTargetClosed):
			return err
		case errors.Is(err, rm.ErrSessionConflict) && !errors.Is(err, errOwnSessionHeld):
			t.setWaiting(err)
			note.failed(t.log, err)
			return err
		case errors.Is(err, rm.ErrUnauthorized):
			if sess != nil {
				t.dropSession(ctx, sess)
				sess = nil
			}
			_, _, gen := t.current()
			if rerr := t.renewClient(gen); rerr != nil {
				t.log.Warn("cannot renew the scale-set client", "err", rerr)
			}
			if quick < 2 {
				quick++
				continue // at once with new tokens; a refused PAT backs off
			}
		case errors.Is(err, rm.ErrNotFound):
			if sess != nil {
				note.failed(t.log, err)
				t.dropSession(ctx, sess)
				sess = nil
			}
			t.mu.Lock()
			t.stale = true
			t.mu.Unlock()
			if quick < 2 {
				quick++
				continue // at once, finding the scale set first
			}
		}
		wait := outage.Wait(failures)
		failures++
		if rle, ok := asRateLimit(err); ok {
			wait = max(rle.Reset.Sub(t.c.cfg.Now()), time.Second)
		}
		t.setWaiting(err)
		note.failed(t.log, err, "wait", wait)
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
	action := "poll the message queue of scale set " + strconv.Quote(t.target.ScaleSet)
	status, err := t.call(pctx, action, func(ctx context.Context) (err error) {
		msg, err = sess.GetMessage(ctx, lastID, capacity)
		return err
	})
	if err != nil && changed.Load() && ctx.Err() == nil {
		return nil, errCapacityChanged
	}
	if err != nil && status == http.StatusNotFound {
		// The queue, or the refresh a 401 led to, does not know the
		// session: it was deleted with its scale set, or the service
		// forgot it (actions/scaleset #123). Not the scope's absence.
		return nil, fmt.Errorf("%s: %w: GitHub no longer knows the message session (the service forgot it, or its scale set was deleted); opening a new one",
			action, rm.ErrNotFound)
	}
	return msg, err
}

// queued is how many jobs wait at GitHub for this scale set beyond what
// it assigned: those offered and not taken (totalAvailableJobs) and those
// it acquired, or GitHub gave it directly, that wait for capacity
// (totalAcquiredJobs): a backlog beyond max is acquired, not available.
func queued(st *scaleset.RunnerScaleSetStatistic) int {
	return st.TotalAvailableJobs + st.TotalAcquiredJobs
}

func clampCapacity(n int) int { return min(max(n, 0), math.MaxInt32) }

// handle acknowledges a message, acquires its available jobs and turns it
// into a Demand. The error is the acquisition's: the caller restarts the
// session so that GitHub offers those jobs again.
func (t *ScaleSetTarget) handle(ctx context.Context, sess *scaleset.MessageSessionClient, msg *scaleset.RunnerScaleSetMessage) (rm.Demand, error) {
	now := t.c.cfg.Now()
	if _, err := t.call(ctx, "acknowledge a message", func(ctx context.Context) error { return sess.DeleteMessage(ctx, msg.MessageID) }); err != nil {
		t.log.Warn("cannot acknowledge a message; it may come again", "message", msg.MessageID, "err", err)
	}
	var acquireErr error
	if len(msg.JobAvailableMessages) > 0 {
		ids := make([]int64, 0, len(msg.JobAvailableMessages))
		for _, j := range msg.JobAvailableMessages {
			ids = append(ids, j.RunnerRequestID)
		}
		var status int
		status, acquireErr = t.call(ctx, fmt.Sprintf("acquire %d jobs", len(ids)), func(ctx context.Context) error {
			_, err := sess.AcquireJobs(ctx, ids)
			return err
		})
		if acquireErr != nil && status == http.StatusNotFound {
			// Nothing to acquire: the jobs were assigned directly, or
			// taken already. A restart would not bring them back; the
			// statistics say what is assigned.
			t.log.Debug("GitHub had no jobs to acquire", "jobs", len(ids), "err", acquireErr)
			acquireErr = nil
		}
	}
	d := rm.Demand{At: now}
	if msg.Statistics != nil {
		d.Wanted, d.Queued = msg.Statistics.TotalAssignedJobs, queued(msg.Statistics)
		d.Running, d.RunningCounted = msg.Statistics.TotalRunningJobs, true
	}
	for _, j := range msg.JobAssignedMessages {
		d.Events = append(d.Events, jobEvent(rm.JobAssigned, j.JobMessageBase, 0, "", "", now))
	}
	for _, j := range msg.JobStartedMessages {
		d.Events = append(d.Events, jobEvent(rm.JobStarted, j.JobMessageBase, j.RunnerID, j.RunnerName, "", now))
	}
	for _, j := range msg.JobCompletedMessages {
		d.Events = append(d.Events, jobEvent(rm.JobCompleted, j.JobMessageBase, j.RunnerID, j.RunnerName, j.Result, now))
	}
	d.Pending, d.PendingListed = t.pending.apply(msg, msg.Statistics, now), true
	return d, acquireErr
}

// jobEvent is one scale-set job message as a JobEvent. The job's id is the
// message's jobId, kept as the string it is (actions/scaleset v0.4.0
// types.go JobMessageBase: `JobID string`; a UUID on github.com, never the
// REST job number, which these messages do not carry). A message with no
// jobId, from a server older than the field (cloudbase/garm #459), is named
// by its runnerRequestId in decimal instead: JobMessageBase carries that on
// every message of the job (JobAvailable, JobAssigned, JobStarted,
// JobCompleted alike), so it names one job as steadily; and a server that
// sends a jobId is reported to send runnerRequestId 0 (the same thread), so
// the two never mix. With neither, the id is "" and the job stays unknown.
func jobEvent(kind rm.JobEventKind, b scaleset.JobMessageBase, runnerID int, runnerName, result string, now time.Time) rm.JobEvent {
	id := b.JobID
	if id == "" && b.RunnerRequestID != 0 {
		id = strconv.FormatInt(b.RunnerRequestID, 10)
	}
	return rm.JobEvent{
		Kind: kind, JobID: id, RunID: b.WorkflowRunID, RunnerID: int64(runnerID), RunnerName: runnerName,
		Result: result, Workflow: b.JobWorkflowRef, DisplayName: b.JobDisplayName, Labels: b.RequestLabels, At: now,
		QueuedAt: b.QueueTime, AssignedAt: b.ScaleSetAssignTime, RunnerAssignedAt: b.RunnerAssignTime, FinishedAt: b.FinishTime,
	}
}
