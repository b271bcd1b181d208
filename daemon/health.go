package daemon

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"time"
)

// healthTimeout bounds the journal read of one /healthz: a probe that
// waits longer than a supervisor would is answered "unavailable".
const healthTimeout = 2 * time.Second

// Health is the body of GET /healthz on the metrics address: "ok" (200)
// while the daemon runs and its journal answers, "unavailable" (503) with
// the reason otherwise. It is for a service manager's or a load
// balancer's probe; `status` says the rest.
type Health struct {
	Status  string    `json:"status"`
	Error   string    `json:"error,omitempty"`
	PID     int       `json:"pid"`
	Since   time.Time `json:"since,omitzero"`
	Version string    `json:"version"`
}

// Health reads the daemon's health now: running (Run has started and not
// returned) and its journal answering one read of this host's row.
func (d *Daemon) Health(ctx context.Context) Health {
	d.mu.Lock()
	since := d.since
	d.mu.Unlock()
	h := Health{Status: "ok", PID: os.Getpid(), Since: since, Version: d.cfg.Version}
	if since.IsZero() {
		h.Status, h.Error = "unavailable", "the daemon is not running"
		return h
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	if _, err := d.st.Host(ctx, d.host.ID); err != nil {
		h.Status, h.Error = "unavailable", "journal: "+err.Error()
	}
	return h
}

// serveHealth answers GET /healthz with Health as JSON.
func (d *Daemon) serveHealth(w http.ResponseWriter, r *http.Request) {
	h := d.Health(r.Context())
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	if h.Status != "ok" {
		w.WriteHeader(http.StatusServiceUnavailable)
	}
	_ = json.NewEncoder(w).Encode(h)
}
