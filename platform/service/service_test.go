package service_test

import (
	"encoding/xml"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform/service"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test -update to create it")
	assert.Equal(t, string(want), got)
}

// A unit hands the kept credentials to the daemon by LoadCredential=,
// naming the file and never holding what is in it; without one it has no
// such line (systemd would refuse to start it while the file is missing).
func TestSystemdLoadCredential(t *testing.T) {
	spec := service.Spec{Executable: "/usr/bin/runner-manager", ConfigPath: "/etc/rm/config.toml", DataDir: "/var/lib/rm"}
	unit, err := service.Systemd(spec)
	require.NoError(t, err)
	assert.NotContains(t, unit, "\nLoadCredential=")

	dir := t.TempDir()
	kept := filepath.Join(dir, "github")
	require.NoError(t, os.WriteFile(kept, []byte(`{"token":"ghp_kept_secret_0123456789"}`), 0o600))
	spec.Credential = kept
	unit, err = service.Systemd(spec)
	require.NoError(t, err)
	assert.Contains(t, unit, "\nLoadCredential=github:"+kept+"\n")
	assert.NotContains(t, unit, "ghp_kept_secret")

	spec.Credential = "credentials/github"
	_, err = service.Systemd(spec)
	require.ErrorIs(t, err, rm.ErrInvalid, "a relative path names a system credential, not our file")
}

func TestGolden(t *testing.T) {
	system := service.Spec{
		Executable: "/usr/local/bin/runner-manager",
		ConfigPath: "/etc/runner-manager/config.toml",
		DataDir:    "/var/lib/runner-manager",
		EnvFile:    "/etc/runner-manager/env",
		RunAs:      "runner",
		TokenEnv:   "ACME_RUNNER_TOKEN",
		Credential: "/var/lib/runner-manager/credentials/github",
	}
	user := service.Spec{
		Executable: "/home/ada/go/bin/runner-manager",
		ConfigPath: "/home/ada/.config/runner-manager/config.toml",
		DataDir:    "/home/ada/.local/state/runner-manager",
		EnvFile:    "/home/ada/.config/runner-manager/env",
		User:       true,
	}
	tests := []struct {
		name     string
		goos     string
		spec     service.Spec
		wantPath string
	}{
		{"systemd-system", "linux", system, "/etc/systemd/system/runner-manager.service"},
		{"systemd-user", "linux", user, "/home/ada/.config/systemd/user/runner-manager.service"},
		{"launchd-system", "darwin", system, "/Library/LaunchDaemons/io.github.runner-manager.plist"},
		{"launchd-user", "darwin", user, "/home/ada/Library/LaunchAgents/io.github.runner-manager.plist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := service.For(tt.goos, tt.spec, "/home/ada", "")
			require.NoError(t, err)
			assert.Equal(t, tt.wantPath, in.Path)
			assert.NotEmpty(t, in.Start)
			assert.NotEmpty(t, in.Stop)
			golden(t, tt.name, in.Content)
			if tt.goos == "darwin" {
				// A well-formed property list.
				d := xml.NewDecoder(strings.NewReader(in.Content))
				for {
					_, err := d.Token()
					if err != nil {
						require.ErrorContains(t, err, "EOF")
						break
					}
				}
			}
		})
	}
}

// The unit tells to set the token in the variable the configuration
// reads, not GITHUB_TOKEN whatever token_env says.
func TestTokenEnvNamed(t *testing.T) {
	spec := service.Spec{Executable: "/bin/x", ConfigPath: "/c.toml", DataDir: "/d", EnvFile: "/e", TokenEnv: "ACME_TOKEN"}
	unit, err := service.Systemd(spec)
	require.NoError(t, err)
	assert.Contains(t, unit, "# Put the token here as ACME_TOKEN=... (the configuration's token_env).\nEnvironmentFile=-/e\n")
	assert.NotContains(t, unit, "GITHUB_TOKEN")

	spec.TokenEnv = "" // credentials from a file
	unit, err = service.Systemd(spec)
	require.NoError(t, err)
	assert.NotContains(t, unit, "token here")
	assert.Contains(t, unit, "its GitHub credentials come from a file")
}

func TestNoSecrets(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_supersecret")
	spec := service.Spec{Executable: "/bin/rm-x", ConfigPath: "/c.toml", DataDir: "/d", EnvFile: "/e"}
	for _, goos := range []string{"linux", "darwin"} {
		in, err := service.For(goos, spec, "/h", "")
		require.NoError(t, err)
		assert.NotContains(t, in.Content, "ghp_supersecret")
		assert.NotContains(t, in.Content, "GITHUB_TOKEN=")
	}
}

func TestRefused(t *testing.T) {
	ok := service.Spec{Executable: "/bin/x", ConfigPath: "/c.toml", DataDir: "/d"}
	tests := []struct {
		name string
		goos string
		mod  func(*service.Spec)
	}{
		{"relative", "linux", func(s *service.Spec) { s.DataDir = "state" }},
		{"newline", "linux", func(s *service.Spec) { s.ConfigPath = "/c\nExecStart=/bin/evil" }},
		{"run-as user", "linux", func(s *service.Spec) { s.User = true; s.RunAs = "bob" }},
		{"token_env newline", "linux", func(s *service.Spec) { s.TokenEnv = "T\nExecStart=/bin/evil" }},
		{"token_env not a name", "linux", func(s *service.Spec) { s.TokenEnv = "1TOKEN" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.mod(&s)
			_, err := service.For(tt.goos, s, "/h", "")
			require.ErrorIs(t, err, rm.ErrInvalid)
		})
	}
}

// A system without a service manager we write for is an unsupported host,
// not a bad value.
func TestUnsupportedSystem(t *testing.T) {
	_, err := service.For("windows", service.Spec{Executable: "/bin/x", ConfigPath: "/c.toml", DataDir: "/d"}, "/h", "")
	require.ErrorIs(t, err, errors.ErrUnsupported)
	assert.Equal(t, rm.ClassUnsupportedHost, rm.ClassOf(err))
	assert.Contains(t, err.Error(), "not windows")
}
