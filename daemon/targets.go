package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
)

// targets makes each policy's target, for the supervisor: the embedder's
// own registrar and demand source where Config.Targets gives them, else
// GitHub's: a scale set (created or updated, updates disabled: runner
// updates are ours), or a classic target polling its repository's jobs and
// fed by webhooks. A scale set's message session is recorded in the
// journal, so that after a crash the next start deletes it instead of
// waiting on it.
type targets struct {
	client      *github.Client
	host        rm.Host
	st          store.Store
	log         *slog.Logger
	classicPoll time.Duration
	prefix      string
	own         func(ctx context.Context, p rm.Policy) (rm.Registrar, rm.DemandSource, error)
	// fleet, heartbeat and weigh serve fleet policies (fleet.go).
	fleet     FleetConfig
	heartbeat time.Duration
	weigh     *jobWeigher

	mu sync.Mutex
	// classic are the live classic targets, which webhooks nudge.
	classic map[*github.ClassicTarget]bool
}

func newTargets(c *github.Client, host rm.Host, st store.Store, log *slog.Logger, classicPoll time.Duration) *targets {
	return &targets{client: c, host: host, st: st, log: log, classicPoll: classicPoll,
		prefix: rm.RunnerNamePrefix(host.ID), classic: map[*github.ClassicTarget]bool{}}
}

// make is the supervisor's Targets.
func (t *targets) make(ctx context.Context, p rm.Policy) (reconcile.Target, error) {
	var (
		reg rm.Registrar
		src rm.DemandSource
	)
	if t.own != nil {
		var err error
		if reg, src, err = t.own(ctx, p); err != nil {
			return reconcile.Target{}, fmt.Errorf("the target of policy %q: %w", p.Name, err)
		}
		if reg != nil && src != nil {
			return reconcile.Target{Registrar: reg, Demand: src}, nil
		}
	}
	gh, err := t.github(ctx, p, src == nil)
	if err != nil {
		return reconcile.Target{}, err
	}
	if reg != nil {
		gh.Registrar = reg
	}
	if src != nil {
		// GitHub's side serves registrations only; it is released with
		// the embedder's source.
		gh.Demand = closesToo{DemandSource: src, also: gh.Demand.Close}
	}
	return gh, nil
}

// github is GitHub's target of p; a classic one joins the webhook set when
// its demand is GitHub's (hooked).
func (t *targets) github(ctx context.Context, p rm.Policy, hooked bool) (reconcile.Target, error) {
	plog := t.log.With("policy", p.Name)
	if p.Target.Mode() == rm.ModeScaleSet {
		owner, host := SessionOwner(t.host), t.host.ID.String()
		if p.Fleet {
			// Any host of the fleet may hold the session: the one that
			// takes the lease over deletes the one its holder left.
			owner, host = FleetSessionOwner, ""
		}
		s, err := github.NewScaleSetTarget(ctx, t.client, p.Target, github.ScaleSetOptions{
			Owner: owner, HostID: host, Journal: t.st,
			DisableUpdate: true, NamePrefix: t.prefix, Logger: plog,
		})
		if err != nil {
			return reconcile.Target{}, err
		}
		if !p.Fleet {
			return reconcile.TargetOf(s), nil
		}
		src, err := t.fleetSource(p, s)
		if err != nil {
			_ = s.Close(ctx)
			return reconcile.Target{}, err
		}
		return reconcile.Target{Registrar: s, Demand: src}, nil
	}
	c, err := github.NewClassicTarget(t.client, p.Target, github.ClassicOptions{
		NamePrefix: t.prefix, PollInterval: t.classicPoll, Logger: plog,
	})
	if err != nil {
		return reconcile.Target{}, err
	}
	if !hooked {
		return reconcile.TargetOf(c), nil
	}
	t.mu.Lock()
	t.classic[c] = true
	t.mu.Unlock()
	return reconcile.Target{Registrar: c, Demand: hookedSource{c, t}}, nil
}

// notify passes a webhook delivery to every live classic target: it only
// nudges them to look.
func (t *targets) notify(ev github.WorkflowJobEvent) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c := range t.classic {
		c.Notify(ev)
	}
}

// SessionOwner is the owner name of a host's scale-set message sessions:
// its name and the start of its id, so two hosts of one name stay apart.
func SessionOwner(host rm.Host) string {
	return host.Name + "/" + strings.ToLower(host.ID.String()[:8])
}

// hookedSource is a classic target's demand that leaves the webhook set
// when its loop closes it.
type hookedSource struct {
	*github.ClassicTarget
	set *targets
}

var _ rm.DemandSource = hookedSource{}

// Close implements rm.DemandSource.
func (h hookedSource) Close(ctx context.Context) error {
	h.set.mu.Lock()
	delete(h.set.classic, h.ClassicTarget)
	h.set.mu.Unlock()
	return h.ClassicTarget.Close(ctx)
}

// closesToo is an embedder's demand source whose Close also releases
// GitHub's side of the target.
type closesToo struct {
	rm.DemandSource
	also func(context.Context) error
}

// Close implements rm.DemandSource.
func (c closesToo) Close(ctx context.Context) error {
	return errors.Join(c.DemandSource.Close(ctx), c.also(ctx))
}
