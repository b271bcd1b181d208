package logredact

import (
	"context"
	"fmt"
	"log/slog"
)

// handler rewrites each record's message and attributes through String
// before the next handler sees them.
type handler struct{ next slog.Handler }

var _ slog.Handler = handler{}

// NewHandler returns a handler that passes records to next with every
// credential in their message and attribute values replaced by Marker:
// strings, groups, errors (by their Error text), fmt.Stringers, LogValuers
// (resolved first) and any other value whose printed form holds one (it is
// then passed as that printed form, redacted). A record with no credential
// reaches next as it came.
func NewHandler(next slog.Handler) slog.Handler { return handler{next: next} }

func (h handler) Enabled(ctx context.Context, l slog.Level) bool { return h.next.Enabled(ctx, l) }

func (h handler) Handle(ctx context.Context, r slog.Record) error {
	dirty := Contains(r.Message)
	if !dirty {
		r.Attrs(func(a slog.Attr) bool {
			_, changed := attr(a)
			dirty = changed
			return !changed
		})
	}
	if !dirty {
		return h.next.Handle(ctx, r)
	}
	out := slog.NewRecord(r.Time, r.Level, String(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		a, _ = attr(a)
		out.AddAttrs(a)
		return true
	})
	return h.next.Handle(ctx, out)
}

func (h handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	clean := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		clean[i], _ = attr(a)
	}
	return handler{next: h.next.WithAttrs(clean)}
}

func (h handler) WithGroup(name string) slog.Handler {
	return handler{next: h.next.WithGroup(name)}
}

// attr returns a with its value redacted, and whether that changed it.
func attr(a slog.Attr) (slog.Attr, bool) {
	v, changed := value(a.Value)
	if !changed {
		return a, false
	}
	return slog.Attr{Key: a.Key, Value: v}, true
}

func value(v slog.Value) (slog.Value, bool) {
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		if r := String(s); len(r) != len(s) || r != s {
			return slog.StringValue(r), true
		}
		return v, false
	case slog.KindGroup:
		group := v.Group()
		var out []slog.Attr
		for i, a := range group {
			ra, changed := attr(a)
			if changed && out == nil {
				out = append(make([]slog.Attr, 0, len(group)), group[:i]...)
			}
			if out != nil {
				out = append(out, ra)
			}
		}
		if out == nil {
			return v, false
		}
		return slog.GroupValue(out...), true
	case slog.KindLogValuer:
		if nv, changed := value(v.Resolve()); changed {
			return nv, true
		}
		return v, false
	case slog.KindAny:
		if s := printed(v.Any()); Contains(s) {
			return slog.StringValue(String(s)), true
		}
		return v, false
	}
	return v, false
}

// printed is x as a handler would print it: an error's text, a Stringer's
// string, anything else by fmt (which also survives a nil receiver's panic).
func printed(x any) (s string) {
	defer func() {
		if recover() != nil {
			s = fmt.Sprintf("%+v", x)
		}
	}()
	switch x := x.(type) {
	case error:
		return x.Error()
	case fmt.Stringer:
		return x.String()
	case []byte:
		return string(x)
	}
	return fmt.Sprintf("%+v", x)
}
