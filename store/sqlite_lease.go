package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	rm "github.com/runner-manager/runner-manager"
)

const leaseColumns = `host_id, holder, pid, process_start, hostname, boot_id, acquired_at, renewed_at, expires_at`

func scanLease(sc interface{ Scan(...any) error }) (HostLease, error) {
	var (
		l                          HostLease
		start                      int64
		acquired, renewed, expires sql.NullInt64
	)
	if err := sc.Scan(&l.Host, &l.Holder, &l.PID, &start, &l.Hostname, &l.BootID, &acquired, &renewed, &expires); err != nil {
		return HostLease{}, err
	}
	l.ProcessStart = uint64(start)
	l.AcquiredAt, l.RenewedAt, l.ExpiresAt = fromNanos(acquired), fromNanos(renewed), fromNanos(expires)
	return l, nil
}

// HostLease returns the host's lease; ErrNotFound if no daemon holds one.
func (s *SQLite) HostLease(ctx context.Context, host rm.HostID) (HostLease, error) {
	l, err := scanLease(s.r.QueryRowContext(ctx, `SELECT `+leaseColumns+` FROM host_leases WHERE host_id = ?`, host))
	if errors.Is(err, sql.ErrNoRows) {
		return HostLease{}, fmt.Errorf("lease of host %s: %w", host, ErrNotFound)
	}
	if err != nil {
		return HostLease{}, fmt.Errorf("read the lease of host %s: %w", host, err)
	}
	return l, nil
}

// AcquireHostLease implements Store: a read and a write in one immediate
// transaction, so two daemons taking one lease at once cannot both win.
func (s *SQLite) AcquireHostLease(ctx context.Context, l HostLease, takeOver string) (HostLease, error) {
	if err := l.validate(); err != nil {
		return HostLease{}, err
	}
	var got HostLease
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
			return &LeaseHeldError{Lease: cur}
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
		return HostLease{}, err
	}
	return got, nil
}

// ReleaseHostLease implements Store.
func (s *SQLite) ReleaseHostLease(ctx context.Context, host rm.HostID, holder string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM host_leases WHERE host_id = ? AND holder = ?`, host, holder); err != nil {
		return fmt.Errorf("release the lease of host %s: %w", host, err)
	}
	return nil
}
