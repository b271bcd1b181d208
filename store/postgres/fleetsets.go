package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/internal/sqlstore"
)

var _ store.FleetSets = (*Store)(nil)

// The fleet's statements run each alone, at the server's default
// isolation (READ COMMITTED): every check they make is under the row lock
// of the lease they write or read under, so SERIALIZABLE would add only
// retries. Each is one round trip; a renewal of the lease (the one
// statement an idle holder sends) notifies no one.

// fleetChannel is the channel of every fleet notice; its payload is
// kind:policy:host (FleetNotice).
const fleetChannel = "runner_manager_fleet"

// dbNow is the database's clock in unix nanoseconds: a lease's times are
// its, never a host's.
const dbNow = `(extract(epoch FROM clock_timestamp()) * 1000000000)::bigint`

// notify is the expression that sends a notice of kind about policy $1
// made by the host whose id is hostArg.
func notify(kind store.FleetNoticeKind, hostArg string) string {
	return `pg_notify('` + fleetChannel + `', '` + string(kind) + `:' || $1::text || ':' || ` + hostArg + `::text)`
}

// fromNanos is a time stored as unix nanoseconds, in UTC.
func fromNanos(ns int64) time.Time { return time.Unix(0, ns).UTC() }

// acquireLease takes or renews the lease in one statement: p is the
// policy if it is a fleet policy in force, with the database's now; up
// writes the lease if it is free, expired or the host's already, and
// keeps the token only for a renewal of a lease not yet expired; n
// notifies a new holder (acquired_at = renewed_at only then). The answer
// is one row: whether p found the policy, and the lease written, else the
// lease that stands.
var acquireLease = `
WITH p AS (
	SELECT ` + dbNow + ` AS t FROM policies WHERE id = $1 AND removed_at IS NULL AND fleet
), up AS (
	INSERT INTO fleet_leases AS l (policy_id, holder, token, acquired_at, renewed_at, expires_at)
	SELECT $1, $2, 1, t, t, t + $3 FROM p
	ON CONFLICT (policy_id) DO UPDATE SET
		holder = excluded.holder,
		token = CASE WHEN l.holder = excluded.holder AND l.expires_at > excluded.renewed_at
			THEN l.token ELSE l.token + 1 END,
		acquired_at = CASE WHEN l.holder = excluded.holder AND l.expires_at > excluded.renewed_at
			THEN l.acquired_at ELSE excluded.acquired_at END,
		renewed_at = excluded.renewed_at,
		expires_at = excluded.expires_at
	WHERE l.holder = excluded.holder OR l.expires_at <= excluded.renewed_at
	RETURNING holder, token, acquired_at, renewed_at, expires_at
), n AS (
	SELECT ` + notify(store.FleetLeaseChanged, "$2") + ` FROM up WHERE acquired_at = renewed_at
)
SELECT EXISTS (SELECT 1 FROM p), u.won, u.holder, u.token, u.acquired_at, u.renewed_at, u.expires_at,
	u.expires_at - ` + dbNow + `, (SELECT count(*) FROM n)
FROM (SELECT 1) AS one LEFT JOIN (
	SELECT true AS won, * FROM up
	UNION ALL
	SELECT false, holder, token, acquired_at, renewed_at, expires_at FROM fleet_leases
	WHERE policy_id = $1 AND NOT EXISTS (SELECT 1 FROM up)
) AS u ON true`

// AcquireFleetLease implements store.FleetSets in one statement (one
// round trip), a renewal as a take: two hosts taking one lease at once
// meet at its row's lock, and the second sees the first's lease.
func (s *Store) AcquireFleetLease(ctx context.Context, policy rm.PolicyID, host rm.HostID, ttl time.Duration) (store.FleetLease, error) {
	if policy.IsZero() || host.IsZero() || ttl <= 0 {
		return store.FleetLease{}, fmt.Errorf("%w: a fleet lease needs its policy, its host and a time to live above 0 (got %s)", rm.ErrInvalid, ttl)
	}
	// A lease first written by a concurrent statement is not in this
	// one's snapshot, so that its refusal finds no lease to show: the
	// next try reads it.
	for try := 1; ; try++ {
		var (
			fleet                bool
			won                  *bool
			holder               *string
			token, acq, ren, exp *int64
			left, notified       *int64
		)
		err := s.pool.QueryRow(ctx, acquireLease, policy.String(), host.String(), ttl.Nanoseconds()).
			Scan(&fleet, &won, &holder, &token, &acq, &ren, &exp, &left, &notified)
		switch {
		case err != nil:
			return store.FleetLease{}, fmt.Errorf("take the fleet lease of policy %s for host %s: %w", policy, host, err)
		case !fleet:
			return store.FleetLease{}, fmt.Errorf("take the fleet lease of policy %s: no fleet policy in force has this id (removed, or not a fleet policy): %w", policy, store.ErrNotFound)
		case won == nil && try < 3:
			continue
		case won == nil:
			return store.FleetLease{}, fmt.Errorf("take the fleet lease of policy %s for host %s: the lease kept changing under %d tries", policy, host, try)
		}
		l := store.FleetLease{Policy: policy, Token: *token, AcquiredAt: fromNanos(*acq), RenewedAt: fromNanos(*ren),
			ExpiresAt: fromNanos(*exp), Left: time.Duration(*left)}
		if *holder != "" {
			if l.Holder, err = rm.ParseHostID(*holder); err != nil {
				return store.FleetLease{}, fmt.Errorf("the fleet lease of policy %s: %w", policy, err)
			}
		}
		if !*won {
			return store.FleetLease{}, &store.FleetLeaseHeldError{Lease: l}
		}
		return l, nil
	}
}

