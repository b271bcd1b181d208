package reconcile

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// The supervisor's loops: its policies grouped by target, a loop started
// for each wanted target, updated when its policies change and stopped
// when none is wanted.

// loopRun is a running loop and what to stop it with.
type loopRun struct {
	loop   *Loop
	target Target
	cancel context.CancelFunc
	done   chan struct{}
	ids    []rm.PolicyID
	// policies are the loop's policies as the last refresh read them: a
	// loop is nudged only when they change.
	policies []rm.Policy
}

// group is the host's policies of one target.
type group struct {
	key      string
	policies []rm.Policy
}

// groups reads the host's policies and groups them by target key; a target
// is wanted while one of its policies is active or has live attempts.
func (s *Supervisor) groups(ctx context.Context) ([]group, map[string]bool, error) {
	all, err := s.cfg.Store.Policies(ctx)
	if err != nil {
		return nil, nil, fmt.Errorf("read policies: %w", err)
	}
	byKey := make(map[string]*group)
	var owned []rm.Policy
	var keys []string
	for _, p := range all {
		if !p.IsOwnedBy(s.cfg.Host.ID) {
			continue
		}
		owned = append(owned, p)
		k := p.Target.Key()
		g := byKey[k]
		if g == nil {
			g = &group{key: k}
			byKey[k] = g
			keys = append(keys, k)
		}
		g.policies = append(g.policies, p)
	}
	s.mu.Lock()
	s.policies = owned
	s.mu.Unlock()
	live, err := liveAttemptsOf(ctx, s.cfg.Store, s.cfg.Host.ID)
	if err != nil {
		return nil, nil, fmt.Errorf("read the host's live attempts: %w", err)
	}
	hasLive := make(map[rm.PolicyID]bool, len(live))
	for _, a := range live {
		hasLive[a.Policy] = true
	}
	wanted := make(map[string]bool)
	var gs []group
	for _, k := range keys {
		g := byKey[k]
		gs = append(gs, *g)
		for _, p := range g.policies {
			if p.Watched() || hasLive[p.ID] {
				wanted[k] = true
				break
			}
		}
	}
	return gs, wanted, nil
}

// reconcileLoops starts, updates and stops loops to match the policies.
func (s *Supervisor) reconcileLoops(ctx, bg context.Context) error {
	gs, wanted, err := s.groups(ctx)
	if err != nil {
		return err
	}
	seen := make(map[string]bool)
	for _, g := range gs {
		seen[g.key] = true
		s.mu.Lock()
		lr := s.loops[g.key]
		s.mu.Unlock()
		ids := make([]rm.PolicyID, 0, len(g.policies))
		for _, p := range g.policies {
			ids = append(ids, p.ID)
		}
		switch {
		case wanted[g.key] && lr == nil:
			if err := s.startLoop(ctx, bg, g, ids); err != nil {
				s.log.Warn("cannot start the loop of a target; retrying at the next refresh", "target", g.policies[0].Target.Short(), "err", err)
				s.mu.Lock()
				s.targetErr[g.key] = err.Error()
				s.mu.Unlock()
			}
		case wanted[g.key] && !slices.Equal(ids, lr.ids):
			lr.ids, lr.policies = ids, g.policies
			lr.loop.SetPolicies(ids) // added or removed: nudges
		case wanted[g.key] && !reflect.DeepEqual(g.policies, lr.policies):
			// An edit (max, min idle, paused or resumed) shows at once; a
			// loop whose policies did not change keeps its own schedule
			// (an idle one passes once a minute, not at every refresh).
			lr.policies = g.policies
			lr.loop.Nudge()
		case wanted[g.key]:
		case lr != nil:
			s.stopLoop(g.key, lr, "its policies are paused and nothing is live")
		}
	}
	s.mu.Lock()
	var gone []string
	for k := range s.loops {
		if !seen[k] {
			gone = append(gone, k)
		}
	}
	s.mu.Unlock()
	for _, k := range gone {
		s.mu.Lock()
		lr := s.loops[k]
		s.mu.Unlock()
		if lr.loop.Live() == 0 {
			s.stopLoop(k, lr, "its policies were removed or moved")
		}
	}
	return nil
}

// loopConfig is the configuration of the loop of one group.
func (s *Supervisor) loopConfig(target Target, policies []rm.Policy) Config {
	return Config{
		Store: s.cfg.Store, Target: target, Launcher: s.cfg.Launcher, Launchers: s.cfg.Launchers, Meters: s.cfg.Meters,
		Host: s.cfg.Host, Policies: policies, Admission: s.cfg.Admission, Now: s.cfg.Now, Logger: s.cfg.Logger,
		Installs: s.cfg.Installs, RunnerEnv: s.cfg.RunnerEnv, Slots: s.cfg.Slots,
		LoopOptions: s.cfg.Loop, Drain: s.cfg.Drain, DrainTimeout: s.cfg.DrainTimeout,
		OnRefusal: func(_ rm.PolicyID, r Refusal) {
			s.mu.Lock()
			s.refusals[r.Reason]++
			s.mu.Unlock()
		},
		OnPass: s.cfg.OnPass, OnJobStarted: s.cfg.OnJobStarted, OnJobEnded: s.cfg.OnJobEnded,
		tab: s.tab,
	}
}

func (s *Supervisor) startLoop(ctx, bg context.Context, g group, ids []rm.PolicyID) error {
	target, err := s.cfg.Targets(ctx, g.policies[0])
	if err != nil {
		return fmt.Errorf("connect to GitHub for %s: %w", g.policies[0].Target, err)
	}
	loop, err := NewLoop(s.loopConfig(target, g.policies))
	if err != nil {
		_ = target.Demand.Close(ctx)
		return err
	}
	lctx, cancel := context.WithCancel(bg)
	lr := &loopRun{loop: loop, target: target, cancel: cancel, done: make(chan struct{}), ids: ids, policies: g.policies}
	s.mu.Lock()
	s.loops[g.key] = lr
	delete(s.targetErr, g.key)
	s.mu.Unlock()
	s.log.Info("loop started", "target", g.policies[0].Target.Short(), "policies", len(ids))
	go func() {
		defer close(lr.done)
		if err := loop.Run(lctx); err != nil {
			s.log.Warn("loop ended with an error", "target", g.policies[0].Target.Short(), "err", err)
		}
		cctx, ccancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer ccancel()
		if err := target.Demand.Close(cctx); err != nil {
			s.log.Warn("closing the target failed", "target", g.policies[0].Target.Short(), "err", err)
		}
	}()
	return nil
}

func (s *Supervisor) stopLoop(key string, lr *loopRun, why string) {
	s.mu.Lock()
	delete(s.loops, key)
	s.mu.Unlock()
	s.log.Info("loop stopped", "target_key", key, "why", why)
	lr.cancel()
	<-lr.done
}
