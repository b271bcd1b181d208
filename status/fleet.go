package status

import (
	"context"
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// DefaultStaleAfter is how old a host's last heartbeat may be before the
// fleet view marks it stale: three missed heartbeats at the daemon's
// default interval (15 s, daemon.DefaultHeartbeatEvery).
const DefaultStaleAfter = 45 * time.Second

// StaleAfter is the age of a heartbeat past which a host heartbeating
// every `every` (0: the daemon's default) is stale: three missed beats.
func StaleAfter(every time.Duration) time.Duration {
	if every == 0 {
		return DefaultStaleAfter
	}
	return 3 * every
}

// Fleet is the fleet as the store knows it.
type Fleet struct {
	Hosts []FleetHost `json:"hosts"`
	// StaleAfter is the threshold Stale was judged by.
	StaleAfter time.Duration `json:"stale_after_ns"`
}

// FleetHost is one host of the fleet.
type FleetHost struct {
	ID          rm.HostID `json:"id"`
	Name        string    `json:"name"`
	MemoryBytes uint64    `json:"memory_bytes"`
	CPUs        int       `json:"cpus"`
	OS          string    `json:"os"`
	Version     string    `json:"version"`
	// LiveAttempts are the live attempts of the host's policies.
	LiveAttempts int `json:"live_attempts"`
	// SeenAt is its last heartbeat; nil if it never sent one.
	SeenAt *time.Time `json:"seen_at"`
	// Stale: its last heartbeat is older than StaleAfter (or it never
	// sent one).
	Stale bool `json:"stale"`
}

// FleetOf reads every host of the store's fleet, with its live attempts,
// judged stale at now after staleAfter (0: DefaultStaleAfter). A store
// that is no store.Fleet gives nil.
func FleetOf(ctx context.Context, st store.Store, now time.Time, staleAfter time.Duration) (*Fleet, error) {
	fleet, ok := st.(store.Fleet)
	if !ok {
		return nil, nil
	}
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	hosts, err := fleet.FleetHosts(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the fleet's hosts: %w", err)
	}
	out := &Fleet{Hosts: make([]FleetHost, 0, len(hosts)), StaleAfter: staleAfter}
	for _, h := range hosts {
		live, err := st.LiveAttempts(ctx, h.ID)
		if err != nil {
			return nil, fmt.Errorf("read the live attempts of host %s: %w", h.Name, err)
		}
		hs := FleetHost{ID: h.ID, Name: h.Name, MemoryBytes: h.MemoryBytes, CPUs: h.CPUs, OS: h.OS,
			Version: h.Version, LiveAttempts: len(live)}
		if !h.SeenAt.IsZero() {
			seen := h.SeenAt.UTC()
			hs.SeenAt = &seen
		}
		out.Hosts = append(out.Hosts, hs)
	}
	out.Judge(now, staleAfter)
	return out, nil
}

// Judge judges every host again, stale at now after staleAfter (0:
// DefaultStaleAfter): for a reader whose hosts heartbeat at another
// interval than the default. A nil fleet stays nil.
func (f *Fleet) Judge(now time.Time, staleAfter time.Duration) {
	if f == nil {
		return
	}
	if staleAfter <= 0 {
		staleAfter = DefaultStaleAfter
	}
	f.StaleAfter = staleAfter
	for i := range f.Hosts {
		h := &f.Hosts[i]
		h.Stale = h.SeenAt == nil || now.Sub(*h.SeenAt) > staleAfter
	}
}
