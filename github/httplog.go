package github

import (
	"context"
	"errors"
	"log/slog"
)

// canceledAtDebug wraps the logger handed to actions/scaleset, which logs
// on its own: a request that failed because its context was canceled
// (its retryablehttp logs "request failed" at ERROR) is a normal stop, not
// an error, so it is logged at DEBUG; so are its INFO notes ("refreshing
// token", "getting runner registration token", each with a URL), which the
// manager's own records ("message session open") already tell. Warnings
// and other errors pass unchanged; the caller gets the error either way.
// quiet (RetryPolicy.Quiet) logs them all at DEBUG: a one-shot command's
// failed tries are told by the error it prints.
func canceledAtDebug(log *slog.Logger, quiet bool) *slog.Logger {
	if log == nil {
		return nil
	}
	return slog.New(canceledHandler{log.Handler(), quiet})
}

type canceledHandler struct {
	slog.Handler
	quiet bool
}

func (h canceledHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level <= slog.LevelDebug || (!h.quiet && r.Level > slog.LevelInfo && !canceled(r)) {
		return h.Handler.Handle(ctx, r)
	}
	if !h.Handler.Enabled(ctx, slog.LevelDebug) {
		return nil
	}
	d := slog.NewRecord(r.Time, slog.LevelDebug, r.Message, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		d.AddAttrs(a)
		return true
	})
	return h.Handler.Handle(ctx, d)
}

func (h canceledHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return canceledHandler{h.Handler.WithAttrs(as), h.quiet}
}

func (h canceledHandler) WithGroup(name string) slog.Handler {
	return canceledHandler{h.Handler.WithGroup(name), h.quiet}
}

// canceled reports whether a record carries an error of a canceled context.
func canceled(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		if err, ok := a.Value.Any().(error); ok && errors.Is(err, context.Canceled) {
			found = true
		}
		return !found
	})
	return found
}
