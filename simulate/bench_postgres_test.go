package simulate_test

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
)

// BenchmarkBusyPostgres is the busy day's bench (simulate.RunBench) over a
// PostgreSQL journal: the statements a minute the server runs for one busy
// host, counted by the server itself (pg_stat_statements), and the
// database's growth, beside the bench's own figures. The load is
// RUNNER_MANAGER_BUSY_JOBS_PER_HOUR (default 10,000) for
// RUNNER_MANAGER_BUSY_FOR (default 1m) over RUNNER_MANAGER_BUSY_POLICIES
// policies (default 100); b.N is not used (one run):
//
//	go test -run '^$' -bench BusyPostgres -benchtime 1x -timeout 30m ./simulate/
func BenchmarkBusyPostgres(b *testing.B) {
	envInt := func(name string, def int) int {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want a count above 0", name, v)
			}
			return n
		}
		return def
	}
	policies := envInt("RUNNER_MANAGER_BUSY_POLICIES", 100)
	perHour := envInt("RUNNER_MANAGER_BUSY_JOBS_PER_HOUR", 10000)
	span := time.Minute
	if v := os.Getenv("RUNNER_MANAGER_BUSY_FOR"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			b.Fatalf("RUNNER_MANAGER_BUSY_FOR=%q: want a duration above 0", v)
		}
		span = d
	}
	jobs := max(1, int(float64(perHour)*span.Hours()+0.5))

	srv := pgtest.New(b)
	ctx := context.Background()
	require.NoError(b, srv.LoadStatementStats(ctx))
	db := srv.CreateDatabase(b)
	st, err := postgres.Open(ctx, srv.URL(db))
	require.NoError(b, err)
	defer st.Close()
	conn, err := pgx.Connect(ctx, srv.URL("postgres"))
	require.NoError(b, err)
	defer conn.Close(ctx)
	var sizeBefore int64
	require.NoError(b, conn.QueryRow(ctx, "SELECT pg_database_size($1)", db).Scan(&sizeBefore))
	require.NoError(b, srv.ResetStatementStats(ctx))

	b.ResetTimer()
	runCtx, cancel := context.WithTimeout(ctx, span+10*time.Minute)
	defer cancel()
	rep, err := simulate.RunBench(runCtx, simulate.BenchOptions{Jobs: jobs, Policies: policies, Span: span,
		Store: st, DataDir: b.TempDir()}, nil)
	b.StopTimer()
	require.NoError(b, err)

	calls, err := srv.StatementCalls(ctx, db)
	require.NoError(b, err)
	var sizeAfter int64
	require.NoError(b, conn.QueryRow(ctx, "SELECT pg_database_size($1)", db).Scan(&sizeAfter))
	top, err := srv.TopStatements(ctx, db, 15)
	require.NoError(b, err)
	for _, line := range top {
		b.Log(line)
	}

	minutes := rep.ElapsedSeconds / 60
	b.Logf("%d policies, %d jobs over %s: served %d in %.0f s; wait p50 %.0f ms p95 %.0f ms p99 %.0f ms",
		policies, jobs, span, rep.Served, rep.ElapsedSeconds, rep.Wait.P50, rep.Wait.P95, rep.Wait.P99)
	b.ReportMetric(float64(calls)/minutes, "statements/min")
	b.ReportMetric(float64(calls)/float64(max(rep.Served, 1)), "statements/job")
	b.ReportMetric(float64(sizeAfter-sizeBefore)/float64(max(rep.Served, 1)), "db-bytes/job")
	b.ReportMetric(float64(sizeAfter)/(1<<20), "db-MiB")
	b.ReportMetric(rep.Daemon.CPUPercentOfOneCore, "process-%core")
	b.ReportMetric(rep.Daemon.ManagerCPUPercentOfOneCore, "manager-%core")
	b.ReportMetric(float64(rep.Daemon.PeakRSSBytes)/(1<<20), "peak-RSS-MiB")
}
