package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return sqlitetest.MustOpen(t) })
}

func TestSQLiteInMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := sqlite.OpenInMemory()
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, s.Close()) })
		return s
	})
}

func pragma(t *testing.T, db *sql.DB, name string) string {
	t.Helper()
	var v string
	require.NoError(t, db.QueryRow("PRAGMA "+name).Scan(&v))
	return v
}

func TestOpenSettings(t *testing.T) {
	s := sqlitetest.MustOpen(t)
	w, r := sqlite.WriterDB(s), sqlite.ReaderDB(s)
	tests := []struct {
		db        *sql.DB
		pragma    string
		want      string
		whichPool string
	}{
		{w, "journal_mode", "wal", "writer"},
		{w, "foreign_keys", "1", "writer"},
		{w, "busy_timeout", "5000", "writer"},
		{w, "synchronous", "1", "writer"}, // NORMAL
		{w, "user_version", fmt.Sprint(sqlite.SchemaVersion()), "writer"},
		{r, "journal_mode", "wal", "reader"},
		{r, "query_only", "1", "reader"},
		{r, "busy_timeout", "5000", "reader"},
	}
	for _, tt := range tests {
		t.Run(tt.whichPool+"/"+tt.pragma, func(t *testing.T) {
			assert.Equal(t, tt.want, pragma(t, tt.db, tt.pragma))
		})
	}
	assert.Equal(t, 1, w.Stats().MaxOpenConnections, "one writer connection")

	t.Run("ReaderRefusesWrites", func(t *testing.T) {
		_, err := r.Exec(`DELETE FROM hosts`)
		require.Error(t, err)
	})
}

func TestOpenCreatesPrivateFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix file modes")
	}
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	// A write makes sure the WAL exists.
	require.NoError(t, s.PutHost(t.Context(), storetest.NewHost().Build()))
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		fi, err := os.Stat(f)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm(), f)
	}
	assert.Equal(t, path, s.Path())
}

func TestOpenErrors(t *testing.T) {
	t.Run("NoDir", func(t *testing.T) {
		_, err := sqlite.Open(filepath.Join(t.TempDir(), "missing", "journal.db"))
		require.ErrorContains(t, err, "does its directory exist")
	})
	t.Run("NotADatabase", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		require.NoError(t, os.WriteFile(path, []byte(strings.Repeat("not sqlite ", 100)), 0o600))
		_, err := sqlite.Open(path)
		require.ErrorContains(t, err, path)
	})
	t.Run("NewerSchema", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		s, err := sqlite.Open(path)
		require.NoError(t, err)
		_, err = sqlite.WriterDB(s).Exec(fmt.Sprintf("PRAGMA user_version = %d", sqlite.SchemaVersion()+1))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		_, err = sqlite.Open(path)
		require.ErrorContains(t, err, "upgrade runner-manager")
	})
}

func TestReopenKeepsEverything(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	h := storetest.NewHost().Build()
	p := storetest.NewPolicy().Repository("acme/repo").Host(h.ID).Autoscale("home", 2).Active().Build()
	a := storetest.NewAttempt().Policy(p.ID).State(rm.StateBusy).GitHubRunnerID(1).ProcessID(42).Build()
	require.NoError(t, s.PutHost(ctx, h))
	require.NoError(t, s.InsertPolicy(ctx, p))
	require.NoError(t, s.RecordAttempt(ctx, a))
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "closing twice is harmless")

	s, err = sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	assert.Equal(t, fmt.Sprint(sqlite.SchemaVersion()), pragma(t, sqlite.WriterDB(s), "user_version"))
	got, err := s.Attempt(ctx, a.ID)
	require.NoError(t, err)
	assert.True(t, got.BusyAt.Equal(a.BusyAt))
	assert.Equal(t, a.ID, got.ID)
	act, err := s.ActiveAttempts(ctx, p.ID)
	require.NoError(t, err)
	assert.Len(t, act, 1)
}

