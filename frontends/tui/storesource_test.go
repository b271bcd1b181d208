package tui_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// journal is a real SQLite journal with one host, an active policy "home"
// (min idle 1, max 4) with an idle, a busy and a finished attempt, and a
// paused classic policy "gpu".
type journal struct {
	store            *sqlite.Store
	host             rm.Host
	home, gpu        rm.Policy
	idle, busy, done rm.Attempt
}

func newJournal(t *testing.T) journal {
	t.Helper()
	ctx := context.Background()
	j := journal{store: sqlitetest.MustOpen(t)}
	j.host = storetest.NewHost().Name("build-01").Build()
	require.NoError(t, j.store.PutHost(ctx, j.host))
	j.home = storetest.NewPolicy().Name("home").Repository("octo/app").Host(j.host.ID).Autoscale("home", 4).MinIdle(1).Build()
	j.gpu = storetest.NewPolicy().Name("gpu").Org("acme").Labels("gpu", "linux").Host(j.host.ID).Max(2).Paused().Build()
	require.NoError(t, j.store.InsertPolicy(ctx, j.home))
	require.NoError(t, j.store.InsertPolicy(ctx, j.gpu))
	now := storetest.Now()
	j.done = storetest.NewAttempt().Policy(j.home.ID).Host(j.host.ID).State(rm.StateFinished).ExitCode(0).
		Job(rm.Job{ID: "1", Number: 1, Workflow: "ci", Name: "lint"}).CreatedAt(now.Add(-time.Hour)).Build()
	j.busy = storetest.NewAttempt().Policy(j.home.ID).Host(j.host.ID).State(rm.StateBusy).
		Job(rm.Job{ID: "2", Number: 2, Workflow: "ci", Name: "build"}).CreatedAt(now.Add(-time.Minute)).Build()
	j.idle = storetest.NewAttempt().Policy(j.home.ID).Host(j.host.ID).State(rm.StateIdle).CreatedAt(now.Add(-time.Second)).Build()
	for _, a := range []rm.Attempt{j.done, j.busy, j.idle} {
		require.NoError(t, j.store.RecordAttempt(ctx, a))
	}
	return j
}

func (j journal) source(t *testing.T) *tui.StoreSource {
	return &tui.StoreSource{Store: j.store, DataDir: t.TempDir()}
}

func TestStoreSourceStatus(t *testing.T) {
	ctx := context.Background()

	t.Run("JournalOnly", func(t *testing.T) {
		j := newJournal(t)
		st, err := j.source(t).Status(ctx)
		require.ErrorIs(t, err, tui.ErrPartial)
		assert.Contains(t, err.Error(), "no daemon connected")
		assert.Equal(t, "build-01", st.Host.Name)
		require.Len(t, st.Policies, 2)
		gpu, home := st.Policies[0], st.Policies[1]
		assert.Equal(t, "gpu", gpu.Name)
		assert.True(t, gpu.Paused)
		assert.Equal(t, "classic", gpu.Mode)
		assert.Equal(t, "org:acme group=Default labels=gpu,linux", gpu.Target)
		assert.Equal(t, 0, gpu.Live)
		assert.Equal(t, "home", home.Name)
		assert.Equal(t, "scale-set", home.Mode)
		assert.Equal(t, []int{2, 1, 1, 4, 1}, []int{home.Live, home.Idle, home.Busy, home.Max, home.MinIdle})
		var ids []rm.AttemptID
		for _, a := range st.Attempts {
			ids = append(ids, a.ID)
		}
		assert.ElementsMatch(t, []rm.AttemptID{j.idle.ID, j.busy.ID}, ids, "only live attempts")
	})

	t.Run("LiveMergedWithJournal", func(t *testing.T) {
		j := newJournal(t)
		src := j.source(t)
		live := status.Status{
			At:     storetest.Now(),
			Memory: status.Memory{TotalBytes: 16 * gib},
			Policies: []status.Policy{
				// The daemon has not re-read the journal yet: max 3.
				{ID: j.home.ID, Name: "home", Live: 2, Busy: 1, Idle: 1, Max: 3, Demand: 5, Admitted: 3, LastRefusal: "memory"},
			},
		}
		src.Live = func(context.Context) (status.Status, error) { return live, nil }
		st, err := src.Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, uint64(16*gib), st.Memory.TotalBytes)
		require.Len(t, st.Policies, 2, "the paused policy the daemon runs no loop for shows too")
		home := st.Policies[0]
		assert.Equal(t, 4, home.Max, "the journal's setting")
		assert.Equal(t, 5, home.Demand, "the daemon's figure")
		assert.Equal(t, "memory", home.LastRefusal)
		assert.Equal(t, "gpu", st.Policies[1].Name)
		assert.True(t, st.Policies[1].Paused)
	})

	t.Run("DaemonDown", func(t *testing.T) {
		j := newJournal(t)
		src := j.source(t)
		src.Live = func(context.Context) (status.Status, error) {
			return status.Status{}, errors.New("the daemon is not running: start it with `runner-manager run`")
		}
		st, err := src.Status(ctx)
		require.ErrorIs(t, err, tui.ErrPartial)
		assert.Contains(t, err.Error(), "start it with")
		assert.Len(t, st.Policies, 2)
	})

	t.Run("JournalClosed", func(t *testing.T) {
		j := newJournal(t)
		s, err := sqlite.Open(filepath.Join(t.TempDir(), "journal.db"))
		require.NoError(t, err)
		require.NoError(t, s.Close())
		src := &tui.StoreSource{Store: s}
		_, err = src.Status(ctx)
		require.Error(t, err)
		assert.NotErrorIs(t, err, tui.ErrPartial)
		_ = j
	})
}

