package github

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// Timeouts of the webhook server. GitHub gives a delivery 10 s to be
// answered, so a sender still sending after that is not GitHub.
const (
	webhookReadHeaderTimeout = 5 * time.Second
	webhookReadTimeout       = 10 * time.Second
	webhookWriteTimeout      = 15 * time.Second
	webhookIdleTimeout       = 60 * time.Second
	webhookMaxHeaderBytes    = 64 << 10
)

// WithWebhookReadTimeout sets how long a request may take to arrive,
// headers and body (default 10 s, GitHub's own delivery timeout); its
// headers get at most half of it, up to 5 s. A slower sender's connection
// is closed, so slow bodies cannot hold descriptors and reading slots.
func WithWebhookReadTimeout(d time.Duration) WebhookOption {
	return func(c *webhookConfig) {
		if d > 0 {
			c.readTimeout = d
		}
	}
}

// NewWebhookServer returns an HTTP server of NewWebhookHandler(secret,
// nudge, opts...) whose every phase is bounded: headers (at most 64 KiB)
// and body must arrive within the read timeout, the answer within 15 s,
// and an idle keep-alive connection is closed after 60 s.
func NewWebhookServer(secret []byte, nudge func(WorkflowJobEvent), opts ...WebhookOption) *http.Server {
	cfg := newWebhookConfig(opts)
	return &http.Server{
		Handler:           NewWebhookHandler(secret, nudge, opts...),
		ReadHeaderTimeout: min(webhookReadHeaderTimeout, cfg.readTimeout/2),
		ReadTimeout:       cfg.readTimeout,
		WriteTimeout:      max(webhookWriteTimeout, cfg.readTimeout+time.Second),
		IdleTimeout:       webhookIdleTimeout,
		MaxHeaderBytes:    webhookMaxHeaderBytes,
	}
}

// ServeWebhooks serves GitHub webhooks on l (see NewWebhookServer) until
// ctx ends, then closes the server and l and returns nil; it returns the
// server's error if it stops on its own.
func ServeWebhooks(ctx context.Context, l net.Listener, secret []byte, nudge func(WorkflowJobEvent), opts ...WebhookOption) error {
	srv := NewWebhookServer(secret, nudge, opts...)
	stop := context.AfterFunc(ctx, func() { _ = srv.Close() })
	defer stop()
	err := srv.Serve(l)
	if errors.Is(err, http.ErrServerClosed) && ctx.Err() != nil {
		return nil
	}
	return err
}
