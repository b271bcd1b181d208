// Package localapi owns the daemon's local API: `runner-manager run`
// serves its live figures and a few controls over HTTP on a unix socket,
// <data>/manager.sock (mode 0600, in a 0700 directory), and `status`, `tui`
// and the policy commands reach it with Client.
//
//	GET  /v1/status               status.Status as JSON
//	POST /v1/attempts/{id}/stop   stop one attempt (204)
//	POST /v1/refresh              re-read policies from the journal now (204)
//
// Errors are JSON {"error": "..."} with 400 (invalid), 404 (unknown attempt)
// or 500. Windows 10 (1803) and later have unix sockets; older Windows has
// no daemon API and `status` reads the journal only.
package localapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// SocketPath is where the daemon of dataDir listens (datadir.Dir.Socket).
func SocketPath(dataDir string) string { return datadir.New(dataDir).Socket() }

// maxSocketPath is the shortest sun_path limit of the systems we run on
// (macOS: 104 bytes, including the terminating NUL).
const maxSocketPath = 103

// ErrNotRunning: no daemon serves the data directory.
var ErrNotRunning = errors.New("the daemon is not running")

// ErrAlreadyRunning: another daemon serves the data directory.
var ErrAlreadyRunning = rm.NewError(rm.ClassConflict, "another runner-manager daemon is running on this data directory")

// Daemon is what the server exposes; *reconcile.Supervisor meets it.
type Daemon interface {
	Status() status.Status
	// StopAttempt stops one attempt's runner; store.ErrNotFound (wrapped)
	// for an unknown attempt.
	StopAttempt(ctx context.Context, id rm.AttemptID) error
	// Refresh re-reads the policies from the journal now.
	Refresh()
}

// NewHandler serves the API for d.
func NewHandler(d Daemon, logger *slog.Logger) http.Handler {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/status", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, d.Status())
	})
	mux.HandleFunc("POST /v1/attempts/{id}/stop", func(w http.ResponseWriter, r *http.Request) {
		id, err := rm.ParseAttemptID(r.PathValue("id"))
		if err != nil || id.IsZero() {
			writeError(w, http.StatusBadRequest, fmt.Errorf("%q is not an attempt id", r.PathValue("id")))
			return
		}
		if err := d.StopAttempt(r.Context(), id); err != nil {
			status := http.StatusInternalServerError
			switch {
			case errors.Is(err, store.ErrNotFound):
				status = http.StatusNotFound
			case errors.Is(err, rm.ErrInvalid):
				status = http.StatusBadRequest
			}
			logger.Warn("stop attempt", "attempt", id, "err", err)
			writeError(w, status, err)
			return
		}
		logger.Info("attempt stopped on request", "attempt", id)
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST /v1/refresh", func(w http.ResponseWriter, r *http.Request) {
		d.Refresh()
		w.WriteHeader(http.StatusNoContent)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

type errorBody struct {
	Error string `json:"error"`
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, errorBody{Error: err.Error()})
}

// Listen opens the daemon's socket in dataDir, mode 0600. A socket left by a
// daemon that died is removed; one a live daemon answers on is
// ErrAlreadyRunning.
func Listen(dataDir string) (net.Listener, error) {
	path := SocketPath(dataDir)
	if len(path) > maxSocketPath {
		return nil, fmt.Errorf("%w: the socket path %s is %d bytes, longer than unix sockets allow (%d): use a shorter --data-dir",
			rm.ErrInvalid, path, len(path), maxSocketPath)
	}
	if _, err := os.Lstat(path); err == nil {
		c, err := net.DialTimeout("unix", path, time.Second)
		if err == nil {
			c.Close()
			return nil, fmt.Errorf("%w (it answers on %s): stop it first", ErrAlreadyRunning, path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("remove the stale socket %s: %w", path, err)
		}
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", path, err)
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("restrict %s to its owner: %w", path, err)
	}
	return l, nil
}

// Serve serves d on the socket of dataDir until ctx ends, then removes the
// socket.
func Serve(ctx context.Context, dataDir string, d Daemon, logger *slog.Logger) error {
	l, err := Listen(dataDir)
	if err != nil {
		return err
	}
	return ServeListener(ctx, l, d, logger)
}

// ServeListener serves d on l until ctx ends; it closes l (which removes a
// unix socket's file).
func ServeListener(ctx context.Context, l net.Listener, d Daemon, logger *slog.Logger) error {
	srv := &http.Server{
		Handler:           NewHandler(d, logger),
		ReadHeaderTimeout: 5 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		<-ctx.Done()
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdownCtx)
	}()
	err := srv.Serve(l)
	<-done
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
