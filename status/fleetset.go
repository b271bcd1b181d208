package status

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// FleetSet is a fleet policy's scale set across the fleet, as the
// store tells it (store.FleetSets): which host holds its message session,
// and what each host serves of it.
type FleetSet struct {
	// Holder is the host holding the lease (zero: none holds it, or it
	// was released), HolderName its name.
	Holder     rm.HostID `json:"holder"`
	HolderName string    `json:"holder_name"`
	// Token grows with each new holder.
	Token int64 `json:"token"`
	// ExpiresAt is when the lease runs out unless its holder renews it
	// (the database's clock); nil with no lease. Expired: it had when
	// the store answered, so the holder is gone or cut off and the next
	// host to look takes the lease.
	ExpiresAt *time.Time `json:"expires_at"`
	Expired   bool       `json:"expired"`
	// Shares are the hosts that serve it or published room for it, by
	// host name.
	Shares []FleetShare `json:"shares"`
}

// FleetShare is one host's part of a fleet policy.
type FleetShare struct {
	Host     rm.HostID `json:"host"`
	HostName string    `json:"host_name"`
	// Wanted is the jobs the holder gave the host (those its runners run
	// and those placed on it to start), Spares the warm spares it keeps.
	Wanted int `json:"wanted"`
	Spares int `json:"spares"`
	// Room is what the host last published it can take now (its
	// admission's capacity for the policy); nil when it published none.
	// Busy and Idle are its runners of the policy as it published them.
	Room *int `json:"room"`
	Busy int  `json:"busy"`
	Idle int  `json:"idle"`
	// Placed are the waiting jobs placed on the host, and why there.
	Placed []PlacedJob `json:"placed"`
}

// PlacedJob is a waiting job the holder placed on a host.
type PlacedJob struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// Why says why this host ("fits 1.2GiB free of 3.0GiB expected",
	// "least loaded", "warm spare").
	Why string `json:"why"`
}