// Two processes (here: two opens) creating one journal at once apply the
// migrations once: the version is read and stamped inside one immediate
// transaction.
func TestConcurrentOpenMigratesOnce(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			s, err := sqlite.Open(path)
			if err == nil {
				err = s.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for _, err := range errs {
		require.NoError(t, err)
	}
}

func TestInMemoryRemovedOnClose(t *testing.T) {
	s, err := sqlite.OpenInMemory()
	require.NoError(t, err)
	require.NoError(t, s.PutHost(t.Context(), storetest.NewHost().Build()))
	dir := filepath.Dir(s.Path())
	require.DirExists(t, dir)
	require.NoError(t, s.Close())
	assert.NoDirExists(t, dir)
}

func TestClockStampsPolicies(t *testing.T) {
	ctx := t.Context()
	s := sqlitetest.MustOpen(t)
	at := time.Date(2030, 1, 2, 3, 4, 5, 6, time.UTC)
	s.Now = func() time.Time { return at }
	p := storetest.NewPolicy().CreatedAt(time.Time{}).Build()
	require.NoError(t, s.InsertPolicy(ctx, p))
	got, err := s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, at, got.CreatedAt)
	assert.Equal(t, at, got.UpdatedAt)

	s.Now = func() time.Time { return at.Add(time.Hour) }
	require.NoError(t, s.UpdatePolicy(ctx, got))
	got, err = s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, at, got.CreatedAt)
	assert.Equal(t, at.Add(time.Hour), got.UpdatedAt)
}

func TestIntegrityCheck(t *testing.T) {
	s := sqlitetest.MustOpen(t)
	require.NoError(t, s.IntegrityCheck(t.Context()))
}

// queryPlan returns SQLite's plan for q, one step a line.
func queryPlan(t *testing.T, db *sql.DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.Query("EXPLAIN QUERY PLAN "+q, args...)
	require.NoError(t, err)
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &notused, &detail))
		lines = append(lines, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(lines, "\n")
}

func TestQueryPlans(t *testing.T) {
	s := sqlitetest.MustOpen(t)
	seed(t, s, 3, 200, 2)
	require.NoError(t, s.Close()) // PRAGMA optimize: plans with statistics too
	s2, err := sqlite.Open(s.Path())
	require.NoError(t, err)
	defer s2.Close()
	pid := rm.NewPolicyID()
	since := time.Now()
	r := sqlite.ReaderDB(s2)
	tests := []struct {
		name      string
		q         string
		args      []any
		wantIndex string
	}{
		{"Active", sqlite.ActiveAttemptsQuery, []any{pid}, "attempts_live (policy_id=?)"},
		{"ByPolicy", q(store.AttemptFilter{Policy: pid, Limit: 20}), []any{pid, 20}, "attempts_policy_created (policy_id=?)"},
		{"Newest", q(store.AttemptFilter{Limit: 50}), []any{50}, "attempts_created"},
		{"Since", q(store.AttemptFilter{Since: since}), []any{since.UnixNano()}, "attempts_created (created_at>?)"},
	}
	t.Run("Live", func(t *testing.T) {
		// A host's live attempts: its policies by their host index, each
		// one's live attempts by the partial index; only those are sorted.
		plan := queryPlan(t, r, sqlite.LiveAttemptsQuery, rm.NewHostID())
		t.Log(plan)
		assert.Contains(t, plan, "USING INDEX attempts_live (policy_id=?)")
		assert.Contains(t, plan, "policies_host (host_id=?)")
		assert.NotContains(t, plan, "SCAN attempts", "live attempts are searched, never scanned")
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan := queryPlan(t, r, tt.q, tt.args...)
			t.Log(plan)
			assert.Contains(t, plan, "USING INDEX "+tt.wantIndex)
			assert.NotContains(t, plan, "TEMP B-TREE", "the index gives the order")
			if tt.name == "Active" {
				assert.NotContains(t, plan, "SCAN", "live attempts are searched, never scanned")
			}
		})
	}
}

func q(f store.AttemptFilter) string { s, _ := sqlite.AttemptsQuery(f); return s }

// seed fills s with policies, each with ended attempts of history and live
// ones, and returns the policies.
func seed(tb testing.TB, s *sqlite.Store, policies, ended, live int) []rm.Policy {
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

func TestSQLiteFleetConformance(t *testing.T) {
	storetest.RunFleet(t, func(t *testing.T) store.Fleet { return sqlitetest.MustOpen(t) })
}
