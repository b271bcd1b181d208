package logredact_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/logredact"
)

type stringer string

func (s stringer) String() string { return "scope " + string(s) }

type valuer string

func (v valuer) LogValue() slog.Value { return slog.StringValue("resolved " + string(v)) }

type cfg struct{ URL, Token string }

// secretErr's Error panics on a nil receiver, as many do.
type secretErr struct{ tok string }

func (e *secretErr) Error() string { return "auth with " + e.tok + " failed" }

func TestHandler(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
			if format == "json" {
				h = slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug})
			}
			log := slog.New(logredact.NewHandler(h))
			log = log.With("client", "pat="+pat).WithGroup("g").With("fixed", "ok")
			log.Info("sent Bearer "+installTok,
				"str", jwt,
				"err", fmt.Errorf("create session: %w", errors.New("401 "+refreshTok)),
				"ptrerr", &secretErr{tok: oauth},
				"stringer", stringer(userTok),
				"valuer", valuer(fineGrained),
				"group", slog.GroupValue(slog.String("inner", jitBlob), slog.Int("n", 3)),
				"any", cfg{URL: "https://x", Token: installTok},
				"bytes", []byte("RemoteAuth AABF3JGZDX3P5PMEXLND6TS6FCWO6"),
				"runner", "rm-chaos-01JH5Z8Q4V6M2K3N7P9R0S1T2U",
				"id", "5b0d5c5e-8a8f-4e4e-9d4d-2f0c1f1f6a6a",
				"count", 7,
			)
			out := buf.String()
			for _, secret := range []string{pat, installTok, jwt, refreshTok, oauth, userTok, fineGrained, jitBlob, "AABF3JGZDX3P5PMEXLND6TS6FCWO6"} {
				assert.NotContains(t, out, secret[:16])
			}
			for _, kept := range []string{"rm-chaos-01JH5Z8Q4V6M2K3N7P9R0S1T2U", "5b0d5c5e-8a8f-4e4e-9d4d-2f0c1f1f6a6a", "create session: 401 ", "scope ", "resolved ", "https://x", "fixed", "ok", "7", "sent "} {
				assert.Contains(t, out, kept)
			}
			assert.GreaterOrEqual(t, strings.Count(out, logredact.Marker), 10, out)
			if format == "json" {
				assert.Contains(t, out, `"n":3`, "a group keeps its other attributes and their kinds")
			}
		})
	}
}

func TestHandlerPassesCleanRecordsAsTheyCame(t *testing.T) {
	var got []slog.Record
	h := logredact.NewHandler(recorder{&got})
	log := slog.New(h)
	log.Info("clean", "runner", "rm-1", "n", 3, "err", errors.New("boom"))
	require.Len(t, got, 1)
	assert.Equal(t, "clean", got[0].Message)
	var attrs []string
	got[0].Attrs(func(a slog.Attr) bool { attrs = append(attrs, a.String()); return true })
	assert.Equal(t, []string{"runner=rm-1", "n=3", "err=boom"}, attrs)
	assert.Equal(t, slog.KindInt64, attrValue(got[0], "n").Kind(), "kinds are kept")
	assert.Equal(t, slog.KindAny, attrValue(got[0], "err").Kind(), "an error stays an error")
}

func TestHandlerLevels(t *testing.T) {
	var buf bytes.Buffer
	h := logredact.NewHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn}))
	assert.False(t, h.Enabled(context.Background(), slog.LevelInfo))
	assert.True(t, h.Enabled(context.Background(), slog.LevelError))
	slog.New(h).Info("hidden " + pat)
	assert.Empty(t, buf.String())
}

type recorder struct{ got *[]slog.Record }

func (r recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r recorder) Handle(_ context.Context, rec slog.Record) error {
	*r.got = append(*r.got, rec.Clone())
	return nil
}
func (r recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r recorder) WithGroup(string) slog.Handler      { return r }

func attrValue(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

func BenchmarkHandler(b *testing.B) {
	log := slog.New(logredact.NewHandler(slog.NewTextHandler(discard{}, nil)))
	plain := slog.New(slog.NewTextHandler(discard{}, nil))
	for _, bm := range []struct {
		name string
		log  *slog.Logger
	}{{"Plain", plain}, {"Redacting", log}} {
		b.Run(bm.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bm.log.Info("attempt launched", "attempt", "01JH5Z8Q4V6M2K3N7P9R0S1T2U", "runner", "rm-chaos-01", "pid", 4242)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
