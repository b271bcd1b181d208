package runnerpkg_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// installed puts a runner of version under data's runners directory.
func installed(t *testing.T, data, version string) string {
	t.Helper()
	dir := datadir.New(data).Runner(version)
	listener := runnerpkg.ListenerPath(dir)
	require.NoError(t, os.MkdirAll(filepath.Dir(listener), 0o755))
	require.NoError(t, os.WriteFile(listener, []byte("#!/bin/sh\n"), 0o755))
	return dir
}

// A policy launches the installed runners unless it names its own runner
// directory or its backend brings the runner (a container's image).
func TestLaunches(t *testing.T) {
	assert.True(t, runnerpkg.Launches(rm.Policy{}))
	assert.True(t, runnerpkg.Launches(rm.Policy{Backend: rm.BackendNative}))
	assert.True(t, runnerpkg.Launches(rm.Policy{Backend: rm.BackendVM}))
	assert.False(t, runnerpkg.Launches(rm.Policy{Backend: rm.BackendContainer, Container: rm.ContainerSettings{Image: "ghcr.io/actions/actions-runner:latest"}}))
	assert.False(t, runnerpkg.Launches(rm.Policy{RunnerDir: "/opt/runner"}))
	assert.True(t, runnerpkg.Installs{}.Launches(rm.Policy{}))
}

// InstalledAt is the time of the runner's directory: the policy's own, or
// the newest installed, which Promote makes now.
func TestInstalledAt(t *testing.T) {
	data := t.TempDir()
	ins := runnerpkg.Installs{DataDir: data}
	assert.True(t, ins.InstalledAt(rm.Policy{}).IsZero(), "none installed")
	dir := installed(t, data, "2.330.0")
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	require.NoError(t, os.Chtimes(dir, old, old))
	assert.True(t, ins.InstalledAt(rm.Policy{}).Equal(old))
	own := filepath.Join(data, "own")
	require.NoError(t, os.Mkdir(own, 0o755))
	assert.True(t, ins.InstalledAt(rm.Policy{RunnerDir: own}).After(old), "a policy's own directory")
	assert.True(t, ins.InstalledAt(rm.Policy{RunnerDir: filepath.Join(data, "gone")}).IsZero())
	require.NoError(t, runnerpkg.Promote(dir))
	assert.True(t, ins.InstalledAt(rm.Policy{}).After(old), "proving a runner puts it in place now")
}

// The fix told to a policy whose runner GitHub refused depends on where
// its runner comes from, and on the automatic update.
func TestDeprecatedFix(t *testing.T) {
	data := t.TempDir()
	installed(t, data, "2.330.0")
	on := runnerpkg.Installs{DataDir: data, AutoUpdate: true}
	off := runnerpkg.Installs{DataDir: data}
	assert.Equal(t, "give the policy a newer runner image (`runner-manager policy edit boxes --image …`); launches resume then",
		on.DeprecatedFix(rm.Policy{Name: "boxes", Backend: rm.BackendContainer, Container: rm.ContainerSettings{Image: "ghcr.io/actions/actions-runner:latest"}}))
	assert.Equal(t, "update the runner in /opt/runner, or install one with `runner-manager runner install --latest` and point the policy at it; launches resume once the policy or its runner changes",
		on.DeprecatedFix(rm.Policy{Name: "own", RunnerDir: "/opt/runner"}))
	assert.Equal(t, "the daemon installs the newest release and proves it on the next attempt (none newer yet: it looks again every minute); or install a newer runner with `runner-manager runner install --latest`; launches resume once it is installed",
		on.DeprecatedFix(rm.Policy{Name: "home"}))
	assert.Equal(t, "automatic runner updates are off ([runner] auto_update = false): install a newer runner with `runner-manager runner install --latest`; launches resume once it is installed",
		off.DeprecatedFix(rm.Policy{Name: "home"}))

	require.NoError(t, runnerpkg.MarkBad(data, "2.331.0", "checksum mismatch"))
	b, ok := runnerpkg.LastBad(data)
	require.True(t, ok)
	fix := on.DeprecatedFix(rm.Policy{Name: "home"})
	assert.Equal(t, "the update to runner 2.331.0 failed (checksum mismatch); it is tried again at "+b.RetryAt.Local().Format(time.TimeOnly)+
		" or when a newer release comes, or install one with `runner-manager runner install --latest`", fix)
	assert.Equal(t, fix, off.DeprecatedFix(rm.Policy{Name: "home"}), "a failed update is said whether updates are on or off")
	assert.True(t, strings.HasPrefix(on.DeprecatedFix(rm.Policy{Name: "boxes", Backend: rm.BackendContainer, Container: rm.ContainerSettings{Image: "ghcr.io/actions/actions-runner:latest"}}), "give the policy a newer runner image"),
		"a container's runner comes with its image, whatever the installs")
}
