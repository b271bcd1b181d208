package sqlite_test

import (
	"bytes"
	"database/sql"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// walWithData makes a journal with a policy and returns the bytes of its
// -wal file while the writer holds them (before the checkpoint at Close).
func walWithData(t *testing.T) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	h := storetest.NewHost().Build()
	require.NoError(t, s.PutHost(t.Context(), h))
	require.NoError(t, s.InsertPolicy(t.Context(), storetest.NewPolicy().Host(h.ID).Build()))
	wal, err := os.ReadFile(path + "-wal")
	require.NoError(t, err)
	require.NotEmpty(t, wal)
	return wal
}

func TestOpenEmptyJournal(t *testing.T) {
	t.Run("FreshWithAWarning", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		var logs bytes.Buffer
		s, err := sqlite.Open(path, sqlite.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		require.NoError(t, err)
		defer s.Close()
		assert.Contains(t, logs.String(), "level=WARN")
		assert.Contains(t, logs.String(), "the journal file is empty")
		ps, err := s.Policies(t.Context())
		require.NoError(t, err)
		assert.Empty(t, ps)
	})
	t.Run("NewFileIsQuiet", func(t *testing.T) {
		var logs bytes.Buffer
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "journal.db"), sqlite.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		require.NoError(t, err)
		defer s.Close()
		assert.Empty(t, logs.String(), "a journal that did not exist is simply new")
	})
	t.Run("RefusedWhenTheWALHasData", func(t *testing.T) {
		wal := walWithData(t)
		path := filepath.Join(t.TempDir(), "journal.db")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		require.NoError(t, os.WriteFile(path+"-wal", wal, 0o600))
		var logs bytes.Buffer
		_, err := sqlite.Open(path, sqlite.WithLogger(slog.New(slog.NewTextHandler(&logs, nil))))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the file is empty but journal.db-wal holds")
		assert.Contains(t, err.Error(), "nothing was written")
		fi, err := os.Stat(path)
		require.NoError(t, err)
		assert.Zero(t, fi.Size(), "the journal file is left as it was")
		got, err := os.ReadFile(path + "-wal")
		require.NoError(t, err)
		assert.Equal(t, wal, got, "the WAL is left as it was")
		_, err = os.Stat(path + "-shm")
		assert.ErrorIs(t, err, os.ErrNotExist, "SQLite never opened it")
	})
	t.Run("AnEmptyWALIsNoData", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "journal.db")
		require.NoError(t, os.WriteFile(path, nil, 0o600))
		require.NoError(t, os.WriteFile(path+"-wal", nil, 0o600))
		s, err := sqlite.Open(path)
		require.NoError(t, err)
		require.NoError(t, s.Close())
	})
}

// atVersion makes a journal file stamped with version v, holding the
// schema of migration 0001 plus extra.
func atVersion(t *testing.T, v int, extra string) string {
	t.Helper()
	init, err := os.ReadFile(filepath.Join("migrations", "0001_init.sql"))
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "journal.db")
	db, err := sql.Open("sqlite3", "file:"+path+"?_journal_mode=WAL")
	require.NoError(t, err)
	defer db.Close()
	_, err = db.Exec(string(init) + extra + fmt.Sprintf("; PRAGMA user_version = %d", v))
	require.NoError(t, err)
	return path
}

func TestMigrateTheHostLease(t *testing.T) {
	for _, tt := range []struct {
		name    string
		version int
		extra   string
	}{
		{"OnTopOf1", 1, ""},
		// The step numbered 2 comes from elsewhere; a journal it made
		// takes this one on top.
		{"OnTopOf2", 2, "; CREATE TABLE step_two (id INTEGER PRIMARY KEY)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := atVersion(t, tt.version, tt.extra)
			s, err := sqlite.Open(path)
			require.NoError(t, err)
			defer s.Close()
			assert.Equal(t, fmt.Sprint(sqlite.SchemaVersion()), pragma(t, sqlite.WriterDB(s), "user_version"))
			assert.GreaterOrEqual(t, sqlite.SchemaVersion(), 3)
			host := rm.NewHostID()
			now := time.Now()
			_, err = s.AcquireHostLease(t.Context(), store.HostLease{Host: host, Holder: "x", PID: 1, RenewedAt: now, ExpiresAt: now.Add(time.Minute)}, "")
			require.NoError(t, err, "the lease table is there")
		})
	}
}

// A policy written before the spare column keeps one warm spare, the front
// ends' default.
func TestMigratePolicySpare(t *testing.T) {
	host, pol := rm.NewHostID(), rm.NewPolicyID()
	extra := fmt.Sprintf(`; INSERT INTO hosts (id, name) VALUES ('%s', 'h');
		INSERT INTO policies (id, name, host_id, scope_kind, scope_name, runner_group, scale_set, max_runners, created_at, updated_at)
		VALUES ('%s', 'old', '%s', 'repo', 'acme/app', 'Default', 'old', 2, 1, 1)`, host, pol, host)
	path := atVersion(t, 1, extra)
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	p, err := s.Policy(t.Context(), pol)
	require.NoError(t, err)
	assert.Equal(t, 1, p.Spare, "one spare, the default of the time; sized by the day is for policies made since")
	p.Spare = 0
	require.NoError(t, s.UpdatePolicy(t.Context(), p))
	got, err := s.Policy(t.Context(), pol)
	require.NoError(t, err)
	assert.Zero(t, got.Spare, "0 (no spares) is kept")
}

