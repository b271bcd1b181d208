package reconcile

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// The host lease's figures: a daemon renews its lease every LeaseRenewEvery
// and a lease not renewed for LeaseTTL is free for another daemon.
const (
	LeaseRenewEvery = 10 * time.Second
	LeaseTTL        = 30 * time.Second
)

// ErrLeaseLost: another daemon took this host's lease while this one ran
// (this one was suspended past LeaseTTL, or its journal was unreachable).
var ErrLeaseLost = errors.New("the host lease was lost")

// hostLease is the lease of one supervisor's run.
type hostLease struct {
	s     *Supervisor
	lease store.HostLease
}

// takeLease takes the host's lease in the journal, so that a second daemon
// of this host (another data directory over the same journal, a copied one)
// refuses to start instead of sweeping the first one's runners. A lease
// held by a process of this machine's boot that is gone is taken over at
// once: a daemon killed -9 and restarted does not wait for its expiry.
func (s *Supervisor) takeLease(ctx context.Context) (*hostLease, error) {
	self, err := s.cfg.Machine.Identify()
	if err != nil {
		return nil, fmt.Errorf("host lease: %w", err)
	}
	token := make([]byte, 16)
	_, _ = rand.Read(token)
	now := s.cfg.Now()
	want := store.HostLease{Host: s.cfg.Host.ID, Holder: hex.EncodeToString(token), PID: self.PID, ProcessStart: self.Start,
		Hostname: self.Hostname, BootID: self.BootID, RenewedAt: now, ExpiresAt: now.Add(LeaseTTL)}
	got, err := s.cfg.Store.AcquireHostLease(ctx, want, "")
	var held *store.LeaseHeldError
	if errors.As(err, &held) && s.deadHolder(held.Lease, self) {
		s.log.Info("taking over the host lease of a daemon that is gone", "pid", held.Lease.PID, "hostname", held.Lease.Hostname)
		got, err = s.cfg.Store.AcquireHostLease(ctx, want, held.Lease.Holder)
	}
	if err != nil {
		return nil, fmt.Errorf("take the lease of host %s: %w", s.cfg.Host.Name, err)
	}
	return &hostLease{s: s, lease: got}, nil
}

// deadHolder reports whether a lease's holder is surely gone: it ran on
// this machine, and on an earlier boot or in a process that no longer runs.
func (s *Supervisor) deadHolder(l store.HostLease, self rm.ProcessIdentity) bool {
	if l.Hostname != self.Hostname || l.BootID == "" || self.BootID == "" {
		return false // another machine's: only its expiry tells
	}
	if l.BootID != self.BootID {
		return true
	}
	if l.PID == self.PID && l.ProcessStart == self.Start {
		return false // this very process: a supervisor still running
	}
	return !s.cfg.Machine.Alive(l.PID, l.ProcessStart)
}

// renew extends the lease; ErrLeaseLost when another daemon holds it now.
func (h *hostLease) renew(ctx context.Context) error {
	l := h.lease
	l.RenewedAt = h.s.cfg.Now()
	l.ExpiresAt = l.RenewedAt.Add(LeaseTTL)
	got, err := h.s.cfg.Store.AcquireHostLease(ctx, l, "")
	var held *store.LeaseHeldError
	if errors.As(err, &held) {
		return fmt.Errorf("%w: %w", ErrLeaseLost, err)
	}
	if err != nil {
		return err
	}
	h.lease = got
	return nil
}

// keep renews the lease every LeaseRenewEvery until ctx ends; lost is
// called once if another daemon took it.
func (h *hostLease) keep(ctx context.Context, lost func(error)) {
	t := time.NewTicker(LeaseRenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := h.renew(ctx)
		switch {
		case errors.Is(err, ErrLeaseLost):
			h.s.log.Error("another daemon took this host's lease; stopping", "err", err)
			lost(err)
			return
		case err != nil && ctx.Err() == nil:
			h.s.log.Warn("could not renew the host lease; retrying", "err", err, "expires", h.lease.ExpiresAt.Format(time.RFC3339))
		}
	}
}

// release drops the lease, so the next daemon starts at once.
func (h *hostLease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := h.s.cfg.Store.ReleaseHostLease(ctx, h.lease.Host, h.lease.Holder); err != nil {
		h.s.log.Warn("could not release the host lease; the next start takes it over", "err", err)
	}
}