// ReleaseFleetLease implements store.FleetSets in one statement. The row
// stays, without a holder, so that the next token is greater.
func (s *Store) ReleaseFleetLease(ctx context.Context, l store.FleetLease) error {
	_, err := s.pool.Exec(ctx, `UPDATE fleet_leases SET holder = '', expires_at = LEAST(expires_at, `+dbNow+`)
		WHERE policy_id = $1 AND holder = $2 AND token = $3
		RETURNING `+notify(store.FleetLeaseChanged, "$2"),
		l.Policy.String(), l.Holder.String(), l.Token)
	if err != nil {
		return fmt.Errorf("release the fleet lease of policy %s: %w", l.Policy, err)
	}
	return nil
}

// FleetLease implements store.FleetSets.
func (s *Store) FleetLease(ctx context.Context, policy rm.PolicyID) (store.FleetLease, error) {
	l := store.FleetLease{Policy: policy}
	var acq, ren, exp, left int64
	err := s.pool.QueryRow(ctx, `SELECT holder, token, acquired_at, renewed_at, expires_at, expires_at - `+dbNow+`
		FROM fleet_leases WHERE policy_id = $1 AND holder != ''`, policy.String()).
		Scan(&l.Holder, &l.Token, &acq, &ren, &exp, &left)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.FleetLease{}, fmt.Errorf("fleet lease of policy %s: none is held: %w", policy, store.ErrNotFound)
	}
	if err != nil {
		return store.FleetLease{}, fmt.Errorf("read the fleet lease of policy %s: %w", policy, err)
	}
	l.AcquiredAt, l.RenewedAt, l.ExpiresAt, l.Left = fromNanos(acq), fromNanos(ren), fromNanos(exp), time.Duration(left)
	return l, nil
}

// publishRoom upserts a host's room if its policy is a fleet policy in
// force (p), and announces it if the host is new or a count changed (old
// is the row before).
var publishRoom = `
WITH p AS (
	SELECT ` + dbNow + ` AS t FROM policies WHERE id = $1 AND removed_at IS NULL AND fleet
), old AS (
	SELECT capacity, busy, idle FROM fleet_rooms WHERE policy_id = $1 AND host_id = $2
), up AS (
	INSERT INTO fleet_rooms (policy_id, host_id, capacity, busy, idle, free_memory, warm_free, updated_at)
	SELECT $1, $2, $3, $4, $5, $6, $7, t FROM p
	ON CONFLICT (policy_id, host_id) DO UPDATE SET capacity = excluded.capacity, busy = excluded.busy,
		idle = excluded.idle, free_memory = excluded.free_memory, warm_free = excluded.warm_free,
		updated_at = excluded.updated_at
	RETURNING 1
), n AS (
	SELECT ` + notify(store.FleetRoomChanged, "$2") + ` FROM up
	WHERE NOT EXISTS (SELECT 1 FROM old WHERE (capacity, busy, idle) = ($3, $4, $5))
)
SELECT EXISTS (SELECT 1 FROM p), (SELECT count(*) FROM n)`

// PublishFleetRoom implements store.FleetSets in one statement.
func (s *Store) PublishFleetRoom(ctx context.Context, r store.FleetRoom) error {
	if err := r.Validate(); err != nil {
		return err
	}
	var (
		fleet    bool
		notified int64
	)
	err := s.pool.QueryRow(ctx, publishRoom, r.Policy.String(), r.Host.String(), r.Capacity, r.Busy, r.Idle, int64(r.FreeMemory), r.WarmFree).
		Scan(&fleet, &notified)
	if err != nil {
		return fmt.Errorf("publish the room of host %s for policy %s: %w", r.Host, r.Policy, err)
	}
	if !fleet {
		return fmt.Errorf("publish the room of host %s for policy %s: no fleet policy in force has this id (removed, or not a fleet policy): %w", r.Host, r.Policy, store.ErrNotFound)
	}
	return nil
}

