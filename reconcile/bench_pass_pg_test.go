package reconcile_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

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
			var queries queryCounter
			st, err := postgres.Open(ctx, srv.URL(srv.CreateDatabase(b)), postgres.WithTracer(&queries))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = st.Close() })
			host, ps := seedPassJournal(b, st, 10, c.ended, 2)
			if err := postgres.Analyze(ctx, st); err != nil {
				b.Fatal(err)
			}
			benchPass(b, st, host, ps, c.spaced, func() { queries.n.Store(0) })
			b.ReportMetric(float64(queries.n.Load())/float64(b.N), "queries/pass")
		})
	}
}

// queryCounter counts the statements sent to the server (each a round
// trip; a transaction's BEGIN and COMMIT count too).
type queryCounter struct{ n atomic.Int64 }

func (q *queryCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	q.n.Add(1)
	return ctx
}

func (q *queryCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
