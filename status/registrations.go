package status

import (
	"context"
	"fmt"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// ScopeRunners is GitHub's runner list of one scope (a repository, an
// organization) as the daemon last read it for its own bookkeeping: every
// registration there, whatever registered it. Reading it costs GitHub
// nothing more. Scale-set runners are not in GitHub's REST list, so a
// scope served by scale sets only is not listed.
type ScopeRunners struct {
	// Scope is the scope as policies name it ("repo:octo/app").
	Scope string `json:"scope"`
	// At is when the list was asked of GitHub.
	At      time.Time      `json:"at"`
	Runners []Registration `json:"runners"`
}

// Registration is one runner GitHub has registered.
type Registration struct {
	ID     int64    `json:"id"`
	Name   string   `json:"name"`
	Online bool     `json:"online"`
	Busy   bool     `json:"busy"`
	Labels []string `json:"labels"`
	// Owner is who registered it as the reader's journal tells
	// (WithOwners); the reader's judgement, not the daemon's word, so not
	// in the JSON. Nil: not judged yet.
	Owner *Owner `json:"-"`
}

// Owner is who registered a runner, as the journal tells.
type Owner struct {
	// Kind is this host, another host of the fleet, or unknown: no host
	// of the journal (another tool, a person).
	Kind OwnerKind
	// Host and HostName are the host (of OwnerThisHost and OwnerFleet);
	// the host id is zero for an attempt whose host has no row yet.
	Host     rm.HostID
	HostName string
	// Attempt is the journal's live attempt of the runner, with its state
	// and policy; zero when the name carries a host's prefix but no live
	// attempt has it (a leftover its host will clean up).
	Attempt rm.AttemptID
	State   rm.AttemptState
	Policy  rm.PolicyID
}

// OwnerKind tells who registered a runner.
type OwnerKind int

// The owners of a registration.
const (
	OwnerUnknown OwnerKind = iota
	OwnerThisHost
	OwnerFleet
)

// String is how a person reads it: "this host", "host beta", "unknown".
func (o Owner) String() string {
	switch o.Kind {
	case OwnerThisHost:
		return "this host"
	case OwnerFleet:
		return "host " + o.HostName
	}
	return "unknown"
}

// liveStates are the states of an attempt whose runner may be registered.
var liveStates = []rm.AttemptState{rm.StatePending, rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy}

// WithOwners returns s with each registration's Owner judged from the
// journal: the live attempt whose GitHub runner id (else runner name) it
// is, on the host whose runner name prefix it carries; else the host whose
// prefix it carries, without an attempt; else unknown. It reads the hosts
// and the live attempts, and only when s has registrations.
func (s Status) WithOwners(ctx context.Context, st store.Store) (Status, error) {
	if len(s.Registrations) == 0 {
		return s, nil
	}
	hosts, err := st.Hosts(ctx)
	if err != nil {
		return s, fmt.Errorf("read the hosts from the journal: %w", err)
	}
	live, err := st.Attempts(ctx, store.AttemptFilter{States: liveStates})
	if err != nil {
		return s, fmt.Errorf("read the live attempts from the journal: %w", err)
	}
	s.Registrations = Owners(s.Registrations, s.Host, hosts, live)
	return s, nil
}

// Owners is the judgement of WithOwners over lists already read: a copy
// of lists with every registration's Owner set.
func Owners(lists []ScopeRunners, self rm.Host, hosts []rm.Host, live []rm.Attempt) []ScopeRunners {
	byID := map[int64]rm.Attempt{}
	byName := map[string]rm.Attempt{}
	for _, a := range live {
		if a.GitHubRunnerID != 0 {
			byID[a.GitHubRunnerID] = a
		}
		if a.RunnerName != "" {
			byName[a.RunnerName] = a
		}
	}
	if !self.ID.IsZero() {
		hosts = append([]rm.Host{self}, hosts...)
	}
	hostOf := func(name string) (rm.Host, bool) {
		for _, h := range hosts {
			if !h.ID.IsZero() && strings.HasPrefix(name, rm.RunnerNamePrefix(h.ID)) {
				return h, true
			}
		}
		return rm.Host{}, false
	}
	out := make([]ScopeRunners, len(lists))
	for i, l := range lists {
		l.Runners = append([]Registration(nil), l.Runners...)
		for j := range l.Runners {
			r := &l.Runners[j]
			a, ok := byID[r.ID]
			if !ok || r.ID == 0 {
				a, ok = byName[r.Name]
			}
			o, name := Owner{}, r.Name
			if ok {
				o.Attempt, o.State, o.Policy = a.ID, a.State, a.Policy
				o.Kind, o.HostName = OwnerFleet, "?" // an attempt of the journal: a host of the fleet
				name = a.RunnerName
			}
			if h, found := hostOf(name); found {
				o.Kind, o.Host, o.HostName = OwnerFleet, h.ID, h.Name
				if h.ID == self.ID {
					o.Kind = OwnerThisHost
				}
			}
			r.Owner = &o
		}
		out[i] = l
	}
	return out
}