// A journal of schema 7 (before removed policies were kept) takes 0008
// with its policies in force, and removes them keeping their history.
func TestMigratePolicyRemoved(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	p := storetest.NewPolicy().Name("home").Build()
	require.NoError(t, s.InsertPolicy(t.Context(), p))
	a := storetest.NewAttempt().Policy(p.ID).State(rm.StateFinished).Build()
	require.NoError(t, s.RecordAttempt(t.Context(), a))
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec(`ALTER TABLE policies DROP COLUMN removed_at; ALTER TABLE policies DROP COLUMN removed_name;
		ALTER TABLE attempts DROP COLUMN job_key; ALTER TABLE policies DROP COLUMN vm_image;
		ALTER TABLE attempts DROP COLUMN job_queued_at; ALTER TABLE attempts DROP COLUMN job_assigned_at;
		ALTER TABLE policies DROP COLUMN spare_auto; ALTER TABLE policies DROP COLUMN fleet;
		ALTER TABLE policies DROP COLUMN vm_forward; ALTER TABLE policies DROP COLUMN cold; ALTER TABLE policies DROP COLUMN monitor;
		ALTER TABLE attempts DROP COLUMN slot; PRAGMA user_version = 7`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err = sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.PolicyByName(t.Context(), "home")
	require.NoError(t, err, "in force after the migration")
	assert.True(t, got.RemovedAt.IsZero())
	require.NoError(t, s.DeletePolicy(t.Context(), p.ID))
	_, err = s.Attempt(t.Context(), a.ID)
	require.NoError(t, err, "its history is kept")
	got, err = s.Policy(t.Context(), p.ID)
	require.NoError(t, err)
	assert.Equal(t, "home", got.Name)
}

// A journal opened read-only reads as any other and refuses every write
// with ErrReadOnly (or SQLite's own refusal, for the writes outside a
// transaction), creating nothing; one of an older schema is refused.
func TestOpenReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	_, err := sqlite.Open(path, sqlite.ReadOnly())
	require.ErrorIs(t, err, os.ErrNotExist, "nothing is created")
	_, err = os.Stat(path)
	require.ErrorIs(t, err, os.ErrNotExist)

	w, err := sqlite.Open(path)
	require.NoError(t, err)
	h := storetest.NewHost().Build()
	require.NoError(t, w.PutHost(t.Context(), h))
	p := storetest.NewPolicy().Host(h.ID).Name("home").Build()
	require.NoError(t, w.InsertPolicy(t.Context(), p))
	require.NoError(t, w.Close())

	r, err := sqlite.Open(path, sqlite.ReadOnly())
	require.NoError(t, err)
	defer r.Close()
	assert.True(t, r.ReadOnly())
	got, err := r.PolicyByName(t.Context(), "home")
	require.NoError(t, err)
	assert.Equal(t, p.ID, got.ID)
	require.ErrorIs(t, r.InsertPolicy(t.Context(), storetest.NewPolicy().Build()), sqlite.ErrReadOnly)
	require.ErrorIs(t, r.DeletePolicy(t.Context(), p.ID), sqlite.ErrReadOnly)
	require.ErrorIs(t, r.RecordAttempt(t.Context(), storetest.NewAttempt().Policy(p.ID).Build()), sqlite.ErrReadOnly)
	require.Error(t, r.PutHost(t.Context(), h), "a write outside a transaction fails too")
	got, err = r.PolicyByName(t.Context(), "home")
	require.NoError(t, err)
	assert.True(t, got.RemovedAt.IsZero(), "nothing was written")

	t.Run("OlderSchema", func(t *testing.T) {
		old := atVersion(t, 1, "")
		_, err := sqlite.Open(old, sqlite.ReadOnly())
		require.Error(t, err)
		assert.Contains(t, err.Error(), "older than this program's")
	})
}

// A journal of schema 8 held a job's REST number (or a scale-set jobId that
// read as a number) in job_id alone: 0009 names the job by that number in
// decimal, and a row with no job stays without one.
func TestMigrateJobKey(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	p := storetest.NewPolicy().Build()
	require.NoError(t, s.InsertPolicy(t.Context(), p))
	ran := storetest.NewAttempt().Policy(p.ID).State(rm.StateBusy).
		Job(rm.Job{ID: "9007199254740993", Number: 1<<53 + 1, RunID: 5, Name: "build"}).Build()
	idle := storetest.NewAttempt().Policy(p.ID).State(rm.StateIdle).Build()
	require.NoError(t, s.RecordAttempt(t.Context(), ran))
	require.NoError(t, s.RecordAttempt(t.Context(), idle))
	require.NoError(t, s.Close())
	db, err := sql.Open("sqlite3", "file:"+path)
	require.NoError(t, err)
	_, err = db.Exec(`ALTER TABLE attempts DROP COLUMN job_key; ALTER TABLE policies DROP COLUMN vm_image;
		ALTER TABLE attempts DROP COLUMN job_queued_at; ALTER TABLE attempts DROP COLUMN job_assigned_at;
		ALTER TABLE policies DROP COLUMN spare_auto; ALTER TABLE policies DROP COLUMN fleet;
		ALTER TABLE policies DROP COLUMN vm_forward; ALTER TABLE policies DROP COLUMN cold; ALTER TABLE policies DROP COLUMN monitor;
		ALTER TABLE attempts DROP COLUMN slot; PRAGMA user_version = 8`)
	require.NoError(t, err)
	require.NoError(t, db.Close())

	s, err = sqlite.Open(path)
	require.NoError(t, err)
	defer s.Close()
	got, err := s.Attempt(t.Context(), ran.ID)
	require.NoError(t, err)
	assert.Equal(t, ran.Job, got.Job, "the number names the job")
	got, err = s.Attempt(t.Context(), idle.ID)
	require.NoError(t, err)
	assert.False(t, got.Job.Known(), "no job: none named")
}