// FleetRooms implements store.FleetSets.
func (s *Store) FleetRooms(ctx context.Context, policy rm.PolicyID) ([]store.FleetRoom, error) {
	rooms, err := sqlstore.QueryAll(ctx, db{s.pool}, func(sc sqlstore.Row) (store.FleetRoom, error) {
		r := store.FleetRoom{Policy: policy}
		var free, at, age int64
		err := sc.Scan(&r.Host, &r.Capacity, &r.Busy, &r.Idle, &free, &r.WarmFree, &at, &age)
		r.FreeMemory, r.UpdatedAt, r.Age = uint64(free), fromNanos(at), time.Duration(age)
		return r, err
	}, `SELECT host_id, capacity, busy, idle, free_memory, warm_free, updated_at, `+dbNow+` - updated_at
		FROM fleet_rooms WHERE policy_id = ? ORDER BY host_id`, policy.String())
	if err != nil {
		return nil, fmt.Errorf("list the fleet rooms of policy %s: %w", policy, err)
	}
	return rooms, nil
}

// shareDemand writes a holder's shares and events in one statement, if l
// (the lease, locked FOR UPDATE, so that a takeover waits for this write
// or this write sees the takeover) is still the writer's and not expired:
// every write is of l's rows, so none happens without it. The shares of
// hosts not named are deleted, those named upserted ($4…$7, one array a
// column); the events ($8, $9) queued in their order. The answer is
// whether the lease held.
var shareDemand = `
WITH l AS (
	SELECT ` + dbNow + ` AS t FROM fleet_leases
	WHERE policy_id = $1 AND holder = $2 AND token = $3 AND expires_at > ` + dbNow + `
	FOR UPDATE
), gone AS (
	DELETE FROM fleet_shares WHERE policy_id = $1 AND host_id != ALL ($4::text[]) AND EXISTS (SELECT 1 FROM l)
), put AS (
	INSERT INTO fleet_shares (policy_id, host_id, wanted, spares, placed, token, updated_at)
	SELECT $1, x.host, x.wanted, x.spares, x.placed::jsonb, $3, l.t
	FROM l, unnest($4::text[], $5::int[], $6::int[], $7::text[]) AS x (host, wanted, spares, placed)
	ON CONFLICT (policy_id, host_id) DO UPDATE SET wanted = excluded.wanted, spares = excluded.spares,
		placed = excluded.placed, token = excluded.token, updated_at = excluded.updated_at
), ev AS (
	INSERT INTO fleet_events (policy_id, host_id, event, created_at)
	SELECT $1, x.host, x.event::jsonb, l.t
	FROM l, unnest($8::text[], $9::text[]) WITH ORDINALITY AS x (host, event, n)
	ORDER BY x.n
), n AS (
	SELECT ` + notify(store.FleetShareChanged, "$2") + ` FROM l
)
SELECT EXISTS (SELECT 1 FROM l), (SELECT count(*) FROM n)`

// ShareFleetDemand implements store.FleetSets in one statement, one
// transaction.
func (s *Store) ShareFleetDemand(ctx context.Context, l store.FleetLease, shares []store.FleetShare, events []store.FleetEvent) error {
	if err := store.ValidateFleetDemand(l, shares, events); err != nil {
		return err
	}
	hosts := make([]string, len(shares))
	wanted := make([]int32, len(shares))
	spares := make([]int32, len(shares))
	placed := make([]string, len(shares))
	for i, sh := range shares {
		b, err := json.Marshal(sh.Placed)
		if err != nil {
			return fmt.Errorf("share the demand of policy %s: the placements of host %s: %w", l.Policy, sh.Host, err)
		}
		if sh.Placed == nil {
			b = []byte("[]")
		}
		hosts[i], wanted[i], spares[i], placed[i] = sh.Host.String(), int32(sh.Wanted), int32(sh.Spares), string(b)
	}
	evHosts := make([]string, len(events))
	evs := make([]string, len(events))
	for i, e := range events {
		b, err := json.Marshal(e.Event)
		if err != nil {
			return fmt.Errorf("share the demand of policy %s: an event for host %s: %w", l.Policy, e.Host, err)
		}
		evHosts[i], evs[i] = e.Host.String(), string(b)
	}
	var (
		held     bool
		notified int64
	)
	err := s.pool.QueryRow(ctx, shareDemand, l.Policy.String(), l.Holder.String(), l.Token,
		hosts, wanted, spares, placed, evHosts, evs).Scan(&held, &notified)
	if err != nil {
		return fmt.Errorf("share the demand of policy %s: %w", l.Policy, err)
	}
	if !held {
		return fmt.Errorf("share the demand of policy %s as host %s under token %d: another host took the lease, or it expired (nothing was written): %w", l.Policy, l.Holder, l.Token, store.ErrFenced)
	}
	return nil
}

