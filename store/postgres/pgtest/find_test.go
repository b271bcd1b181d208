package pgtest

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeTB records what binDir does with a test; Skip and Fatal end the
// goroutine as they end a test.
type fakeTB struct {
	testing.TB
	skipped, failed string
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Skip(args ...any) {
	f.skipped = args[0].(string)
	runtime.Goexit()
}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.failed = format
	runtime.Goexit()
}

func run(fn func()) {
	done := make(chan struct{})
	go func() { defer close(done); fn() }()
	<-done
}

func fakeInstall(t *testing.T, root, version string) string {
	dir := filepath.Join(root, version, "bin")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	for _, b := range []string{"initdb", "postgres"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, b), []byte("#!/bin/sh\n"), 0o755))
	}
	return dir
}

func TestFindBinaries(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Debian's layout")
	}
	root := t.TempDir()
	old := libRoot
	t.Cleanup(func() { libRoot = old })
	libRoot = root
	t.Setenv("PATH", t.TempDir())

	t.Run("AbsentSkips", func(t *testing.T) {
		t.Setenv(RequireEnv, "")
		f := &fakeTB{}
		run(func() { binDir(f) })
		assert.Contains(t, f.skipped, "not installed")
		assert.Contains(t, f.skipped, "apt-get install postgresql")
		assert.Empty(t, f.failed)
	})
	t.Run("AbsentFailsWhenRequired", func(t *testing.T) {
		t.Setenv(RequireEnv, "1")
		f := &fakeTB{}
		run(func() { binDir(f) })
		assert.Empty(t, f.skipped)
		assert.Contains(t, f.failed, "must run here")
	})
	t.Run("NewestDebianVersion", func(t *testing.T) {
		fakeInstall(t, root, "9")
		want := fakeInstall(t, root, "15")
		fakeInstall(t, root, "13")
		require.NoError(t, os.MkdirAll(filepath.Join(root, "16", "bin"), 0o755)) // without binaries
		got, err := findBinaries()
		require.NoError(t, err)
		assert.Equal(t, want, got, "15, not 9: versions compare as numbers")
	})
	t.Run("PATHFirst", func(t *testing.T) {
		dir := fakeInstall(t, t.TempDir(), "x")
		t.Setenv("PATH", dir)
		got, err := findBinaries()
		require.NoError(t, err)
		assert.Equal(t, dir, got)
	})
}
