package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// BenchmarkPassPostgres is BenchmarkPass over the PostgreSQL store: the
// same journal (10 policies, 10,000 historical attempts) in a database of a
// real server on a unix socket, started for the benchmark. Budget: 5 ms.
func BenchmarkPassPostgres(b *testing.B) {
	srv := pgtest.New(b)
	for _, c := range []struct {
		ended  int
		spaced time.Duration
	}{{0, 0}, {10_000, 0}, {10_000, 100 * time.Millisecond}} {
		name := fmt.Sprintf("history=%d", c.ended)
		if c.spaced > 0 {
			name += "/spaced"
		}
		b.Run(name, func(b *testing.B) {
			ctx := context.Background()
			st, err := postgres.Open(ctx, srv.URL(srv.CreateDatabase(b)))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			host, ps := seedPassJournal(b, st, 10, c.ended, 2)
			if err := postgres.Analyze(ctx, st); err != nil {
				b.Fatal(err)
			}
			benchPass(b, st, host, ps, c.spaced)
		})
	}
}
