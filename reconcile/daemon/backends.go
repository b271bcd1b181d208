package daemon

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

// backends is the supervisor's launcher when a daemon has launchers of
// several backends: each attempt goes to the launcher of its policy's
// backend, read from the journal once (the attempt's row is written before
// its launch) and remembered until its Cleanup.
type backends struct {
	st store.Store
	by map[rm.Backend]reconcile.Launcher

	mu sync.Mutex
	of map[rm.AttemptID]reconcile.Launcher
}

var (
	_ reconcile.Launcher   = (*backends)(nil)
	_ reconcile.RootLister = (*backends)(nil)
)

func newBackends(st store.Store, by map[rm.Backend]reconcile.Launcher) *backends {
	return &backends{st: st, by: by, of: map[rm.AttemptID]reconcile.Launcher{}}
}

// lookupTimeout bounds a journal read of calls that carry no context.
const lookupTimeout = 10 * time.Second

// launcherOf is the launcher of the attempt's policy's backend.
func (b *backends) launcherOf(ctx context.Context, id rm.AttemptID) (reconcile.Launcher, error) {
	b.mu.Lock()
	l := b.of[id]
	b.mu.Unlock()
	if l != nil {
		return l, nil
	}
	a, err := b.st.Attempt(ctx, id)
	if err != nil {
		return nil, fmt.Errorf("find the backend of attempt %s: %w", id, err)
	}
	p, err := b.st.Policy(ctx, a.Policy)
	if err != nil {
		return nil, fmt.Errorf("find the backend of attempt %s: %w", id, err)
	}
	backend := p.Backend
	if backend == "" {
		backend = rm.BackendNative
	}
	if l = b.by[backend]; l == nil {
		return nil, fmt.Errorf("%w: policy %q uses backend %q, which this daemon has no launcher for", rm.ErrInvalid, p.Name, backend)
	}
	b.mu.Lock()
	b.of[id] = l
	b.mu.Unlock()
	return l, nil
}

// Launch implements reconcile.Launcher.
func (b *backends) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	l, err := b.launcherOf(ctx, spec.Attempt)
	if err != nil {
		return nil, err
	}
	return l.Launch(ctx, spec)
}

// Adopt implements reconcile.Launcher.
func (b *backends) Adopt(id rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	l, err := b.launcherOf(ctx, id)
	if err != nil {
		return nil, err
	}
	return l.Adopt(id, pid, start)
}

// Cleanup implements reconcile.Launcher. The root of an attempt the
// journal does not know (a sweep found it) is cleaned by every launcher
// that lists it.
func (b *backends) Cleanup(id rm.AttemptID, failed bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), lookupTimeout)
	defer cancel()
	l, err := b.launcherOf(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return b.cleanupUnknown(id, failed)
	}
	if err != nil {
		return err
	}
	b.mu.Lock()
	delete(b.of, id)
	b.mu.Unlock()
	return l.Cleanup(id, failed)
}

func (b *backends) cleanupUnknown(id rm.AttemptID, failed bool) error {
	var errs []error
	for _, l := range b.by {
		rl, ok := l.(reconcile.RootLister)
		if !ok {
			continue
		}
		ids, err := rl.Roots()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, r := range ids {
			if r == id {
				errs = append(errs, l.Cleanup(id, failed))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// Roots implements reconcile.RootLister: the roots of every launcher that
// lists its own.
func (b *backends) Roots() ([]rm.AttemptID, error) {
	var out []rm.AttemptID
	var errs []error
	for _, l := range b.by {
		if rl, ok := l.(reconcile.RootLister); ok {
			ids, err := rl.Roots()
			out = append(out, ids...)
			errs = append(errs, err)
		}
	}
	return out, errors.Join(errs...)
}

// RanJob passes on the evidence of the attempt's launcher, when it has
// any, that the attempt's runner ran a job.
func (b *backends) RanJob(id rm.AttemptID) bool {
	b.mu.Lock()
	l := b.of[id]
	b.mu.Unlock()
	ev, ok := l.(interface{ RanJob(rm.AttemptID) bool })
	return ok && ev.RanJob(id)
}
