package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/store/storetest"
	"github.com/runner-manager/runner-manager/warm"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// warmSlots makes, with the pool the daemon uses, three slots in the
// env's data directory: octo/app#1 held by a live attempt of policy home
// (the journal names its slot), octo/app#2 and octo/web#1 free, each with
// a file of kib KiB in its work folder. It returns the live attempt.
func warmSlots(t *testing.T, e *env) rm.Attempt {
	t.Helper()
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "4")
	st := e.journal()
	home, err := st.PolicyByName(t.Context(), "home")
	require.NoError(t, err)
	pool := warm.NewPool(datadir.New(e.dataDir))
	lease := func(repo string, a rm.AttemptID, kib int) rm.WarmSlot {
		s, err := pool.Lease(rm.DefaultBackend, repo, a)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "data"), make([]byte, kib<<10), 0o600))
		return s
	}
	// A first run of octo/app, then a second (a hit), left held.
	first := rm.NewAttemptID()
	lease("octo/app", first, 64)
	require.NoError(t, pool.Release(first, false))
	live := storetest.NewAttempt().Policy(home.ID).Host(home.Host).State(rm.StateBusy).Build()
	held := lease("octo/app", live.ID, 64)
	live.Slot = held.String()
	require.NoError(t, st.RecordAttempt(t.Context(), live))
	for _, s := range []struct {
		repo string
		kib  int
	}{{"octo/app", 128}, {"octo/web", 256}} {
		a := rm.NewAttemptID()
		lease(s.repo, a, s.kib)
		require.NoError(t, pool.Release(a, false))
	}
	return live
}

func TestWarmList(t *testing.T) {
	e := newEnv(t)
	live := warmSlots(t, e)

	out := e.ok("warm", "list")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 5, out)
	assert.Contains(t, lines[0], "HELD BY")
	row := func(slot string) string {
		for _, l := range lines {
			if strings.HasPrefix(l, slot+" ") {
				return l
			}
		}
		t.Fatalf("no row for %s in\n%s", slot, out)
		return ""
	}
	assert.Contains(t, row("octo/app#1"), live.ID.String(), "the journal's live attempt holds its slot")
	assert.Regexp(t, `native\s+\S+\s+2\s+1\s`, row("octo/app#1"), "two uses, one hit")
	assert.Regexp(t, `\s-$`, row("octo/web#1"), "a free slot")
	assert.Contains(t, lines[4], "3 slot(s)")
	assert.Contains(t, lines[4], "of the 20GiB cap")

	var got []map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("warm", "list", "--json")), &got))
	require.Len(t, got, 3)
	bySlot := map[string]map[string]any{}
	for _, s := range got {
		bySlot[s["slot"].(string)] = s
	}
	assert.Equal(t, live.ID.String(), bySlot["octo/app#1"]["held_by"])
	assert.Nil(t, bySlot["octo/web#1"]["held_by"])
	assert.Equal(t, false, bySlot["octo/web#1"]["left_open"])
	assert.Greater(t, bySlot["octo/web#1"]["bytes"].(float64), float64(256<<10-1), "its size as measured when its attempt ended")
	checkSchema(t, docSchemas(t)["warm"], e.ok("warm", "list", "--json"), true)
}

func TestWarmListEmpty(t *testing.T) {
	e := newEnv(t)
	assert.Contains(t, e.ok("warm", "list"), "no workspace slots (cap 20GiB)")
	assert.Equal(t, "[]\n", e.ok("warm", "list", "--json"))
}

func TestWarmRmAndPrune(t *testing.T) {
	e := newEnv(t)
	warmSlots(t, e)
	slots := filepath.Join(e.dataDir, "slots", "native", "octo")

	out := e.ok("warm", "rm", "octo/app")
	assert.Contains(t, out, "evicted octo/app#2")
	assert.Contains(t, out, "1 slot(s) left: held by live attempts")
	assert.DirExists(t, filepath.Join(slots, "app", "1"), "a held slot is never removed")
	assert.NoDirExists(t, filepath.Join(slots, "app", "2"))
	assert.DirExists(t, filepath.Join(slots, "web", "1"), "another repository's slots stay")

	out = e.ok("warm", "prune", "--to", "0")
	assert.Contains(t, out, "evicted octo/web#1")
	assert.Contains(t, out, "the rest are held by live attempts")
	assert.NoDirExists(t, filepath.Join(slots, "web", "1"))
	assert.DirExists(t, filepath.Join(slots, "app", "1"))

	out = e.ok("warm", "prune")
	assert.Contains(t, out, "no slot evicted", "within the cap")
	assert.Contains(t, e.ok("warm", "rm", "--all"), "1 slot(s) left")
	assert.Contains(t, e.ok("warm", "rm", "octo/other"), "octo/other has no workspace slots")
}

// A daemon holds the data directory's lock: the commands that evict
// refuse, and say what to do; nothing is removed.
func TestWarmEvictRefusedWhileADaemonRuns(t *testing.T) {
	e := newEnv(t)
	warmSlots(t, e)
	lock, err := datadir.New(e.dataDir).Lock()
	require.NoError(t, err)
	defer lock.Close()
	for _, args := range [][]string{{"warm", "prune", "--to", "0"}, {"warm", "rm", "--all"}, {"warm", "rm", "octo/web"}} {
		stderr := e.fails(1, args...)
		assert.Contains(t, stderr, "a daemon (pid ", args)
		assert.Contains(t, stderr, "stop it", args)
	}
	assert.DirExists(t, filepath.Join(e.dataDir, "slots", "native", "octo", "web", "1"))
	assert.Contains(t, e.ok("warm", "list"), "octo/web#1", "listing needs no lock")
}

func TestWarmRmBadInput(t *testing.T) {
	e := newEnv(t)
	assert.Contains(t, e.fails(2, "warm", "rm"), "or --all")
	assert.Contains(t, e.fails(2, "warm", "rm", "octo/app", "--all"), "not both")
	e.fails(app.ExitInvalid, "warm", "rm", "not-a-repo")
}

// status shows the slots from the journal and the slots' files when no
// daemon runs: their size against the cap, per repository.
func TestStatusShowsWarmSlots(t *testing.T) {
	e := newEnv(t)
	warmSlots(t, e)
	out := e.ok("status")
	assert.Contains(t, out, "warm:     3 slot(s), ")
	assert.Regexp(t, `octo/app \(native\): 2 slot\(s\), 1 held, \S+, 1 hit\(s\) of 3 use\(s\), last `, out)
	assert.Regexp(t, `octo/web \(native\): 1 slot\(s\), \S+, 0 hit\(s\) of 1 use\(s\)`, out)

	var got struct {
		Warm struct {
			Cap   int64 `json:"cap_bytes"`
			Slots int   `json:"slots"`
			Repos []struct {
				Repo string `json:"repo"`
				Held int    `json:"held"`
				Uses int    `json:"uses"`
				Hits int    `json:"hits"`
			} `json:"repos"`
		} `json:"warm"`
	}
	require.NoError(t, json.Unmarshal([]byte(e.ok("status", "--json")), &got))
	assert.Equal(t, int64(20<<30), got.Warm.Cap)
	assert.Equal(t, 3, got.Warm.Slots)
	require.Len(t, got.Warm.Repos, 2)
	assert.Equal(t, "octo/web", got.Warm.Repos[0].Repo, "most recently used first")
	assert.Equal(t, 1, got.Warm.Repos[1].Held)
	assert.Equal(t, 3, got.Warm.Repos[1].Uses)
	assert.Equal(t, 1, got.Warm.Repos[1].Hits)
}
