package reconcile

import (
	"context"
	"errors"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// The retries of registrations GitHub would not remove.
const (
	// removalRetryEvery is how often a held registration is asked for again.
	removalRetryEvery = 15 * time.Second
	// removalGiveUpAfter ends the retries: by then GitHub has failed the
	// job its runner was handed and let the registration go, or something
	// else holds it that a person must look at.
	removalGiveUpAfter = 30 * time.Minute
)

// heldRemovals are registrations of concluded attempts that GitHub refused
// to remove because it still counted them busy: a runner that was handed a
// job and died with it (a manager killed between a registration and the
// record of its launch, whose runner the restart then stopped), or one
// stopped mid-job. Its process is gone, so GitHub lets the registration go
// once it fails the job; until then the removal is asked for again every
// removalRetryEvery, since in scale-set mode no runner list would show the
// registration later. The retries live in memory: a restart forgets them
// (the kept attempt rows name the runners, for a person).
type heldRemovals struct {
	mu sync.Mutex
	m  map[int64]heldRemoval
}

type heldRemoval struct {
	runner      string
	since, next time.Time
}

// hold queues the removal of registration id (of runner name) for a retry.
func (h *heldRemovals) hold(id int64, runner string, now time.Time) {
	if id == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m == nil {
		h.m = make(map[int64]heldRemoval)
	}
	if _, ok := h.m[id]; !ok {
		h.m[id] = heldRemoval{runner: runner, since: now, next: now.Add(removalRetryEvery)}
	}
}

// due returns the registrations whose retry is due at now.
func (h *heldRemovals) due(now time.Time) map[int64]heldRemoval {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out map[int64]heldRemoval
	for id, r := range h.m {
		if !now.Before(r.next) {
			if out == nil {
				out = make(map[int64]heldRemoval)
			}
			out[id] = r
		}
	}
	return out
}

func (h *heldRemovals) done(id int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.m, id)
}

func (h *heldRemovals) later(id int64, now time.Time) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r, ok := h.m[id]; ok {
		r.next = now.Add(removalRetryEvery)
		h.m[id] = r
	}
}

// next is the earliest retry (zero for none).
func (h *heldRemovals) next() time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	var t time.Time
	for _, r := range h.m {
		if t.IsZero() || r.next.Before(t) {
			t = r.next
		}
	}
	return t
}

// retryRemovals asks again for the held registrations that are due, and
// wakes the loop for the next one.
func (p *pass) retryRemovals(ctx context.Context) {
	l := p.l
	for id, r := range l.held.due(p.now) {
		if p.isQuiet() {
			break
		}
		err := l.cfg.Target.Registrar.RemoveRunner(ctx, id)
		switch {
		case err == nil:
			p.githubOK()
			l.held.done(id)
			l.log.Info("removed a registration GitHub had held as busy after its attempt ended", "runner", r.runner, "runner_id", id)
		case errors.Is(err, rm.ErrRunnerBusy) && p.now.Sub(r.since) >= removalGiveUpAfter:
			l.held.done(id)
			l.log.Warn("GitHub still holds a registration busy whose attempt ended; no longer asking (remove it in the repository's runner settings)",
				"runner", r.runner, "runner_id", id, "since", r.since.Format(time.RFC3339))
		case errors.Is(err, rm.ErrRunnerBusy):
			l.held.later(id, p.now)
		default:
			l.held.later(id, p.now)
			p.githubErr(err, "remove runner")
		}
	}
	p.deadline(l.held.next())
}
