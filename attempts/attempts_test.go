package attempts_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/attempts"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestQueryFilter(t *testing.T) {
	ctx := t.Context()
	st := sqlitetest.MustOpen(t)
	home := storetest.NewPolicy().Name("home").Build()
	require.NoError(t, st.InsertPolicy(ctx, home))
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

	f, err := attempts.Query{Policy: "home", States: []string{"live", " failed"}, Since: "7d", Limit: 3}.Filter(ctx, st, now)
	require.NoError(t, err)
	assert.Equal(t, store.AttemptFilter{
		Policy: home.ID, Limit: 3, Since: now.Add(-7 * 24 * time.Hour),
		States: []rm.AttemptState{rm.StatePending, rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy, rm.StateFailed},
	}, f)

	for name, q := range map[string]attempts.Query{
		"State":  {States: []string{"sleeping"}},
		"Since":  {Since: "yesterday"},
		"Limit":  {Limit: -1},
		"Policy": {Policy: "nope"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := q.Filter(ctx, st, now)
			require.ErrorIs(t, err, rm.ErrInvalid)
		})
	}
}

func TestParseSince(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"90m":                  now.Add(-90 * time.Minute),
		"2d":                   now.Add(-48 * time.Hour),
		"0d":                   now,
		"2025-03-01T15:04:05Z": time.Date(2025, 3, 1, 15, 4, 5, 0, time.UTC),
		"2025-03-01":           time.Date(2025, 3, 1, 0, 0, 0, 0, time.Local),
	} {
		got, err := attempts.ParseSince(in, now)
		require.NoError(t, err, in)
		assert.True(t, want.Equal(got), "%s: got %s, want %s", in, got, want)
	}
	for _, in := range []string{"-5m", "1.5d", "d", "soon"} {
		_, err := attempts.ParseSince(in, now)
		assert.ErrorIs(t, err, rm.ErrInvalid, in)
	}
	// A signed duration is refused with the form that works, and that form
	// does work.
	for in, hint := range map[string]string{"-5h": "5h", "-7d": "7d", "-90m": "90m"} {
		_, err := attempts.ParseSince(in, now)
		require.ErrorIs(t, err, rm.ErrInvalid, in)
		assert.Contains(t, err.Error(), "without a sign (--since "+hint+")")
		_, err = attempts.ParseSince(hint, now)
		assert.NoError(t, err, hint)
	}
}

// journal holds a policy with a busy and a finished attempt.
func journal(t *testing.T) (*sqlite.Store, rm.Attempt, rm.Attempt) {
	t.Helper()
	st := sqlitetest.MustOpen(t)
	p := storetest.NewPolicy().Name("home").Build()
	require.NoError(t, st.InsertPolicy(t.Context(), p))
	busy := storetest.NewAttempt().Policy(p.ID).Host(p.Host).State(rm.StateBusy).Build()
	done := storetest.NewAttempt().Policy(p.ID).Host(p.Host).State(rm.StateFinished).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), busy))
	require.NoError(t, st.RecordAttempt(t.Context(), done))
	return st, busy, done
}

func TestFind(t *testing.T) {
	st, busy, _ := journal(t)
	got, err := attempts.Find(t.Context(), st, busy.ID.String())
	require.NoError(t, err)
	assert.Equal(t, busy.ID, got.ID)
	_, err = attempts.Find(t.Context(), st, rm.NewAttemptID().String())
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "no attempt")
	_, err = attempts.Find(t.Context(), st, "zzz")
	require.Error(t, err)
	names, err := attempts.PolicyNames(t.Context(), st)
	require.NoError(t, err)
	assert.Equal(t, "home", names[busy.Policy])
}

// An attempt is found by a unique prefix of its id; an ambiguous prefix
// is refused naming the candidates.
func TestFindPrefix(t *testing.T) {
	st, busy, done := journal(t)
	mk := func(s string) rm.AttemptID {
		id, err := rm.ParseAttemptID(s)
		require.NoError(t, err)
		return id
	}
	a1 := storetest.NewAttempt().ID(mk("czjk000000000000000000000g")).Policy(busy.Policy).State(rm.StateFinished).Build()
	a2 := storetest.NewAttempt().ID(mk("czjm000000000000000000000g")).Policy(busy.Policy).State(rm.StateFinished).Build()
	require.NoError(t, st.RecordAttempt(t.Context(), a1))
	require.NoError(t, st.RecordAttempt(t.Context(), a2))

	got, err := attempts.Find(t.Context(), st, "CZJK")
	require.NoError(t, err)
	assert.Equal(t, a1.ID, got.ID)
	_, err = attempts.Find(t.Context(), st, "czj")
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), `2 attempts' ids start with "czj": `)
	assert.Contains(t, err.Error(), a1.ID.String())
	assert.Contains(t, err.Error(), a2.ID.String())
	_, err = attempts.Find(t.Context(), st, "czjz")
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), `no attempt id starts with "czjz"`)
	got, err = attempts.Find(t.Context(), st, done.ID.String()[:20])
	require.NoError(t, err)
	assert.Equal(t, done.ID, got.ID)
}

