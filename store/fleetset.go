package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// ErrFenced: a write under a fleet lease that its writer no longer holds
// (another host took it, or it expired): the writer must stop serving the
// lease's scale set at once.
var ErrFenced = errors.New("the fleet lease is no longer held")

// FleetSets is the journal's part in serving fleet policies (rm.Policy.Fleet):
// one host at a time holds a fleet scale set's message session under a
// lease whose clock is the database's, the hosts publish what they can
// take, and the holder shares the demand out among them, each share fenced
// by the lease's token. store/postgres has it; the SQLite journal, one
// host's, does not (a type assertion tells which).
type FleetSets interface {
	// AcquireFleetLease takes the lease of a fleet policy for host, or
	// renews it when host holds it, until ttl from now on the database's
	// clock. A lease another host holds that has not expired is refused
	// with a *FleetLeaseHeldError (an ErrConflict). A take by a new holder
	// gets a Token greater than any before; a renewal keeps it. A renewal
	// is of a lease not yet expired: a holder whose lease expired takes
	// it anew, with a new token, as it must have stopped serving at the
	// expiry. ErrNotFound if no fleet policy in force has the id.
	AcquireFleetLease(ctx context.Context, policy rm.PolicyID, host rm.HostID, ttl time.Duration) (FleetLease, error)
	// ReleaseFleetLease ends l if its holder still holds it with its
	// token (a graceful stop: the next host need not wait for expiry);
	// otherwise it does nothing.
	ReleaseFleetLease(ctx context.Context, l FleetLease) error
	// FleetLease returns the policy's lease, expired or not; ErrNotFound
	// when none was ever taken or the last was released.
	FleetLease(ctx context.Context, policy rm.PolicyID) (FleetLease, error)

	// PublishFleetRoom records what r.Host can take now of r.Policy,
	// replacing its previous figure, stamped with the database's clock.
	// It is announced (ListenFleet) when the host is new or its capacity,
	// busy or idle count changed: free memory alone moves all the time,
	// and when it matters the capacity moves with it. ErrNotFound if no
	// fleet policy in force has the id.
	PublishFleetRoom(ctx context.Context, r FleetRoom) error
	// FleetRooms lists every host's published room of a policy, by host.
	FleetRooms(ctx context.Context, policy rm.PolicyID) ([]FleetRoom, error)

	// ShareFleetDemand replaces every share of l.Policy with shares and
	// queues events for the hosts they name, in one transaction, only if
	// l.Holder still holds the lease with l.Token and it has not expired
	// (else ErrFenced, and nothing is written). It notifies every host.
	ShareFleetDemand(ctx context.Context, l FleetLease, shares []FleetShare, events []FleetEvent) error
	// TakeFleetShare returns host's share of a policy (the zero share,
	// with Policy and Host set, when the holder gave it none) and takes
	// the events queued for it, oldest first: a second call does not
	// return them again.
	TakeFleetShare(ctx context.Context, policy rm.PolicyID, host rm.HostID) (FleetShare, []rm.JobEvent, error)
	// FleetShares lists every share of a policy, by host (for status).
	FleetShares(ctx context.Context, policy rm.PolicyID) ([]FleetShare, error)

	// ListenFleet delivers a FleetNotice for every change another host
	// (or this one) makes to a fleet policy's lease (a new holder or a
	// release, not a renewal), rooms or shares (LISTEN/NOTIFY, not a
	// poll), until ctx is done, the store is closed or the connection is
	// lost: then the channel is closed, and the caller listens again
	// (with backoff) and reads what it may have missed.
	ListenFleet(ctx context.Context) (<-chan FleetNotice, error)
}

// FleetLease is one host's hold on a fleet policy's scale set.
type FleetLease struct {
	Policy rm.PolicyID
	Holder rm.HostID
	// Token grows with each new holder: a write under an older one is
	// refused (ErrFenced).
	Token int64
	// AcquiredAt, RenewedAt and ExpiresAt are the database's clock.
	AcquiredAt time.Time
	RenewedAt  time.Time
	ExpiresAt  time.Time
	// Left is how long the lease had to run when the database answered
	// (ExpiresAt − its now): a holder counts it down on its own monotonic
	// clock from before its request, so that clocks of different hosts
	// never meet.
	Left time.Duration
}

// FleetLeaseHeldError: the fleet lease is held by another host and has
// not expired. It is an ErrConflict.
type FleetLeaseHeldError struct{ Lease FleetLease }

func (e *FleetLeaseHeldError) Error() string {
	return fmt.Sprintf("the fleet lease of policy %s is held by host %s for %s more", e.Lease.Policy, e.Lease.Holder, e.Lease.Left.Round(time.Millisecond))
}

// Is makes a held lease a conflict.
func (e *FleetLeaseHeldError) Is(target error) bool { return target == ErrConflict }

