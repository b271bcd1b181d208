package fakerunner_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestProbeJob: a probe job reads what its patterns match (a directory
// whole, a glob, a variable of the job's environment expanded) and
// reports the bytes and files it could read and what it could not.
func TestProbeJob(t *testing.T) {
	other := t.TempDir() // another repository's slot
	write := func(rel string, n int) {
		p := filepath.Join(other, filepath.FromSlash(rel))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, make([]byte, n), 0o644))
	}
	write("app/app/main.go", 100)
	write("app/app/src/lib.go", 50)
	write("_caches/npm/index", 30)
	require.NoError(t, os.Symlink(filepath.Join(other, "_caches", "npm", "index"), filepath.Join(other, "app", "app", "link")))
	require.NoError(t, os.Symlink(other, filepath.Join(other, "app", "loop"))) // a link to a directory is not followed
	t.Setenv("OTHER_SLOT", other)
	t.Setenv("HOME", t.TempDir())
	s := world(t)

	rec := runOne(t, s, t.TempDir(), "", fakegithub.JobSpec{Name: "probe", Probe: []string{
		"$OTHER_SLOT/app",
		"${OTHER_SLOT}/_caches/*/index",
		filepath.Join(other, "nothing-here"),
	}})
	require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
	require.NotNil(t, rec.Probe, rec.Log)
	p := rec.Probe
	require.Len(t, p.Paths, 3)
	assert.Equal(t, filepath.Join(other, "app"), p.Paths[0].Expanded)
	assert.Equal(t, int64(180), p.Paths[0].Bytes, "main.go, lib.go and the file the link names")
	assert.Equal(t, 3, p.Paths[0].Files)
	assert.Equal(t, 1, p.Paths[1].Matches)
	assert.Equal(t, int64(30), p.Paths[1].Bytes)
	assert.Zero(t, p.Paths[2].Matches)
	assert.Equal(t, int64(210), p.Bytes)
	assert.Equal(t, 4, p.Files)
}

// TestProbeJobDenied: what the job's user cannot read counts as denied,
// not as bytes.
func TestProbeJobDenied(t *testing.T) {
	if runtime.GOOS == "windows" || os.Geteuid() == 0 {
		t.Skip("needs POSIX permissions that bind this user")
	}
	other := t.TempDir()
	secret := filepath.Join(other, "secret")
	require.NoError(t, os.WriteFile(secret, []byte("sekrit"), 0o000))
	locked := filepath.Join(other, "locked")
	require.NoError(t, os.Mkdir(locked, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(locked, "f"), []byte("sekrit"), 0o644))
	require.NoError(t, os.Chmod(locked, 0o000))
	t.Cleanup(func() { _ = os.Chmod(locked, 0o755) })
	t.Setenv("HOME", t.TempDir())
	s := world(t)

	rec := runOne(t, s, t.TempDir(), "", fakegithub.JobSpec{Name: "probe", Probe: []string{secret, locked, filepath.Join(locked, "f")}})
	require.NotNil(t, rec.Probe, rec.Log)
	assert.Zero(t, rec.Probe.Bytes)
	for i, r := range rec.Probe.Paths {
		assert.Positive(t, r.Denied, "pattern %d: %+v", i, r)
	}
}