// syncBuffer is a bytes.Buffer safe to read while CopyLog writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestCopyLog(t *testing.T) {
	ctx := t.Context()
	st, busy, done := journal(t)
	data := t.TempDir()
	path := attempts.LogPath(data, busy.ID)
	assert.Equal(t, filepath.Join(data, "attempts", busy.ID.String(), "runner.log"), path)

	var out bytes.Buffer
	err := attempts.CopyLog(ctx, st, data, busy, &out, attempts.LogOptions{})
	require.ErrorContains(t, err, "no log yet")
	err = attempts.CopyLog(ctx, st, data, done, &out, attempts.LogOptions{})
	require.ErrorContains(t, err, "gone")

	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte("a\nb\nc\n"), 0o600))
	require.NoError(t, attempts.CopyLog(ctx, st, data, busy, &out, attempts.LogOptions{Lines: 2}))
	assert.Equal(t, "b\nc\n", out.String())

	t.Run("Follow", func(t *testing.T) {
		var out syncBuffer
		ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		errc := make(chan error, 1)
		go func() {
			errc <- attempts.CopyLog(ctx, st, data, busy, &out, attempts.LogOptions{Lines: 1, Follow: true, Every: 5 * time.Millisecond})
		}()
		require.Eventually(t, func() bool { return out.String() == "c\n" }, 5*time.Second, 5*time.Millisecond)
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString("d\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		require.Eventually(t, func() bool { return strings.HasSuffix(out.String(), "d\n") }, 5*time.Second, 5*time.Millisecond)
		ended, err := busy.Conclude(rm.Outcome{Kind: rm.CompletedJob}, storetest.Now())
		require.NoError(t, err)
		require.NoError(t, st.RecordAttempt(ctx, ended))
		require.NoError(t, <-errc, "the follow ends with the attempt")
		assert.Equal(t, "c\nd\n", out.String())
	})
}

func TestTailLog(t *testing.T) {
	data := t.TempDir()
	id := rm.NewAttemptID()
	lines, err := attempts.TailLog(data, id, 5)
	require.NoError(t, err, "no log yet is no error")
	assert.Empty(t, lines)
	_, err = attempts.TailLog(data, rm.AttemptID{}, 5)
	require.Error(t, err)

	path := attempts.LogPath(data, id)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o700))
	require.NoError(t, os.WriteFile(path, []byte("a\nb\nc\n"), 0o600))
	lines, err = attempts.TailLog(data, id, 2)
	require.NoError(t, err)
	assert.Equal(t, []string{"b", "c"}, lines)
}

// An ended attempt's log is read where the launcher kept it; a follow
// that began before the runner wrote anything ends with the attempt and
// prints the kept log.
func TestCopyLogKept(t *testing.T) {
	ctx := t.Context()
	st, busy, done := journal(t)
	data := t.TempDir()
	kept := filepath.Join(datadir.New(data).KeptLog(done.ID), "runner.log")
	require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o700))
	require.NoError(t, os.WriteFile(kept, []byte("Listening for Jobs\nJob done\n"), 0o600))
	assert.Equal(t, kept, attempts.LogPath(data, done.ID))
	var out bytes.Buffer
	require.NoError(t, attempts.CopyLog(ctx, st, data, done, &out, attempts.LogOptions{}))
	assert.Equal(t, "Listening for Jobs\nJob done\n", out.String())

	t.Run("FollowEndsWithTheAttempt", func(t *testing.T) {
		var out syncBuffer
		errc := make(chan error, 1)
		go func() {
			errc <- attempts.CopyLog(ctx, st, data, busy, &out, attempts.LogOptions{Follow: true, Every: 5 * time.Millisecond})
		}()
		kept := filepath.Join(datadir.New(data).KeptLog(busy.ID), "runner.log")
		require.NoError(t, os.MkdirAll(filepath.Dir(kept), 0o700))
		require.NoError(t, os.WriteFile(kept, []byte("all of it\n"), 0o600))
		ended, err := busy.Conclude(rm.Outcome{Kind: rm.CompletedJob}, storetest.Now())
		require.NoError(t, err)
		require.NoError(t, st.RecordAttempt(ctx, ended))
		select {
		case err := <-errc:
			require.NoError(t, err)
		case <-time.After(20 * time.Second):
			t.Fatal("the follow did not end with the attempt")
		}
		assert.Equal(t, "all of it\n", out.String())
	})
}
