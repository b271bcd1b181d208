package sqlstore

import (
	"context"
	"fmt"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

const leaseColumns = `host_id, holder, pid, process_start, hostname, boot_id, acquired_at, renewed_at, expires_at`

func scanLease(sc Row) (store.HostLease, error) {
	var (
		l          store.HostLease
		pid, start int64
	)
	if err := sc.Scan(&l.Host, &l.Holder, &pid, &start, &l.Hostname, &l.BootID, at(&l.AcquiredAt), at(&l.RenewedAt), at(&l.ExpiresAt)); err != nil {
		return store.HostLease{}, err
	}
	l.PID = int(pid)
	l.ProcessStart = uint64(start)
	return l, nil
}

// HostLease returns the host's lease; store.ErrNotFound if no daemon holds
// one.
func (j *Journal) HostLease(ctx context.Context, host rm.HostID) (store.HostLease, error) {
	l, err := scanLease(j.c.Read.QueryRow(ctx, `SELECT `+leaseColumns+` FROM host_leases WHERE host_id = ?`, host.String()))
	if noRows(err) {
		return store.HostLease{}, fmt.Errorf("lease of host %s: %w", host, store.ErrNotFound)
	}
	if err != nil {
		return store.HostLease{}, fmt.Errorf("read the lease of host %s: %w", host, err)
	}
	return l, nil
}

// AcquireHostLease implements store.Store: a read and a write in one
// transaction, so that of daemons taking one lease at once, on one machine
// or many, one wins.
func (j *Journal) AcquireHostLease(ctx context.Context, want store.HostLease, takeOver string) (store.HostLease, error) {
	if err := want.Validate(); err != nil {
		return store.HostLease{}, err
	}
	var got store.HostLease
	err := j.c.Tx(ctx, func(tx DB) error {
		l := want // the transaction may be run again
		cur, err := scanLease(tx.QueryRow(ctx, `SELECT `+leaseColumns+` FROM host_leases WHERE host_id = ?`, l.Host.String()))
		switch {
		case noRows(err):
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
			INSERT INTO host_leases (`+leaseColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
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
func (j *Journal) ReleaseHostLease(ctx context.Context, host rm.HostID, holder string) error {
	if _, err := j.c.Write.Exec(ctx, `DELETE FROM host_leases WHERE host_id = ? AND holder = ?`, host.String(), holder); err != nil {
		return fmt.Errorf("release the lease of host %s: %w", host, err)
	}
	return nil
}
