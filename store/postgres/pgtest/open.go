package pgtest

import (
	"context"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/store/postgres"
)

// MustOpen opens a PostgreSQL store over a new database of the shared
// server (Start), closed when tb ends.
func MustOpen(tb testing.TB, opts ...postgres.Option) *postgres.Store {
	tb.Helper()
	url := Start(tb)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	s, err := postgres.Open(ctx, url, opts...)
	if err != nil {
		tb.Fatalf("pgtest: open the store: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Close(); err != nil {
			tb.Errorf("pgtest: close the store: %v", err)
		}
	})
	return s
}
