package sqlite_test

import (
	"context"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// BenchmarkActiveAttempts: the live attempts of one policy in a journal of
// 10,000 ended attempts and 20 live ones over 4 policies. Budget: 2 ms.
func BenchmarkActiveAttempts(b *testing.B) {
	s := sqlitetest.MustOpen(b)
	ps := seed(b, s, 4, 10_000, 20)
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

// BenchmarkLiveAttempts: the live attempts of the host in the same
// journal, as each pass, sample and admission reads them. Budget: 2 ms.
func BenchmarkLiveAttempts(b *testing.B) {
	s := sqlitetest.MustOpen(b)
	ps := seed(b, s, 4, 10_000, 20)
	p, err := s.Policy(context.Background(), ps[0].ID)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	for b.Loop() {
		as, err := s.LiveAttempts(ctx, p.Host)
		if err != nil {
			b.Fatal(err)
		}
		if len(as) != 20 {
			b.Fatalf("%d live attempts, want 20", len(as))
		}
	}
}

// BenchmarkAttemptsNewest: the newest 50 attempts of the same journal, as
// the TUI's history view lists them.
func BenchmarkAttemptsNewest(b *testing.B) {
	s := sqlitetest.MustOpen(b)
	seed(b, s, 4, 10_000, 20)
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

// BenchmarkRecordAttempt: one committed write to a journal of 10,000
// attempts, an update of a live attempt (the usual write of a pass) and an
// insert of a new one.
func BenchmarkRecordAttempt(b *testing.B) {
	s := sqlitetest.MustOpen(b)
	ps := seed(b, s, 4, 10_000, 20)
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
