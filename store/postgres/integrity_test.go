package postgres_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store/postgres"
	"github.com/runner-manager/runner-manager/store/postgres/pgtest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestIntegrityCheckFindsDamage: the check passes on a fresh journal and
// names what was broken by hand: a schema version that is not the
// program's, a missing table, an invalid index.
func TestIntegrityCheckFindsDamage(t *testing.T) {
	for name, tt := range map[string]struct {
		damage string
		want   string
	}{
		"OldSchema":    {`DELETE FROM runner_manager_schema WHERE version = (SELECT max(version) FROM runner_manager_schema)`, "schema version"},
		"MissingTable": {`DROP TABLE host_leases`, "table host_leases is missing"},
		"InvalidIndex": {`UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'attempts_live'::regclass`, "index attempts_live is invalid"},
	} {
		t.Run(name, func(t *testing.T) {
			u := pgtest.Start(t)
			s, err := open(t, u)
			require.NoError(t, err)
			require.NoError(t, s.IntegrityCheck(t.Context()))
			sql(t, u, tt.damage) // as the superuser: pg_index is the catalog's
			err = s.IntegrityCheck(t.Context())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.want)
			assert.NotContains(t, err.Error(), pgtest.Shared(t).Password())
		})
	}
}

// TestMigrateFromVersion2: a journal written before memory limits and
// usage sources gets both columns, with their defaults for old rows, and
// a limit of -1 written by hand reads back as rm.MemoryLimitFromPeaks.
func TestMigrateFromVersion2(t *testing.T) {
	u := pgtest.Start(t)
	s, err := open(t, u)
	require.NoError(t, err)
	h := storetest.NewHost().Build()
	require.NoError(t, s.PutHost(t.Context(), h))
	p := storetest.NewPolicy().Host(h.ID).MemoryLimit(1 << 30).Build()
	require.NoError(t, s.InsertPolicy(t.Context(), p))
	a := storetest.NewAttempt().Policy(p.ID).Usage(rm.AttemptUsage{Samples: 1, Source: rm.UsageFromCgroup}).Build()
	require.NoError(t, s.RecordAttempt(t.Context(), a))
	require.NoError(t, s.Close())
	sql(t, u, `DELETE FROM runner_manager_schema WHERE version > 2`)
	sql(t, u, `DROP INDEX policies_name_in_force`)
	sql(t, u, `ALTER TABLE policies DROP COLUMN removed_at, ADD CONSTRAINT policies_name_key UNIQUE (name)`)
	sql(t, u, `ALTER TABLE policies DROP COLUMN spare, DROP COLUMN container_image, DROP COLUMN container_cpus, `+
		`DROP COLUMN container_network, DROP COLUMN container_env, DROP COLUMN container_volumes, DROP COLUMN vm_image`)
	sql(t, u, `ALTER TABLE policies DROP COLUMN memory_limit`)
	sql(t, u, `ALTER TABLE attempts DROP COLUMN usage_source, DROP COLUMN job_key`)

	s, err = open(t, u)
	require.NoError(t, err)
	assert.Equal(t, postgres.SchemaVersion(), count(t, u, `SELECT max(version) FROM runner_manager_schema`))
	got, err := s.Policy(t.Context(), p.ID)
	require.NoError(t, err)
	assert.Zero(t, got.MemoryLimit, "an old policy has no limit")
	ga, err := s.Attempt(t.Context(), a.ID)
	require.NoError(t, err)
	assert.Empty(t, ga.Usage.Source, "an old attempt's usage source is unknown")

	sql(t, u, `UPDATE policies SET memory_limit = -1 WHERE id = $1`, p.ID.String())
	got, err = s.Policy(t.Context(), p.ID)
	require.NoError(t, err)
	assert.Equal(t, rm.MemoryLimitFromPeaks, got.MemoryLimit)
}
