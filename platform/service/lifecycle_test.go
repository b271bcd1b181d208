package service_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform/service"
)

func TestLingerHint(t *testing.T) {
	lingers := func(string) bool { return true }
	doesNot := func(string) bool { return false }
	tests := []struct {
		name      string
		goos      string
		user      bool
		lingering func(string) bool
		want      string
	}{
		{"user service, no linger", "linux", true, doesNot,
			"systemd runs ann's user services only while ann is logged in: the runners stop at logout and start again only at the next login.\n" +
				"To run it from boot, without a login, let it linger:\n  sudo loginctl enable-linger ann"},
		{"user service, lingering", "linux", true, lingers, ""},
		{"system service", "linux", false, doesNot, ""},
		{"launchd", "darwin", true, doesNot, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, service.LingerHint(tt.goos, tt.user, "ann", tt.lingering))
		})
	}
	assert.False(t, service.Lingering("no-such-user-lingers-here"))
}

// An enabled unit is not removed: removing it first would leave links
// systemctl can no longer undo by name. The error says what to run.
func TestRemoveEnabled(t *testing.T) {
	home, configHome := t.TempDir(), t.TempDir()
	spec := service.Spec{Executable: "/usr/bin/runner-manager", ConfigPath: "/c/config.toml", DataDir: "/d", User: true}
	in, err := service.For("linux", spec, home, configHome)
	require.NoError(t, err)
	require.NoError(t, in.Write(true))
	wants := filepath.Join(filepath.Dir(in.Path), "default.target.wants")
	require.NoError(t, os.MkdirAll(wants, 0o755))
	link := filepath.Join(wants, filepath.Base(in.Path))
	require.NoError(t, os.Symlink(in.Path, link))

	_, err = service.Remove("linux", true, home, configHome)
	var enabled *service.EnabledError
	require.True(t, errors.As(err, &enabled), "%v", err)
	assert.Equal(t, []string{link}, enabled.Links)
	assert.Equal(t, "runner-manager.service is enabled ("+link+"): disable and stop it first, then run `runner-manager service uninstall` again:\n"+
		"  systemctl --user disable --now runner-manager", err.Error())
	assert.FileExists(t, in.Path, "left in place")

	require.NoError(t, os.Remove(link)) // what systemctl disable does
	gone, err := service.Remove("linux", true, home, configHome)
	require.NoError(t, err)
	assert.Equal(t, []string{"systemctl --user stop runner-manager", "systemctl --user daemon-reload"}, gone.Unload)
	assert.NoFileExists(t, in.Path)
}
