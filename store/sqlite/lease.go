package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

const leaseColumns = `host_id, holder, pid, process_start, hostname, boot_id, acquired_at, renewed_at, expires_at`

func scanLease(sc interface{ Scan(...any) error }) (store.HostLease, error) {
	var (
		l                          store.HostLease
		start                      int64
		acquired, renewed, expires sql.NullInt64
	)
	if err := sc.Scan(&l.Host, &l.Holder, &l.PID, &start, &l.Hostname, &l.BootID, &acquired, &renewed, &expires); err != nil {
		return store.HostLease{}, err
	}
	l.ProcessStart = uint64(start)
	l.AcquiredAt, l.RenewedAt, l.ExpiresAt = fromNanos(acquired), fromNanos(renewed), fromNanos(expires)
	return l, nil
}

// HostLease returns the host's lease; ErrNotFound if no daemon holds one.
func (s *Store) HostLease(ctx context.Context, host rm.HostID) (store.HostLease, error) {
	l, err := scanLease(s.r.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM host_leases WHERE host_id = ?`, host))
	if errors.Is(err, sql.ErrNoRows) {
		return store.HostLease{}, fmt.Errorf("lease of host %s: %w", host, store.ErrNotFound)
	}
	if err != nil {
		return store.HostLease{}, fmt.Errorf("read the lease of host %s: %w", host, err)
	}
	return l, nil
}

// AcquireHostLease implements Store: a read and a write in one immediate
// transaction, so two daemons taking one lease at once cannot both win.
func (s *Store) AcquireHostLease(ctx context.Context, l store.HostLease, takeOver string) (store.HostLease, error) {
	if err := l.Validate(); err != nil {
		return store.HostLease{}, err
	}
	var got store.HostLease
	err := s.write(ctx, func(tx *sql.Tx) error {
		cur, err := scanLease(tx.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM host_leases WHERE host_id = ?`, l.Host))
		switch {
		case errors.Is(err, sql.ErrNoRows):
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
		_, err = tx.ExecContext(ctx, `
			INSERT INTO host_leases (`+leaseColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT (host_id) DO UPDATE SET
				holder = excluded.holder, pid = excluded.pid, process_start = excluded.process_start,
				hostname = excluded.hostname, boot_id = excluded.boot_id, acquired_at = excluded.acquired_at,
				renewed_at = excluded.renewed_at, expires_at = excluded.expires_at`,
			l.Host, l.Holder, l.PID, int64(l.ProcessStart), l.Hostname, l.BootID,
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

// ReleaseHostLease implements Store.
func (s *Store) ReleaseHostLease(ctx context.Context, host rm.HostID, holder string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM host_leases WHERE host_id = ? AND holder = ?`, host, holder); err != nil {
		return fmt.Errorf("release the lease of host %s: %w", host, err)
	}
	return nil
}
