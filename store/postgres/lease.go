package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

const leaseColumns = `host_id, holder, pid, process_start, hostname, boot_id, acquired_at, renewed_at, expires_at`

func scanLease(sc row) (store.HostLease, error) {
	var (
		l                          store.HostLease
		pid, start                 int64
		acquired, renewed, expires *int64
	)
	if err := sc.Scan(&l.Host, &l.Holder, &pid, &start, &l.Hostname, &l.BootID, &acquired, &renewed, &expires); err != nil {
		return store.HostLease{}, err
	}
	l.PID = int(pid)
	l.ProcessStart = uint64(start)
	l.AcquiredAt, l.RenewedAt, l.ExpiresAt = fromNanos(acquired), fromNanos(renewed), fromNanos(expires)
	return l, nil
}

// HostLease returns the host's lease; store.ErrNotFound if no daemon holds
// one.
func (s *Store) HostLease(ctx context.Context, host rm.HostID) (store.HostLease, error) {
	l, err := scanLease(s.pool.QueryRow(ctx, `SELECT `+leaseColumns+` FROM host_leases WHERE host_id = $1`, host.String()))
	if errors.Is(err, pgx.ErrNoRows) {
		return store.HostLease{}, fmt.Errorf("lease of host %s: %w", host, store.ErrNotFound)
	}
	if err != nil {
		return store.HostLease{}, fmt.Errorf("read the lease of host %s: %w", host, err)
	}
	return l, nil
}

// validLease checks a lease as store.HostLease's own validation does.
func validLease(l store.HostLease) error {
	switch {
	case l.Host.IsZero():
		return fmt.Errorf("%w: a host lease needs its host", rm.ErrInvalid)
	case l.Holder == "":
		return fmt.Errorf("%w: a host lease needs its holder", rm.ErrInvalid)
	case l.RenewedAt.IsZero() || !l.ExpiresAt.After(l.RenewedAt):
		return fmt.Errorf("%w: a host lease must expire after it is renewed (renewed %s, expires %s)", rm.ErrInvalid, l.RenewedAt, l.ExpiresAt)
	}
	return nil
}

// AcquireHostLease implements store.Store: a read and a write in one
// serializable transaction, so that of daemons taking one lease at once,
// on one machine or many, one wins.
func (s *Store) AcquireHostLease(ctx context.Context, l store.HostLease, takeOver string) (store.HostLease, error) {
	if err := validLease(l); err != nil {
		return store.HostLease{}, err
	}
	want := l
	var got store.HostLease
	err := s.write(ctx, func(tx pgx.Tx) error {
		l := want
		cur, err := scanLease(tx.QueryRow(ctx, `SELECT `+leaseColumns+` FROM host_leases WHERE host_id = $1`, l.Host.String()))
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			l.AcquiredAt = l.RenewedAt
		case err != nil:
			return fmt.Errorf("read the lease of host %s: %w", l.Host, err)
		case cur.Holder == l.Holder:
			l.AcquiredAt = cur.AcquiredAt
		case !cur.ExpiresAt.After(l.RenewedAt), takeOver != "" && cur.Holder == takeOver:
			l.AcquiredAt = l.RenewedAt
		default:
			return &store.LeaseHeldError{Lease: cur}
		}
		_, err = tx.Exec(ctx, `
			INSERT INTO host_leases (`+leaseColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
			ON CONFLICT (host_id) DO UPDATE SET
				holder = excluded.holder, pid = excluded.pid, process_start = excluded.process_start,
				hostname = excluded.hostname, boot_id = excluded.boot_id, acquired_at = excluded.acquired_at,
				renewed_at = excluded.renewed_at, expires_at = excluded.expires_at`,
			l.Host.String(), l.Holder, int64(l.PID), int64(l.ProcessStart), l.Hostname, l.BootID,
			nanos(l.AcquiredAt), nanos(l.RenewedAt), nanos(l.ExpiresAt))
		if err != nil {
			return fmt.Errorf("write the lease of host %s: %w", l.Host, err)
		}
		got = l
		return nil
	})
	if err != nil {
		return store.HostLease{}, err
	}
	return got, nil
}

// ReleaseHostLease implements store.Store.
func (s *Store) ReleaseHostLease(ctx context.Context, host rm.HostID, holder string) error {
	if _, err := s.pool.Exec(ctx, `DELETE FROM host_leases WHERE host_id = $1 AND holder = $2`, host.String(), holder); err != nil {
		return fmt.Errorf("release the lease of host %s: %w", host, err)
	}
	return nil
}
