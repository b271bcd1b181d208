package fleet_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// BenchmarkIdleQueries measures an idle fleet's load on PostgreSQL: the
// statements per minute the server runs (pg_stat_statements) for hosts
// with 10 policies each and no job, over a minute after a warm-up, with
// each policy's default warm spare and without (spare=0). The
// figure is per host and for the whole fleet; b.N is not used (one
// measurement a run).
//
//	go test -run '^$' -bench IdleQueries -benchtime 1x ./simulate/fleet
func BenchmarkIdleQueries(b *testing.B) {
	for _, c := range []struct{ hosts, spare int }{{1, 1}, {3, 1}, {1, 0}} {
		hosts := c.hosts
		b.Run(fmt.Sprintf("hosts=%d/policies=10/spare=%d", hosts, c.spare), func(b *testing.B) {
			srv := pgtest.New(b)
			ctx := context.Background()
			require.NoError(b, srv.LoadStatementStats(ctx))
			db := srv.CreateDatabase(b)
			names := []string{"alpha", "beta", "gamma"}[:hosts]
			// GitHub's long polls (the scale sets' message queues, the
			// runners' job polls) answer after about 50 s without news.
			f := newFleetWith(b, srv.URL(db), []fakegithub.Option{fakegithub.WithPollTimeout(50 * time.Second), fakegithub.WithOfflineAfter(2 * time.Minute)})
			f.heartbeat = 0 // the default, as a user's hosts run
			f.policyArgs = []string{"--spare", fmt.Sprint(c.spare)}
			for _, n := range names {
				f.addHost(n)
			}
			for _, h := range f.hosts {
				for i := 1; i < 10; i++ {
					h.addPolicy(fmt.Sprintf("p-%s-%d", h.name, i), fmt.Sprintf("ss-%s-%d", h.name, i))
				}
				h.start()
			}
			time.Sleep(15 * time.Second) // start-up: sessions opened, first passes
			require.NoError(b, srv.ResetStatementStats(ctx))
			b.ResetTimer()
			window := time.Minute
			if testing.Short() {
				window = 20 * time.Second
			}
			time.Sleep(window) // the idle minute measured
			calls, err := srv.StatementCalls(ctx, db)
			require.NoError(b, err)
			b.StopTimer()
			top, err := srv.TopStatements(ctx, db, 12)
			require.NoError(b, err)
			for _, line := range top {
				b.Log(line)
			}
			perMin := float64(calls) / window.Minutes()
			b.ReportMetric(perMin, "queries/min")
			b.ReportMetric(perMin/float64(hosts), "queries/min/host")
			for _, h := range f.hosts {
				require.True(b, h.alive(), "%s runs", h.name)
			}
		})
	}
}

// BenchmarkIdleFleetPolicy measures an idle fleet serving one fleet
// policy: three hosts, no job, the statements a minute PostgreSQL runs
// (pg_stat_statements), per host and where they go; b.N is not used.
//
//	go test -run '^$' -bench IdleFleetPolicy -benchtime 1x ./simulate/fleet
func BenchmarkIdleFleetPolicy(b *testing.B) {
	srv := pgtest.New(b)
	ctx := context.Background()
	require.NoError(b, srv.LoadStatementStats(ctx))
	db := srv.CreateDatabase(b)
	f := newFleetWith(b, srv.URL(db), []fakegithub.Option{fakegithub.WithPollTimeout(50 * time.Second), fakegithub.WithOfflineAfter(2 * time.Minute)})
	f.heartbeat = 0 // the default, as a user's hosts run
	f.bare = true
	for _, n := range []string{"alpha", "beta", "gamma"} {
		f.addHost(n)
	}
	spare := cmp.Or(os.Getenv("FLEET_BENCH_SPARE"), "auto")
	f.hosts[0].cli("policy", "add", "shared", "--repo", repo, "--scale-set", "shared", "--max", "4", "--fleet",
		"--runner-dir", f.runner, "--memory-estimate", "64MiB", "--spare", spare)
	for _, h := range f.hosts {
		h.start()
	}
	time.Sleep(20 * time.Second) // start-up: the lease taken, spares listening
	require.NoError(b, srv.ResetStatementStats(ctx))
	b.ResetTimer()
	window := time.Minute
	if testing.Short() {
		window = 20 * time.Second
	}
	time.Sleep(window)
	calls, err := srv.StatementCalls(ctx, db)
	require.NoError(b, err)
	b.StopTimer()
	top, err := srv.TopStatements(ctx, db, 15)
	require.NoError(b, err)
	for _, line := range top {
		b.Log(line)
	}
	perMin := float64(calls) / window.Minutes()
	b.ReportMetric(perMin, "queries/min")
	b.ReportMetric(perMin/3, "queries/min/host")
	for _, h := range f.hosts {
		require.True(b, h.alive(), "%s runs", h.name)
	}
}