// takeShare reads a host's share (NULLs when it has none) and deletes its
// queued events, returning them as a JSON array oldest first, in one
// statement: both from one snapshot.
var takeShare = `
WITH d AS (
	DELETE FROM fleet_events WHERE policy_id = $1 AND host_id = $2 RETURNING id, event
)
SELECT s.wanted, s.spares, s.placed, s.token, s.updated_at,
	(SELECT coalesce(jsonb_agg(event ORDER BY id), '[]'::jsonb) FROM d)
FROM (SELECT 1) AS one LEFT JOIN fleet_shares AS s ON s.policy_id = $1 AND s.host_id = $2`

// TakeFleetShare implements store.FleetSets in one statement.
func (s *Store) TakeFleetShare(ctx context.Context, policy rm.PolicyID, host rm.HostID) (store.FleetShare, []rm.JobEvent, error) {
	var (
		wanted, spares    *int
		token, updatedAt  *int64
		placed, eventJSON []byte
	)
	err := s.pool.QueryRow(ctx, takeShare, policy.String(), host.String()).
		Scan(&wanted, &spares, &placed, &token, &updatedAt, &eventJSON)
	if err != nil {
		return store.FleetShare{}, nil, fmt.Errorf("take the share of host %s in policy %s: %w", host, policy, err)
	}
	sh := store.FleetShare{Policy: policy, Host: host}
	if wanted != nil {
		sh.Wanted, sh.Spares, sh.Token, sh.UpdatedAt = *wanted, *spares, *token, fromNanos(*updatedAt)
		if sh.Placed, err = readPlaced(placed); err != nil {
			return store.FleetShare{}, nil, fmt.Errorf("the share of host %s in policy %s: %w", host, policy, err)
		}
	}
	var events []rm.JobEvent
	if err := json.Unmarshal(eventJSON, &events); err != nil {
		return store.FleetShare{}, nil, fmt.Errorf("the events taken for host %s in policy %s (they are lost): %w", host, policy, err)
	}
	if len(events) == 0 {
		events = nil
	}
	return sh, events, nil
}

// readPlaced reads a share's placements; none is nil.
func readPlaced(b []byte) ([]store.FleetPlacement, error) {
	var placed []store.FleetPlacement
	if err := json.Unmarshal(b, &placed); err != nil {
		return nil, fmt.Errorf("placements: %w", err)
	}
	if len(placed) == 0 {
		return nil, nil
	}
	return placed, nil
}

// FleetShares implements store.FleetSets.
func (s *Store) FleetShares(ctx context.Context, policy rm.PolicyID) ([]store.FleetShare, error) {
	shares, err := sqlstore.QueryAll(ctx, db{s.pool}, func(sc sqlstore.Row) (store.FleetShare, error) {
		sh := store.FleetShare{Policy: policy}
		var (
			placed []byte
			at     int64
		)
		if err := sc.Scan(&sh.Host, &sh.Wanted, &sh.Spares, &placed, &sh.Token, &at); err != nil {
			return store.FleetShare{}, err
		}
		sh.UpdatedAt = fromNanos(at)
		var err error
		sh.Placed, err = readPlaced(placed)
		return sh, err
	}, `SELECT host_id, wanted, spares, placed, token, updated_at FROM fleet_shares WHERE policy_id = ? ORDER BY host_id`, policy.String())
	if err != nil {
		return nil, fmt.Errorf("list the fleet shares of policy %s: %w", policy, err)
	}
	return shares, nil
}

// parseNotice reads a notice's payload, kind:policy:host; ok is false for
// one this program does not know.
func parseNotice(payload string) (n store.FleetNotice, ok bool) {
	kind, rest, ok1 := strings.Cut(payload, ":")
	policy, host, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return store.FleetNotice{}, false
	}
	n.Kind = store.FleetNoticeKind(kind)
	switch n.Kind {
	case store.FleetLeaseChanged, store.FleetRoomChanged, store.FleetShareChanged:
	default:
		return store.FleetNotice{}, false
	}
	var err1, err2 error
	n.Policy, err1 = rm.ParsePolicyID(policy)
	n.Host, err2 = rm.ParseHostID(host)
	return n, err1 == nil && err2 == nil
}
