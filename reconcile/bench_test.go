//go:build linux

package reconcile_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// launched is one Launch call that returned.
type launched struct {
	at   time.Time
	proc rm.Process
	root string // the attempt's root directory
	// exited receives when the process exited, seen by a watcher of Done.
	exited chan time.Time
}

// timedLauncher times the launches of a real native launcher.
type timedLauncher struct {
	*native.Launcher
	out chan launched
}

func (t *timedLauncher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	p, err := t.Launcher.Launch(ctx, spec)
	if err != nil {
		return p, err
	}
	l := launched{at: time.Now(), proc: p, root: t.Root(spec.Attempt), exited: make(chan time.Time, 1)}
	go func() {
		<-p.Done()
		l.exited <- time.Now()
	}()
	t.out <- l
	return p, nil
}

// benchLoop runs a loop of one policy (max 1) over a real journal, the
// native launcher starting script, and a zero-latency in-memory GitHub, so
// the figures are the manager's own overhead.
func benchLoop(b *testing.B, script string) (*reconcile.Loop, *timedLauncher) {
	b.Helper()
	install := b.TempDir()
	must(b, os.MkdirAll(filepath.Join(install, "bin"), 0o755))
	must(b, os.WriteFile(filepath.Join(install, "bin", "Runner.Listener"), []byte("#!/bin/sh\n"+script+"\n"), 0o755))
	st := sqlitetest.MustOpen(b)
	host := storetest.NewHost().Build()
	must(b, st.PutHost(context.Background(), host))
	pol := storetest.NewPolicy().Repository("acme/repo").Host(host.ID).Autoscale("bench", 1).RunnerDir(install).Build()
	must(b, st.InsertPolicy(context.Background(), pol))
	native := native.NewLauncher(b.TempDir())
	b.Cleanup(func() { _ = native.Close() })
	tl := &timedLauncher{Launcher: native, out: make(chan launched, 16)}
	loop, err := reconcile.NewLoop(reconcile.Config{
		Store: st, Target: reconcile.TargetOf(newFakeTarget()), Launcher: tl, Host: host, Policies: []rm.Policy{pol},
		LoopOptions: reconcile.LoopOptions{JobWordGrace: time.Millisecond, StopGrace: time.Second},
	})
	must(b, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = loop.Run(ctx)
	}()
	b.Cleanup(func() {
		cancel()
		<-done
		for {
			select {
			case l := <-tl.out:
				_ = l.proc.Stop(context.Background(), time.Second)
			default:
				return
			}
		}
	})
	return loop, tl
}

func must(b *testing.B, err error) {
	b.Helper()
	if err != nil {
		b.Fatal(err)
	}
}

// reportLatencies reports the mean as ns/op, and the median and p99.
func reportLatencies(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	var sum time.Duration
	for _, d := range ds {
		sum += d
	}
	b.ReportMetric(float64(sum.Nanoseconds())/float64(len(ds)), "ns/op")
	b.ReportMetric(float64(ds[len(ds)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(ds[len(ds)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkSlotRecycle measures a runner's exit (its Done closing) to its
// replacement's Launch returning: the loop sees the exit through Done, a
// pass frees the slot, writes the new attempt's rows and launches it.
// Budget: 250 ms.
func BenchmarkSlotRecycle(b *testing.B) {
	loop, tl := benchLoop(b, "sleep 0.02") // a runner that does its job and exits 0
	loop.ReportDemand(rm.Demand{Wanted: 1 << 20})
	prev := <-tl.out
	var ds []time.Duration
	b.ResetTimer()
	for range b.N {
		exitAt := <-prev.exited
		next := <-tl.out
		ds = append(ds, next.at.Sub(exitAt))
		prev = next
	}
	b.StopTimer()
	reportLatencies(b, ds)
}

// BenchmarkDemandToStart measures the manager's overhead from a demand
// figure reported to the runner process started (Launch returned), with a
// zero-latency GitHub: the JIT round trip is not in it. Budget: 20 ms.
func BenchmarkDemandToStart(b *testing.B) {
	// A runner idle until told to go (as one whose registration was
	// removed): it then exits 0.
	loop, tl := benchLoop(b, "while [ ! -e go ]; do sleep 0.005; done")
	var ds []time.Duration
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		loop.ReportDemand(rm.Demand{Wanted: 1})
		l := <-tl.out
		ds = append(ds, l.at.Sub(start))
		b.StopTimer()
		loop.ReportDemand(rm.Demand{Wanted: 0})
		must(b, os.WriteFile(filepath.Join(l.root, "go"), nil, 0o600))
		<-l.proc.Done()
		deadline := time.Now().Add(10 * time.Second)
		for loop.Live() > 0 && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond) // the next pass concludes it
		}
		if loop.Live() > 0 {
			b.Fatal("the stopped runner was not concluded")
		}
		b.StartTimer()
	}
	b.StopTimer()
	reportLatencies(b, ds)
}