func TestStoreSourceEdits(t *testing.T) {
	ctx := context.Background()
	j := newJournal(t)
	src := j.source(t)
	changed := 0
	src.Changed = func(context.Context) error { changed++; return errors.New("the daemon is not running") }
	before := j.home.UpdatedAt

	require.NoError(t, src.SetPaused(ctx, j.home.ID, true))
	p, err := j.store.Policy(ctx, j.home.ID)
	require.NoError(t, err)
	assert.True(t, p.Paused)
	assert.False(t, p.UpdatedAt.Before(before), "the journal stamps the edit")
	assert.Equal(t, 1, changed, "the daemon is told; its error is not the user's")

	require.NoError(t, src.SetPaused(ctx, j.home.ID, true))
	assert.Equal(t, 1, changed, "nothing to write, nothing to tell")

	require.NoError(t, src.SetMax(ctx, j.home.ID, 7))
	p, err = j.store.Policy(ctx, j.home.ID)
	require.NoError(t, err)
	assert.Equal(t, 7, p.Max)
	assert.True(t, p.Paused, "the other settings stay")

	err = src.SetMax(ctx, j.home.ID, 0)
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "at least 1")
	p, err = j.store.Policy(ctx, j.home.ID)
	require.NoError(t, err)
	assert.Equal(t, 7, p.Max, "a refused max is not written")

	err = src.SetMax(ctx, rm.NewPolicyID(), 3)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func TestStoreSourceStop(t *testing.T) {
	ctx := context.Background()
	j := newJournal(t)
	src := j.source(t)
	err := src.StopAttempt(ctx, j.busy.ID)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runner-manager run")

	var stopped []rm.AttemptID
	src.Stop = func(_ context.Context, id rm.AttemptID) error { stopped = append(stopped, id); return nil }
	require.NoError(t, src.StopAttempt(ctx, j.busy.ID))
	assert.Equal(t, []rm.AttemptID{j.busy.ID}, stopped)
}

func TestStoreSourceAttempts(t *testing.T) {
	j := newJournal(t)
	as, err := j.source(t).Attempts(context.Background(), store.AttemptFilter{Limit: 2})
	require.NoError(t, err)
	require.Len(t, as, 2)
	assert.Equal(t, j.idle.ID, as[0].ID, "newest first")
	assert.Equal(t, j.busy.ID, as[1].ID)
}

func TestStoreSourceLogTail(t *testing.T) {
	ctx := context.Background()
	j := newJournal(t)
	src := j.source(t)

	lines, err := src.LogTail(ctx, j.busy.ID, 10)
	require.NoError(t, err, "no log yet is not an error")
	assert.Empty(t, lines)

	dir := filepath.Join(src.DataDir, "attempts", j.busy.ID.String())
	require.NoError(t, os.MkdirAll(dir, 0o700))
	var b strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&b, "line %d of the runner's log\n", i)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "runner.log"), []byte(b.String()), 0o600))
	lines, err = src.LogTail(ctx, j.busy.ID, 3)
	require.NoError(t, err)
	assert.Equal(t, []string{"line 4997 of the runner's log", "line 4998 of the runner's log", "line 4999 of the runner's log"}, lines)

	_, err = src.LogTail(ctx, rm.AttemptID{}, 3)
	require.Error(t, err)

	// A failed attempt's root is kept elsewhere by the launcher: its log
	// is still found there.
	require.NoError(t, native.NewLauncher(src.DataDir).Cleanup(j.busy.ID, true))
	_, err = os.Stat(filepath.Join(dir, "runner.log"))
	require.ErrorIs(t, err, os.ErrNotExist, "the root moved")
	lines, err = src.LogTail(ctx, j.busy.ID, 1)
	require.NoError(t, err)
	assert.Equal(t, []string{"line 4999 of the runner's log"}, lines)
}

// The source names the journal's policies, a removed one (kept for its
// attempts' history) included, as `runner-manager attempts` does.
func TestStoreSourcePolicies(t *testing.T) {
	ctx := context.Background()
	j := newJournal(t)
	require.NoError(t, j.store.DeletePolicy(ctx, j.gpu.ID))
	ps, err := j.source(t).Policies(ctx)
	require.NoError(t, err)
	require.Contains(t, ps, j.gpu.ID, "a removed policy")
	assert.Equal(t, "gpu", ps[j.gpu.ID].Name)
	assert.False(t, ps[j.gpu.ID].RemovedAt.IsZero())
	assert.True(t, ps[j.home.ID].RemovedAt.IsZero())
}

// With the daemon's figures, the runners GitHub lists are judged from the
// journal: this host's live attempt by name, and a stranger.
func TestStoreSourceJudgesRegistrations(t *testing.T) {
	j := newJournal(t)
	src := j.source(t)
	live := liveStatus(j)
	live.Registrations = []status.ScopeRunners{{Scope: "repo:octo/app", At: t0, Runners: []status.Registration{
		{ID: 7, Name: j.busy.RunnerName, Online: true, Busy: true},
		{ID: 8, Name: "someone-elses"},
	}}}
	src.Live = func(context.Context) (status.Status, error) { return live, nil }
	st, err := src.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Registrations, 1)
	rs := st.Registrations[0].Runners
	require.NotNil(t, rs[0].Owner)
	assert.Equal(t, status.OwnerThisHost, rs[0].Owner.Kind)
	assert.Equal(t, j.busy.ID, rs[0].Owner.Attempt)
	require.NotNil(t, rs[1].Owner)
	assert.Equal(t, status.OwnerUnknown, rs[1].Owner.Kind)
}
