package service_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform/service"
)

func TestExecutable(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "runner-manager")
	require.NoError(t, os.WriteFile(real, []byte("x"), 0o755))
	link := filepath.Join(dir, "rm")
	require.NoError(t, os.Symlink(real, link))
	got, err := service.Executable(link)
	require.NoError(t, err)
	want, err := filepath.EvalSymlinks(real)
	require.NoError(t, err)
	assert.Equal(t, want, got, "symlinks are resolved")

	_, err = service.Executable("/tmp/go-build123/b001/exe/cli")
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "go install")
}

func TestWithDefaults(t *testing.T) {
	s := service.Spec{ConfigPath: "/home/u/.config/runner-manager/config.toml", DataDir: "/home/u/data"}
	sys := s.WithDefaults(false, false)
	assert.Equal(t, service.SystemConfigPath, sys.ConfigPath)
	assert.Equal(t, service.SystemDataDir, sys.DataDir)
	assert.Equal(t, "/etc/runner-manager/env", sys.EnvFile)
	given := s.WithDefaults(true, true)
	assert.Equal(t, s.ConfigPath, given.ConfigPath)
	assert.Equal(t, s.DataDir, given.DataDir)
	s.User = true
	user := s.WithDefaults(false, false)
	assert.Equal(t, s.ConfigPath, user.ConfigPath, "a user service keeps the user's files")
	assert.Equal(t, "/home/u/.config/runner-manager/env", user.EnvFile)
	s.EnvFile = "/secrets/env"
	assert.Equal(t, "/secrets/env", s.WithDefaults(false, false).EnvFile)
}

func TestWriteRemove(t *testing.T) {
	home, configHome := t.TempDir(), t.TempDir()
	spec := service.Spec{Executable: "/usr/bin/runner-manager", ConfigPath: "/c/config.toml", DataDir: "/d", User: true}
	in, err := service.For("linux", spec, home, configHome)
	require.NoError(t, err)
	require.NoError(t, in.Write(true))
	b, err := os.ReadFile(in.Path)
	require.NoError(t, err)
	assert.Equal(t, in.Content, string(b))
	assert.Equal(t, filepath.Join(configHome, "systemd", "user"), filepath.Dir(in.Path))

	gone, err := service.Remove("linux", true, home, configHome)
	require.NoError(t, err)
	assert.Equal(t, in.Path, gone.Path)
	assert.NoFileExists(t, in.Path)
	_, err = service.Remove("linux", true, home, configHome)
	assert.ErrorContains(t, err, "nothing to remove")
}
