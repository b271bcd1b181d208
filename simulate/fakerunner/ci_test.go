package fakerunner_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// smallCI is a CI job small enough for a test: 12 files, a 256 KiB
// toolchain, 6 packages.
func smallCI(commit string, changed int) *fakegithub.CIJob {
	return &fakegithub.CIJob{Commit: commit, Files: 12, FileBytes: 4 << 10, Changed: changed, ToolBytes: 256 << 10, Packages: 6, PackageBytes: 8 << 10}
}

// TestCIJobWarmAndCold: a CI job's second run in the same work folder and
// npm cache fetches nothing (its checkout asks for the tree alone), a run
// of a new commit fetches only the files that changed, and a run in
// fresh folders fetches everything again.
func TestCIJobWarmAndCold(t *testing.T) {
	s := world(t)
	slot := t.TempDir() // the work folder the warm runs share
	home := t.TempDir()
	t.Setenv("HOME", home)

	run := func(work string, ci *fakegithub.CIJob) (fakegithub.SetupReport, int64) {
		t.Helper()
		before := s.ContentServed()
		rec := runOne(t, s, t.TempDir(), work, fakegithub.JobSpec{Name: "ci", CI: ci})
		require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
		require.NotNil(t, rec.Setup, rec.Log)
		return *rec.Setup, s.ContentServed() - before
	}

	first, served := run(slot, smallCI("c1", 0))
	assert.False(t, first.Checkout.Warm || first.Tool.Warm || first.Deps.Warm, "a first run is cold: %+v", first)
	assert.Equal(t, 12, first.Checkout.Objects)
	assert.Equal(t, 1, first.Tool.Objects)
	assert.Equal(t, 6, first.Deps.Objects)
	assert.Equal(t, served, first.Fetched(), "what the runner counts is what the server sent")
	assert.Greater(t, first.Fetched(), int64(12*4<<10+256<<10+6*8<<10))
	assert.Equal(t, filepath.Join(home, ".npm"), first.Deps.Dir, "npm's cache is ~/.npm without npm_config_cache")
	assert.FileExists(t, filepath.Join(slot, "app", "app", "src", "file0000.txt"))
	assert.FileExists(t, filepath.Join(slot, "app", "app", "node_modules", "pkg000", "package.tgz"))

	second, served := run(slot, smallCI("c1", 0))
	assert.True(t, second.Warm(), "the same commit in the same folders: %+v", second)
	assert.Zero(t, second.Tool.Fetched+second.Deps.Fetched)
	assert.Zero(t, second.Checkout.Objects)
	assert.Equal(t, served, second.Checkout.Fetched, "the tree alone")
	assert.Less(t, served, int64(4<<10), "a tree, not content")

	third, _ := run(slot, smallCI("c2", 3))
	assert.Equal(t, 3, third.Checkout.Objects, "only the changed files are fetched")
	assert.True(t, third.Tool.Warm && third.Deps.Warm)

	t.Setenv("HOME", t.TempDir())
	cold, served := run(t.TempDir(), smallCI("c1", 0))
	assert.False(t, cold.Checkout.Warm || cold.Tool.Warm || cold.Deps.Warm, "fresh folders are cold: %+v", cold)
	assert.Equal(t, first.Fetched(), served)
}

// TestCIJobNPMCache: npm_config_cache, when set, is where the
// dependencies are cached, and it is warm for a run in another work
// folder.
func TestCIJobNPMCache(t *testing.T) {
	s := world(t)
	cache := filepath.Join(t.TempDir(), "npm")
	t.Setenv("npm_config_cache", cache)
	t.Setenv("HOME", t.TempDir())
	for i, warm := range []bool{false, true} {
		rec := runOne(t, s, t.TempDir(), t.TempDir(), fakegithub.JobSpec{Name: "ci", CI: smallCI("c1", 0)})
		require.NotNil(t, rec.Setup, rec.Log)
		assert.Equal(t, cache, rec.Setup.Deps.Dir)
		assert.Equal(t, warm, rec.Setup.Deps.Warm, "run %d", i+1)
		assert.False(t, rec.Setup.Checkout.Warm, "a fresh work folder's checkout is cold")
	}
	entries, err := os.ReadDir(filepath.Join(cache, "_cacache", "content-v2", "sha256"))
	require.NoError(t, err)
	assert.NotEmpty(t, entries)
}

// TestCIJobSetupFails: a setup that cannot work (npm has no cache
// folder: neither npm_config_cache nor HOME) fails the job, says why, and
// the job's steps after it do not run.
func TestCIJobSetupFails(t *testing.T) {
	t.Setenv("HOME", "")
	t.Setenv("npm_config_cache", "")
	s := world(t)
	rec := runOne(t, s, t.TempDir(), "", fakegithub.JobSpec{Name: "ci", CI: smallCI("c1", 0), Script: "echo the step ran"})
	assert.Equal(t, fakegithub.ResultFailed, rec.Result)
	require.NotNil(t, rec.Setup)
	assert.Contains(t, rec.Setup.Error, "neither npm_config_cache nor HOME")
	assert.Contains(t, rec.Log, "##[error]dependencies:")
	assert.NotContains(t, rec.Log, "the step ran")
}

// TestCIJobOtherRemote: a workspace holding another repository's .git is
// emptied before the checkout, as actions/checkout does.
func TestCIJobOtherRemote(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	s := world(t)
	root := t.TempDir()
	ws := filepath.Join(root, "_work", "app", "app")
	require.NoError(t, os.MkdirAll(filepath.Join(ws, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(ws, ".git", "remote"), []byte("elsewhere"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(ws, "stray"), []byte("x"), 0o644))
	rec := runOne(t, s, root, "", fakegithub.JobSpec{Name: "ci", CI: smallCI("c1", 0)})
	require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
	assert.NoFileExists(t, filepath.Join(ws, "stray"), "a workspace of another remote is emptied first")
	assert.FileExists(t, filepath.Join(ws, "src", "file0011.txt"))
	assert.False(t, rec.Setup.Checkout.Warm)
}
