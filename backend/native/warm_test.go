//go:build unix

package native_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/warm"
)

// Two attempts of one repository in turn find the first's work in their
// slot; each gets a fresh HOME with a copy of the manager's git config,
// and what a job plants in its HOME is gone for the next.
func TestNativeWarmSlotAndFreshHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gitconfig"), []byte("[user]\n\tname = ci\n"), 0o600))
	data := t.TempDir()
	installed := fakeRunner(t, t.TempDir())
	l := native.NewLauncher(data, native.WithoutKeptLogs())
	require.True(t, l.RunsWarm())
	pool := warm.NewPool(datadir.New(data))

	run := func() (rm.AttemptID, rm.WarmSlot, string) {
		id := rm.NewAttemptID()
		slot, err := pool.Lease(rm.BackendNative, "octo/app", id)
		require.NoError(t, err)
		p, err := l.Launch(t.Context(), rm.LaunchSpec{
			Attempt: id, RunnerDir: installed, JITConfig: "jit", Env: []string{"MODE=warm"}, Warm: &slot,
		})
		require.NoError(t, err)
		waitDone(t, p, 10*time.Second)
		root := l.Root(id)
		seen := readFile(t, filepath.Join(root, "runs.seen"))
		assert.Equal(t, filepath.Join(root, "_home"), readFile(t, filepath.Join(root, "home.seen")))
		assert.Equal(t, filepath.Join(slot.Dir, warm.CachesDir, "npm"), readFile(t, filepath.Join(root, "npm.seen")))
		assert.Contains(t, readFile(t, filepath.Join(root, "gitconfig.seen")), "name = ci")
		require.NoError(t, l.Cleanup(id, false))
		require.NoError(t, pool.Release(id, false))
		return id, slot, seen
	}
	first, slot1, _ := run()
	second, slot2, seen := run()
	assert.Equal(t, slot1.N, slot2.N)
	assert.True(t, slot1.Fresh)
	assert.False(t, slot2.Fresh)
	assert.Equal(t, first.String()+"\n"+second.String()+"\n", seen, "the second attempt found the first's work")
	_, err := os.Stat(filepath.Join(home, ".planted"))
	assert.True(t, os.IsNotExist(err), "a job wrote into the manager's HOME")
	_, err = os.Stat(filepath.Join(slot2.Dir, "runs"))
	assert.NoError(t, err, "Cleanup took the slot with the root")
}

// The cache variables the operator sets win over the slot's.
func TestNativeWarmOperatorCacheWins(t *testing.T) {
	data := t.TempDir()
	installed := fakeRunner(t, t.TempDir())
	l := native.NewLauncher(data, native.WithoutKeptLogs())
	id := rm.NewAttemptID()
	slot, err := warm.NewPool(datadir.New(data)).Lease(rm.BackendNative, "octo/app", id)
	require.NoError(t, err)
	p, err := l.Launch(t.Context(), rm.LaunchSpec{
		Attempt: id, RunnerDir: installed, JITConfig: "jit", Warm: &slot,
		Env: []string{"MODE=warm", "npm_config_cache=/srv/npm", "HOME=/srv/home-of-my-choice"},
	})
	require.NoError(t, err)
	waitDone(t, p, 10*time.Second)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Stop(ctx, 0)
		_ = l.Cleanup(id, false)
	})
	root := l.Root(id)
	assert.Equal(t, "/srv/npm", readFile(t, filepath.Join(root, "npm.seen")))
	assert.Equal(t, "/srv/home-of-my-choice", readFile(t, filepath.Join(root, "home.seen")))
	names := readFile(t, filepath.Join(root, "env.names"))
	assert.True(t, strings.Contains(names, "GOMODCACHE"), "the other caches are still the slot's")
}
