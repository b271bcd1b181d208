package doctor_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/store/storetest"
	"github.com/runner-manager/runner-manager/warm"
)

// Slots over the cap, one a crash left open beside one a live attempt
// holds, and a home link that is not there: each is said, with what to do.
func TestWarmChecks(t *testing.T) {
	h := newHost(t)
	home := t.TempDir()
	t.Setenv("HOME", home)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n"), 0o600))
	pool := warm.NewPool(datadir.New(h.dir))
	lease := func(repo string) (rm.AttemptID, rm.WarmSlot) {
		a := rm.NewAttemptID()
		s, err := pool.Lease(rm.DefaultBackend, repo, a)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(s.Dir, "data"), make([]byte, 256<<10), 0o600))
		return a, s
	}
	a, _ := lease("octo/app")
	require.NoError(t, pool.Release(a, false))
	crashed, _ := lease("octo/web") // never released: the daemon was killed
	live := storetest.NewAttempt().Policy(h.policy.ID).Host(h.host.ID).State(rm.StateBusy).Build()
	_, held := lease("octo/app")
	live.Slot = held.String()
	require.NoError(t, h.st.RecordAttempt(t.Context(), live))

	s := h.setup()
	w := configfile.DefaultWarm()
	w.Cap = 64 << 10
	w.HomeLinks = []string{".rustup"}
	s.Config = &configfile.File{Warm: w}
	checks, err := doctor.Run(t.Context(), s)
	require.NoError(t, err)
	m := byName(checks)

	require.Len(t, m["warm-slots"], 1)
	assert.Equal(t, doctor.Warn, m["warm-slots"][0].Status)
	assert.Contains(t, m["warm-slots"][0].Detail, "workspace slots: 2, ")
	assert.Contains(t, m["warm-slots"][0].Detail, "over the cap")
	assert.Contains(t, m["warm-slots"][0].Hint, "runner-manager warm prune")

	require.Len(t, m["warm-open"], 1)
	assert.Equal(t, "workspace slots left open by a crash: octo/web#1 (attempt "+crashed.String()+")", m["warm-open"][0].Detail,
		"the slot the journal's live attempt holds is not a crash's")

	require.Len(t, m["warm-home"], 1)
	assert.Equal(t, doctor.Warn, m["warm-home"][0].Status)
	assert.Contains(t, m["warm-home"][0].Detail, "fresh HOMEs get .gitconfig; not in "+home+", so not given: .ssh/known_hosts")
	assert.Contains(t, m["warm-home"][0].Detail, "home_links not in "+home+": .rustup")
}

func TestWarmSlotsCheck(t *testing.T) {
	const gib = 1 << 30
	free := func(n uint64) func() (uint64, error) { return func() (uint64, error) { return n, nil } }
	slots := []warm.Info{{Repo: "octo/app", N: 1, Bytes: 2 * gib}, {Repo: "octo/web", N: 1, Bytes: 1 * gib, HeldBy: rm.NewAttemptID()}}
	on := configfile.DefaultWarm()
	off := on
	off.Enabled = false
	for _, tc := range []struct {
		name   string
		list   []warm.Info
		w      configfile.Warm
		cap    int64
		free   uint64
		status doctor.Status
		detail string
	}{
		{"room", slots, on, 20 * gib, 100 * gib, doctor.OK, "workspace slots: 2, 3GiB of the 20GiB cap"},
		{"over the cap", slots, on, 2 * gib, 100 * gib, doctor.Warn, "over the cap"},
		{"disk below the floor", slots, on, 20 * gib, 1 * gib, doctor.Warn, "the disk has 1GiB free, below the floor of 5GiB"},
		{"cap beyond the disk", slots, on, 20 * gib, 10 * gib, doctor.Warn, "the disk can give them 8GiB at most above the floor"},
		{"off, none", nil, off, 20 * gib, 100 * gib, doctor.OK, "off ([warm] enabled = false)"},
		{"off, some left", slots, off, 20 * gib, 100 * gib, doctor.Warn, "left from when warm jobs were on"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := doctor.SlotsCheck(tc.list, tc.w, tc.cap, 5*gib, free(tc.free))
			assert.Equal(t, tc.status, c.Status, c.Detail)
			assert.Contains(t, c.Detail, tc.detail)
		})
	}
}
