package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/reconcile"
)

// metricsEvery is how often the metrics read the journal's attempts.
const metricsEvery = 2 * time.Second

// Run serves the host until ctx ends: it takes the data directory's lock,
// listens on the local API socket, the metrics and the webhook addresses,
// and runs the supervisor; then it stops them all (the supervisor drains
// as Config.Drain says), joins every goroutine it started and closes every
// listener before it returns. It returns nil when ctx ended, an error
// when something could not start (another daemon holds the data
// directory: datadir.ErrLocked or localapi.ErrAlreadyRunning; the host's
// lease: *store.LeaseHeldError) or a server stopped on its own.
func (d *Daemon) Run(ctx context.Context) (err error) {
	ls, err := d.listen(true)
	if err != nil {
		return err
	}
	defer ls.close()
	sup, err := d.newSupervisor()
	if err != nil {
		return err
	}
	d.mu.Lock()
	d.since = time.Now().UTC()
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		d.since = time.Time{}
		d.mu.Unlock()
	}()
	owned, err := d.OwnedPolicies(ctx)
	if err != nil {
		return err
	}
	if err := d.checkPrefix(ctx); err != nil {
		return err
	}
	if owned == 0 {
		d.log.Warn("no policies of this host yet: the daemon picks new ones up within seconds")
	}
	d.removeLeftovers(ctx)
	d.holdSlots(ctx)

	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer cancel()
	errs := make(chan error, 4)
	serve := func(what string, f func() error) {
		wg.Go(func() {
			if err := f(); err != nil && ctx.Err() == nil {
				errs <- fmt.Errorf("the %s stopped: %w", what, err)
			}
		})
	}
	d.serve(ctx, ls, serve)
	if ls.lock != nil {
		wg.Go(func() { d.keepLock(ctx, ls.lock) })
	}
	if d.met != nil {
		wg.Go(func() { d.met.Run(ctx, metricsEvery) })
	}
	wg.Go(func() { d.heartbeat(ctx, sup.NudgeAll) })
	wg.Go(func() { d.pruneLogs(ctx) })
	if d.cfg.DataDir != "" {
		wg.Go(func() { d.runner.Run(ctx) })
	}
	d.log.Info("runner-manager running", "host", d.host.Name, "host_id", d.host.ID, "data_dir", d.cfg.DataDir,
		"policies", owned, "socket", ls.addrs.Socket, "store", storeName(d.st), "version", d.cfg.Version)
	supDone := make(chan error, 1)
	wg.Go(func() { supDone <- sup.Run(ctx) })
	select {
	case err = <-supDone:
	case err = <-errs:
		cancel()
		<-supDone
	}
	if ctx.Err() != nil && err == nil {
		d.log.Info("runner-manager stopped")
	}
	return err
}

// serve starts the servers of ls's listeners through serve.
func (d *Daemon) serve(ctx context.Context, ls *listeners, serve func(string, func() error)) {
	if ls.sock != nil {
		serve("daemon API", func() error { return localapi.ServeListener(ctx, ls.sock, d, d.log) })
	}
	if ls.metrics != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", d.met.Handler())
		mux.HandleFunc("GET /healthz", d.serveHealth)
		srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
		serve("metrics server", func() error { return serveHTTP(ctx, srv, ls.metrics) })
	}
	if ls.webhook != nil {
		srv := github.NewWebhookServer(d.cfg.Webhook.Secret, d.targets.notify,
			github.WithWebhookMaxBody(d.cfg.Webhook.MaxBody))
		serve("webhook server", func() error { return serveHTTP(ctx, srv, ls.webhook) })
	}
}

// RunOnce runs one pass of every policy's loop (conclude, reap, keep min
// idle), holding the data directory as Run does, and returns.
func (d *Daemon) RunOnce(ctx context.Context) error {
	ls, err := d.listen(false)
	if err != nil {
		return err
	}
	defer ls.close()
	sup, err := d.newSupervisor()
	if err != nil {
		return err
	}
	d.holdSlots(ctx)
	return sup.RunOnce(ctx)
}

// listeners are what a run holds: the data directory's lock and the
// sockets it serves on.
type listeners struct {
	lock                   *datadir.Lock
	sock, metrics, webhook net.Listener
	addrs                  Addrs
}

// listen takes the lock and opens the local API socket and, with servers,
// the metrics and webhook listeners. On error nothing stays open.
func (d *Daemon) listen(servers bool) (_ *listeners, err error) {
	ls := &listeners{}
	defer func() {
		if err != nil {
			ls.close()
		}
	}()
	// One daemon per data directory: the lock, held for the run (the
	// socket alone is no lock: deleting it would let a second daemon start
	// and sweep the first one's runners). The host lease in the journal
	// (the supervisor's) covers two data directories over one journal.
	if !d.cfg.NoLock {
		if ls.lock, err = d.dir.Lock(); err != nil {
			return nil, err
		}
	}
	if !d.cfg.NoLocalAPI {
		if ls.sock, err = localapi.Listen(d.cfg.DataDir); err != nil {
			return nil, err
		}
		ls.addrs.Socket = d.dir.Socket()
	}
	if !servers {
		return ls, nil
	}
	if d.cfg.MetricsAddr != "" {
		addr := configfile.Daemon{MetricsAddr: d.cfg.MetricsAddr}.MetricsListenAddr()
		if ls.metrics, err = net.Listen("tcp", addr); err != nil {
			return nil, fmt.Errorf("serve metrics on %s: %w", addr, err)
		}
		ls.addrs.Metrics = "http://" + ls.metrics.Addr().String() + "/metrics"
		d.log.Info("serving metrics", "url", ls.addrs.Metrics)
	}
	if d.cfg.Webhook.Listen != "" {
		if ls.webhook, err = net.Listen("tcp", d.cfg.Webhook.Listen); err != nil {
			return nil, fmt.Errorf("serve webhooks on %s: %w", d.cfg.Webhook.Listen, err)
		}
		ls.addrs.Webhook = ls.webhook.Addr().String()
		d.log.Info("serving workflow_job webhooks", "addr", ls.addrs.Webhook)
	}
	d.mu.Lock()
	d.addrs = ls.addrs
	d.mu.Unlock()
	return ls, nil
}

// close closes what ls holds (a listener its server closed already is
// closed again harmlessly).
func (ls *listeners) close() {
	for _, l := range []net.Listener{ls.webhook, ls.metrics, ls.sock} {
		if l != nil {
			_ = l.Close()
		}
	}
	if ls.lock != nil {
		_ = ls.lock.Close()
	}
}

// keepLock checks the data directory's lock every lease renewal until ctx
// ends: a lock file deleted (with the data directory) is locked again on a
// new file before a second daemon can take it.
func (d *Daemon) keepLock(ctx context.Context, lock *datadir.Lock) {
	t := time.NewTicker(reconcile.LeaseRenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if err := lock.Check(); err != nil {
			d.log.Error("the data directory lock is lost", "path", lock.Path(), "err", err)
		}
	}
}

// serveHTTP serves srv on l until ctx ends, then shuts it down (at most
// 5 s for requests in flight) and returns once it has.
func serveHTTP(ctx context.Context, srv *http.Server, l net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		<-ctx.Done()
		sctx, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer stop()
		_ = srv.Shutdown(sctx)
	})
	err := srv.Serve(l)
	cancel()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}
