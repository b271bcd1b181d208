package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// The benchmarks mirror the SQLite journal's (store/bench_test.go), over
// the same journal: 10,000 ended attempts and 20 live ones over 4
// policies, in a database of the test server (a unix socket, fsync off:
// the figures are the store's and the protocol's, not a disk's).

// seed fills s as the SQLite benchmarks' seed does, through the store.
func seed(tb testing.TB, s store.Store, policies, ended, live int) []rm.Policy {
	tb.Helper()
	ctx := context.Background()
	h := storetest.NewHost().Build()
	if err := s.PutHost(ctx, h); err != nil {
		tb.Fatal(err)
	}
	base := time.Now().Add(-30 * 24 * time.Hour)
	var ps []rm.Policy
	for i := range policies {
		p := storetest.NewPolicy().Host(h.ID).Autoscale(fmt.Sprintf("set-%d", i), 10).Build()
		if err := s.InsertPolicy(ctx, p); err != nil {
			tb.Fatal(err)
		}
		ps = append(ps, p)
	}
	record := func(a rm.Attempt) {
		if err := s.RecordAttempt(ctx, a); err != nil {
			tb.Fatal(err)
		}
	}
	for i := range ended {
		st := rm.StateFinished
		if i%7 == 0 {
			st = rm.StateFailed
		}
		record(storetest.NewAttempt().Policy(ps[i%policies].ID).Host(h.ID).State(st).
			CreatedAt(base.Add(time.Duration(i) * time.Minute)).Build())
	}
	lives := []rm.AttemptState{rm.StatePending, rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy}
	for i := range live {
		record(storetest.NewAttempt().Policy(ps[i%policies].ID).Host(h.ID).State(lives[i%len(lives)]).Build())
	}
	return ps
}

func seeded(b *testing.B) (*postgres.Store, []rm.Policy) {
	s := pgtest.MustOpen(b)
	ps := seed(b, s, 4, 10_000, 20)
	if err := postgres.Analyze(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	return s, ps
}

// BenchmarkActiveAttempts: the live attempts of one policy in a journal of
// 10,000 ended attempts and 20 live ones over 4 policies.
func BenchmarkActiveAttempts(b *testing.B) {
	s, ps := seeded(b)
	ctx := context.Background()
	for b.Loop() {
		as, err := s.ActiveAttempts(ctx, ps[0].ID)
		if err != nil {
			b.Fatal(err)
		}
		if len(as) != 5 {
			b.Fatalf("%d live attempts, want 5", len(as))
		}
	}
}

// BenchmarkAttemptsNewest: the newest 50 attempts of the same journal, as
// the TUI's history view lists them.
func BenchmarkAttemptsNewest(b *testing.B) {
	s, _ := seeded(b)
	ctx := context.Background()
	for b.Loop() {
		as, err := s.Attempts(ctx, store.AttemptFilter{Limit: 50})
		if err != nil {
			b.Fatal(err)
		}
		if len(as) != 50 {
			b.Fatalf("%d attempts, want 50", len(as))
		}
	}
}

// BenchmarkRecordAttempt: one committed write to the same journal, an
// update of a live attempt (the usual write of a pass) and an insert.
func BenchmarkRecordAttempt(b *testing.B) {
	s, ps := seeded(b)
	ctx := context.Background()
	b.Run("Update", func(b *testing.B) {
		a := storetest.NewAttempt().Policy(ps[0].ID).State(rm.StateBusy).Build()
		if err := s.RecordAttempt(ctx, a); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			a.Usage.Samples++
			a.UpdatedAt = time.Now()
			if err := s.RecordAttempt(ctx, a); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Insert", func(b *testing.B) {
		for b.Loop() {
			a := storetest.NewAttempt().Policy(ps[1].ID).Build()
			if err := s.RecordAttempt(ctx, a); err != nil {
				b.Fatal(err)
			}
		}
	})
}