// FleetRoom is what one host can take now of a fleet policy, as that host
// published it.
type FleetRoom struct {
	Policy rm.PolicyID
	Host   rm.HostID
	// Capacity is the jobs of the policy the host's admission would run
	// at once now (those it runs included): its share of the capacity the
	// holder tells GitHub.
	Capacity int
	// Busy and Idle are the host's runners of the policy running a job
	// and listening for one.
	Busy, Idle int
	// FreeMemory is what the host's memory admission has free now, in
	// bytes, beyond what its live attempts are expected to take;
	// FreeMemoryUnknown where the host does not check memory.
	FreeMemory uint64
	// WarmFree is how many workspace slots of the policy's repository
	// wait free on the host (rm.Room.WarmFree).
	WarmFree int
	// UpdatedAt is the database's clock at the publication.
	UpdatedAt time.Time
	// Age is how old the publication was when the database answered
	// (its now − UpdatedAt), set by FleetRooms: a room not published
	// again for a few heartbeats is a host gone, judged on no host's
	// clock.
	Age time.Duration
}

// Validate refuses a room without its policy or host, or with a
// negative count, with runnermanager.ErrInvalid.
func (r FleetRoom) Validate() error {
	switch {
	case r.Policy.IsZero() || r.Host.IsZero():
		return fmt.Errorf("%w: a fleet room needs its policy and host", rm.ErrInvalid)
	case r.Capacity < 0 || r.Busy < 0 || r.Idle < 0:
		return fmt.Errorf("%w: the fleet room of host %s has a negative count (capacity %d, busy %d, idle %d)", rm.ErrInvalid, r.Host, r.Capacity, r.Busy, r.Idle)
	}
	return nil
}

// FreeMemoryUnknown is the FleetRoom.FreeMemory of a host that does not
// check memory: no bound (and a value PostgreSQL's bigint holds).
const FreeMemoryUnknown uint64 = 1<<63 - 1

// MemoryKnown reports whether the host checks memory.
func (r FleetRoom) MemoryKnown() bool { return r.FreeMemory != FreeMemoryUnknown }

// FleetShare is one host's part of a fleet policy's demand, as the
// lease's holder placed it.
type FleetShare struct {
	Policy rm.PolicyID
	Host   rm.HostID
	// Wanted is the jobs the host is to serve (rm.Demand.Wanted): those
	// its runners run and those placed on it to start.
	Wanted int
	// Spares is the warm spares of the policy the host is to keep.
	Spares int
	// Placed lists the waiting jobs placed on the host and why (for
	// people: jobs and status).
	Placed []FleetPlacement
	// Token is the lease's token the share was written under; UpdatedAt
	// the database's clock at the write.
	Token     int64
	UpdatedAt time.Time
}

// ValidateFleetDemand refuses, with runnermanager.ErrInvalid, what
// ShareFleetDemand cannot write under l: a lease without its policy,
// holder or token, a share of another policy (a zero Policy is l's),
// without its host, with a negative count or a second one for its host,
// an event without its host.
func ValidateFleetDemand(l FleetLease, shares []FleetShare, events []FleetEvent) error {
	if l.Policy.IsZero() || l.Holder.IsZero() || l.Token <= 0 {
		return fmt.Errorf("%w: sharing a fleet policy's demand needs the lease it is written under (policy, holder, token)", rm.ErrInvalid)
	}
	seen := make(map[rm.HostID]bool, len(shares))
	for _, sh := range shares {
		switch {
		case !sh.Policy.IsZero() && sh.Policy != l.Policy:
			return fmt.Errorf("%w: a share of policy %s under the lease of policy %s", rm.ErrInvalid, sh.Policy, l.Policy)
		case sh.Host.IsZero():
			return fmt.Errorf("%w: a share of policy %s names no host", rm.ErrInvalid, l.Policy)
		case sh.Wanted < 0 || sh.Spares < 0:
			return fmt.Errorf("%w: the share of host %s has a negative count (wanted %d, spares %d)", rm.ErrInvalid, sh.Host, sh.Wanted, sh.Spares)
		case seen[sh.Host]:
			return fmt.Errorf("%w: host %s has two shares of policy %s: give each host one", rm.ErrInvalid, sh.Host, l.Policy)
		}
		seen[sh.Host] = true
	}
	for _, e := range events {
		if e.Host.IsZero() {
			return fmt.Errorf("%w: a %s event of job %q for policy %s names no host", rm.ErrInvalid, e.Event.Kind, e.Event.JobID, l.Policy)
		}
	}
	return nil
}

// FleetPlacement is a waiting job placed on a host, and why there.
type FleetPlacement struct {
	Job rm.PendingJob `json:"job"`
	// Why says why this host: "fits 1.2GiB free of 3.0GiB expected",
	// "least loaded", "warm spare".
	Why string `json:"why"`
}

// FleetEvent is a job event the holder passes to the host whose runner it
// names.
type FleetEvent struct {
	Host  rm.HostID
	Event rm.JobEvent
}

// FleetNoticeKind says what changed.
type FleetNoticeKind string

// What a FleetNotice tells.
const (
	FleetLeaseChanged FleetNoticeKind = "lease"
	FleetRoomChanged  FleetNoticeKind = "room"
	FleetShareChanged FleetNoticeKind = "share"
)

// FleetNotice says that something of a fleet policy changed.
type FleetNotice struct {
	Kind   FleetNoticeKind
	Policy rm.PolicyID
	// Host is the host that made the change.
	Host rm.HostID
}
