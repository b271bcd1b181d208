package github

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// runnerLists holds a Client's shared REST runner lists, one per scope:
// every classic target of a scope reads the same GET
// /{scope}/actions/runners, so the loops of one repository need one list
// per interval between them, not one each. A list in a busy period is new
// every time (runners come and go), so the conditional request the ETag
// cache sends is answered 200 and charged: sharing is what saves quota.
//
// A list is kept with the time its request was sent (its first page's,
// on the Client's clock): the registrations it shows are GitHub's at that
// time or later. A caller asks for a list taken at or after a time of its
// choosing (RunnersSince); the newest list serves it when it is that
// fresh, else one request is sent, and every caller asking meanwhile for
// no fresher a list waits for that request instead of sending its own.
//
// This Client's own writes: a registration it removed (RemoveRunner, and
// the removal of a stale same-name registration before a JIT
// registration) is left out of every list sent before the removal was
// answered, so no list handed out shows what this Client already removed.
// A registration it created is not added to lists sent before: such a list
// is GitHub's word from before the registration existed, and a caller
// that must see it asks for a list taken after it (its notBefore), which
// no older list satisfies. The reconcile loop counts a runner missing only
// from a list taken after the runner started, which its JIT registration
// precedes.
type runnerLists struct {
	mu     sync.Mutex
	scopes map[string]*scopeRunners
}

// of returns the scope's shared list.
func (h *runnerLists) of(scope rm.Scope) *scopeRunners {
	key := strings.ToLower(scope.String())
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.scopes == nil {
		h.scopes = map[string]*scopeRunners{}
	}
	l := h.scopes[key]
	if l == nil {
		l = &scopeRunners{scope: scope, flying: map[*runnerListFlight]struct{}{}, removed: map[int64]time.Time{}}
		h.scopes[key] = l
	}
	return l
}

// scopeRunners is one scope's shared runner list.
type scopeRunners struct {
	scope rm.Scope

	mu sync.Mutex
	// have: runners (every registration of the scope, unfiltered) is the
	// newest list answered, whose request was sent at at.
	have    bool
	at      time.Time
	runners []rm.Runner
	// flight is the newest request under way, which callers join; flying
	// holds every request under way (for pruning removed).
	flight *runnerListFlight
	flying map[*runnerListFlight]struct{}
	// removed are the registrations this Client removed, with when GitHub
	// answered the removal; a list sent at or before that time leaves
	// them out. Kept while a list that old may still be handed out.
	removed map[int64]time.Time
}

// runnerListFlight is one list request under way.
type runnerListFlight struct {
	at      time.Time // sent
	done    chan struct{}
	runners []rm.Runner // every registration, once done without err
	err     error
}

// RunnersSince returns the scope's registrations whose name starts with
// namePrefix, from a list whose request was sent at or after notBefore
// (at says when, on the Client's clock), every page. The scope's newest
// list answers when it is that fresh, without a request; otherwise one is
// sent, which every caller of any target of the scope on this Client
// asking meanwhile for no fresher a list shares. A list that this call
// sent itself is returned even when notBefore is later than its send time
// (notBefore ahead of the clock). Registrations this Client removed are
// never shown by a list sent before their removal was answered; those it
// created since at are not shown either (see runnerLists). The runners
// are the caller's to keep.
func (t *ClassicTarget) RunnersSince(ctx context.Context, namePrefix string, notBefore time.Time) ([]rm.Runner, time.Time, error) {
	return t.c.runnerLists.of(t.target.Scope).since(ctx, t.c, namePrefix, notBefore, false)
}