// Summary is the fleet policy's scale set in one line, as status prints
// it: "held by alpha; alpha 2 jobs, beta 1 job (+1 spare)".
func (f *FleetSet) Summary() string {
	if f == nil {
		return ""
	}
	var b strings.Builder
	switch {
	case f.Holder.IsZero():
		b.WriteString("no host holds its session yet")
	case f.Expired:
		fmt.Fprintf(&b, "held by %s, lease expired: the next host to look takes it", f.HolderName)
	default:
		fmt.Fprintf(&b, "held by %s", f.HolderName)
	}
	var parts []string
	for _, s := range f.Shares {
		part := fmt.Sprintf("%s %d %s", s.HostName, s.Wanted, plural(s.Wanted, "job", "jobs"))
		if s.Spares > 0 {
			part += fmt.Sprintf(" (+%d %s)", s.Spares, plural(s.Spares, "spare", "spares"))
		}
		switch {
		case s.Room == nil || *s.Room > s.Wanted:
		case s.Wanted == 0:
			part += " (no room)"
		default:
			part += " (full)"
		}
		parts = append(parts, part)
	}
	if len(parts) > 0 {
		b.WriteString("; ")
		b.WriteString(strings.Join(parts, ", "))
	}
	return b.String()
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// FleetSetOf reads a fleet policy's lease, shares and rooms from the
// store; names maps host ids to names (an unknown host is shown by its
// id). A store that is no store.FleetSets gives nil.
func FleetSetOf(ctx context.Context, st store.Store, policy rm.PolicyID, names map[rm.HostID]string) (*FleetSet, error) {
	fs, ok := st.(store.FleetSets)
	if !ok {
		return nil, nil
	}
	name := func(h rm.HostID) string {
		if n, ok := names[h]; ok && n != "" {
			return n
		}
		return h.String()
	}
	out := &FleetSet{Shares: []FleetShare{}}
	switch l, err := fs.FleetLease(ctx, policy); {
	case errors.Is(err, store.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("read the fleet lease of policy %s: %w", policy, err)
	default:
		exp := l.ExpiresAt.UTC()
		out.Holder, out.HolderName, out.Token, out.ExpiresAt, out.Expired = l.Holder, name(l.Holder), l.Token, &exp, l.Left <= 0
	}
	shares, err := fs.FleetShares(ctx, policy)
	if err != nil {
		return nil, fmt.Errorf("read the fleet shares of policy %s: %w", policy, err)
	}
	rooms, err := fs.FleetRooms(ctx, policy)
	if err != nil {
		return nil, fmt.Errorf("read the fleet rooms of policy %s: %w", policy, err)
	}
	byHost := map[rm.HostID]*FleetShare{}
	of := func(h rm.HostID) *FleetShare {
		if s, ok := byHost[h]; ok {
			return s
		}
		s := &FleetShare{Host: h, HostName: name(h), Placed: []PlacedJob{}}
		byHost[h] = s
		return s
	}
	for _, sh := range shares {
		s := of(sh.Host)
		s.Wanted, s.Spares = sh.Wanted, sh.Spares
		for _, p := range sh.Placed {
			s.Placed = append(s.Placed, PlacedJob{ID: p.Job.ID, Name: p.Job.Name, Why: p.Why})
		}
	}
	for _, r := range rooms {
		s := of(r.Host)
		s.Room, s.Busy, s.Idle = new(r.Capacity), r.Busy, r.Idle
	}
	for _, s := range byHost {
		out.Shares = append(out.Shares, *s)
	}
	slices.SortFunc(out.Shares, func(a, b FleetShare) int {
		return strings.Compare(a.HostName+"\x00"+a.Host.String(), b.HostName+"\x00"+b.Host.String())
	})
	return out, nil
}

// WithFleetSets fills the FleetSet of each fleet policy s shows that has
// none yet from the store, and tells in s.Jobs where each placed job went:
// a waiting job the holder placed gets its host and why, and one s does
// not show yet (placed by another host's holder) is added. A store that is
// no store.FleetSets leaves s as it is.
func (s Status) WithFleetSets(ctx context.Context, st store.Store) (Status, error) {
	if _, ok := st.(store.FleetSets); !ok {
		return s, nil
	}
	var names map[rm.HostID]string
	policies := slices.Clone(s.Policies)
	for i := range policies {
		ps := &policies[i]
		if !ps.Fleet || ps.FleetSet != nil {
			continue
		}
		if names == nil {
			hosts, err := st.Hosts(ctx)
			if err != nil {
				return s, fmt.Errorf("read the fleet's hosts: %w", err)
			}
			names = make(map[rm.HostID]string, len(hosts))
			for _, h := range hosts {
				names[h.ID] = h.Name
			}
		}
		f, err := FleetSetOf(ctx, st, ps.ID, names)
		if err != nil {
			return s, err
		}
		ps.FleetSet = f
	}
	s.Policies = policies
	s.Jobs = placeJobs(s.Jobs, policies)
	return s, nil
}

// placeJobs marks the waiting jobs of fleet policies with the host each
// was placed on, adding those the list lacks.
func placeJobs(jobs []Job, policies []Policy) []Job {
	out := slices.Clone(jobs)
	index := map[string]int{}
	for i, j := range out {
		if j.Waiting() {
			index[j.Policy.String()+"/"+j.ID] = i
		}
	}
	added := false
	for _, ps := range policies {
		if ps.FleetSet == nil {
			continue
		}
		for _, sh := range ps.FleetSet.Shares {
			for _, pj := range sh.Placed {
				i, ok := index[ps.ID.String()+"/"+pj.ID]
				if !ok {
					out = append(out, Job{ID: pj.ID, Name: pj.Name, State: JobAssignedToTarget, Policy: ps.ID, PolicyName: ps.Name,
						WaitReason: "runner starting"})
					i, added = len(out)-1, true
					index[ps.ID.String()+"/"+pj.ID] = i
				}
				out[i].Host, out[i].HostName, out[i].PlacedWhy = sh.Host, sh.HostName, pj.Why
			}
		}
	}
	if added {
		SortJobs(out)
	}
	return out
}
