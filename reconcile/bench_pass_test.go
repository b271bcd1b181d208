package reconcile_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// passJournal is a journal with a month of history: policies of one host
// (distinct targets), ended attempts spread over them (one in seven
// failed), and live ones in every policy but the first, whose live runners
// the benchmark's own loop launches.
func passJournal(b *testing.B, policies, ended, livePerOther int) (store.Store, rm.Host, []rm.Policy) {
	b.Helper()
	st := sqlitetest.MustOpen(b)
	host, ps := seedPassJournal(b, st, policies, ended, livePerOther)
	return st, host, ps
}

// seedPassJournal fills st as passJournal describes.
func seedPassJournal(b *testing.B, st store.Store, policies, ended, livePerOther int) (rm.Host, []rm.Policy) {
	b.Helper()
	ctx := context.Background()
	host := storetest.NewHost().Memory(64 << 30).Build()
	if err := st.PutHost(ctx, host); err != nil {
		b.Fatal(err)
	}
	var ps []rm.Policy
	for i := range policies {
		p := storetest.NewPolicy().Name(fmt.Sprintf("pass-%02d", i)).Repository("acme/repo").Host(host.ID).
			Autoscale(fmt.Sprintf("set-%02d", i), 8).MemoryEstimate(512 << 20).Build()
		if err := st.InsertPolicy(ctx, p); err != nil {
			b.Fatal(err)
		}
		ps = append(ps, p)
	}
	base := time.Now().Add(-30 * 24 * time.Hour)
	for i := range ended {
		state := rm.StateFinished
		if i%7 == 0 {
			state = rm.StateFailed
		}
		a := storetest.NewAttempt().Policy(ps[i%policies].ID).Host(host.ID).State(state).
			Job(rm.Job{ID: jobKey(int64(i + 1)), RunID: int64(i + 1), Workflow: "ci.yml", Name: "build"}).
			CreatedAt(base.Add(time.Duration(i) * 4 * time.Minute)).Build()
		if err := st.RecordAttempt(ctx, a); err != nil {
			b.Fatal(err)
		}
	}
	for _, p := range ps[1:] {
		for j := range livePerOther {
			state := rm.StateBusy
			if j%2 == 1 {
				state = rm.StateIdle
			}
			a := storetest.NewAttempt().Policy(p.ID).Host(host.ID).State(state).GitHubRunnerID(int64(j + 1)).
				ProcessID(1 << 20).ProcessStart(1).Build()
			if err := st.RecordAttempt(ctx, a); err != nil {
				b.Fatal(err)
			}
		}
	}
	return host, ps
}

// BenchmarkPass is one reconcile pass of a target's loop over a journal of
// 10,000 historical attempts: 10 policies, the loop's own with 4 live
// runners (launched by its first pass, fake processes), 2 live in each
// other policy (admission counts them), a zero-latency in-memory GitHub.
// The steady pass reads its policy and live attempts, the launch budget
// (failed attempts of the last minutes), admission's view of the host
// (every policy's live attempts), and publishes its status. Budget: 2 ms.
//
// The spaced variants leave 100 ms between passes (timer stopped), as the
// daemon's passes are spaced: caches and the scheduler are cold then.
func BenchmarkPass(b *testing.B) {
	for _, c := range []struct {
		ended  int
		spaced time.Duration
	}{{0, 0}, {10_000, 0}, {10_000, 100 * time.Millisecond}} {
		name := fmt.Sprintf("history=%d", c.ended)
		if c.spaced > 0 {
			name += "/spaced"
		}
		ended := c.ended
		b.Run(name, func(b *testing.B) {
			st, host, ps := passJournal(b, 10, ended, 2)
			benchPass(b, st, host, ps, c.spaced, nil)
		})
	}
}

// benchPass times steady passes of the first policy's loop over st;
// steady, if not nil, is called before the first timed pass.
func benchPass(b *testing.B, st store.Store, host rm.Host, ps []rm.Policy, spaced time.Duration, steady func()) {
	b.Helper()
	target := newFakeTarget()
	loop, err := reconcile.NewLoop(reconcile.Config{
		Store: st, Target: reconcile.TargetOf(target), Launcher: newFakeLauncher(), Meters: newFakeMeters(), Host: host,
		Policies: ps[:1], Admission: &reconcile.Admission{Memory: fakeMemory{total: 64 << 30}},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(loop.Close)
	ctx := context.Background()
	loop.ReportDemand(rm.Demand{Wanted: 4, At: time.Now()})
	if _, err := loop.Reconcile(ctx); err != nil {
		b.Fatal(err)
	}
	if n := loop.Live(); n != 4 {
		b.Fatalf("%d live after the first pass, want 4", n)
	}
	jit := target.count("jit")
	if steady != nil {
		steady()
	}
	for b.Loop() {
		if spaced > 0 {
			b.StopTimer()
			time.Sleep(spaced) // the daemon's passes are spaced too
			b.StartTimer()
		}
		if _, err := loop.Reconcile(ctx); err != nil {
			b.Fatal(err)
		}
	}
	if n := loop.Live(); n != 4 {
		b.Fatalf("%d live after the passes, want 4", n)
	}
	if n := target.count("jit"); n != jit {
		b.Fatalf("a steady pass launched %d runners", n-jit)
	}
}