// since serves RunnersSince; fresh always sends a request of its own (a
// list sent now, which then serves the others).
func (l *scopeRunners) since(ctx context.Context, c *Client, prefix string, notBefore time.Time, fresh bool) ([]rm.Runner, time.Time, error) {
	for {
		l.mu.Lock()
		if !fresh && l.have && !l.at.Before(notBefore) {
			rs, at := l.view(l.runners, l.at, prefix), l.at
			l.mu.Unlock()
			return rs, at, nil
		}
		f, own := l.flight, false
		if fresh || f == nil || f.at.Before(notBefore) {
			f, own = &runnerListFlight{at: c.cfg.Now(), done: make(chan struct{})}, true
			l.flight = f
			l.flying[f] = struct{}{}
		}
		l.mu.Unlock()
		if own {
			l.send(ctx, c, f)
		} else {
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, time.Time{}, ctx.Err()
			}
		}
		if f.err != nil {
			if !own && ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) {
				continue // the caller that sent it gave up, not this one: ask again
			}
			return nil, time.Time{}, f.err
		}
		l.mu.Lock()
		rs, at := f.runners, f.at
		if l.have && l.at.After(at) {
			rs, at = l.runners, l.at // a newer list answered meanwhile
		}
		out := l.view(rs, at, prefix)
		l.mu.Unlock()
		return out, at, nil
	}
}

// send lists the scope's runners for f and keeps the answer when it is
// the newest.
func (l *scopeRunners) send(ctx context.Context, c *Client, f *runnerListFlight) {
	rs, err := listRESTRunners(ctx, c.gh, l.scope, "", nil)
	l.mu.Lock()
	f.runners, f.err = rs, err
	if l.flight == f {
		l.flight = nil
	}
	delete(l.flying, f)
	if err == nil && (!l.have || !f.at.Before(l.at)) {
		l.have, l.at, l.runners = true, f.at, rs
	}
	l.prune()
	l.mu.Unlock()
	close(f.done)
}

// view is the caller's copy of list rs, sent at at: the names with
// prefix, less the registrations this Client removed after at. l.mu is
// held.
func (l *scopeRunners) view(rs []rm.Runner, at time.Time, prefix string) []rm.Runner {
	var out []rm.Runner
	for _, r := range rs {
		if !strings.HasPrefix(r.Name, prefix) {
			continue
		}
		if gone, ok := l.removed[r.ID]; ok && !gone.Before(at) {
			continue
		}
		r.Labels = slices.Clone(r.Labels)
		out = append(out, r)
	}
	return out
}

// noteRemoved records that this Client removed registration id, as GitHub
// answered at at.
func (l *scopeRunners) noteRemoved(id int64, at time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if prev, ok := l.removed[id]; !ok || at.After(prev) {
		l.removed[id] = at
	}
	l.prune()
}

// prune forgets removals older than every list that may still be handed
// out: the newest answered and those under way (an older answer is never
// kept, but is returned to the callers that waited for it). l.mu is held.
func (l *scopeRunners) prune() {
	if !l.have {
		return
	}
	oldest := l.at
	for f := range l.flying {
		if f.at.Before(oldest) {
			oldest = f.at
		}
	}
	for id, at := range l.removed {
		if at.Before(oldest) {
			delete(l.removed, id)
		}
	}
}

// RunnerList is a scope's newest REST runner list: every registration of
// the scope, whatever registered it, as GitHub listed it at At.
type RunnerList struct {
	Scope   rm.Scope
	At      time.Time
	Runners []rm.Runner
}

// RunnerLists returns the newest runner list of every scope this Client
// has listed (its classic targets list them for their own bookkeeping),
// sorted by scope, less the registrations it removed since. It sends
// nothing: a scope never listed, or listed only by requests that failed,
// is not in it. The lists are the caller's to keep.
func (c *Client) RunnerLists() []RunnerList {
	c.runnerLists.mu.Lock()
	scopes := make([]*scopeRunners, 0, len(c.runnerLists.scopes))
	for _, l := range c.runnerLists.scopes {
		scopes = append(scopes, l)
	}
	c.runnerLists.mu.Unlock()
	var out []RunnerList
	for _, l := range scopes {
		l.mu.Lock()
		if l.have {
			out = append(out, RunnerList{Scope: l.scope, At: l.at, Runners: l.view(l.runners, l.at, "")})
		}
		l.mu.Unlock()
	}
	slices.SortFunc(out, func(a, b RunnerList) int { return strings.Compare(a.Scope.String(), b.Scope.String()) })
	return out
}
