package policyedit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// installRunner lays out a directory CheckRunnerDir accepts.
func installRunner(t *testing.T, dir string) {
	t.Helper()
	l := runnerpkg.ListenerPath(dir)
	require.NoError(t, os.MkdirAll(filepath.Dir(l), 0o755))
	require.NoError(t, os.WriteFile(l, []byte("#!/bin/sh\n"), 0o755))
}

// TestReadFileRunnerDirPaths: a policy file's runner_dir is expanded as
// the configuration's paths are, a relative one beside the file whatever
// the current directory.
func TestReadFileRunnerDirPaths(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("RM_TEST_RUNNERS", filepath.Join(home, "runners"))
	filesDir := t.TempDir()
	installRunner(t, filepath.Join(home, "r1"))
	installRunner(t, filepath.Join(home, "runners", "r2"))
	installRunner(t, filepath.Join(filesDir, "r3"))
	t.Chdir(t.TempDir())

	for _, tc := range []struct{ name, dir, want string }{
		{"Tilde", "~/r1", filepath.Join(home, "r1")},
		{"Variable", "$RM_TEST_RUNNERS/r2", filepath.Join(home, "runners", "r2")},
		{"BesideTheFile", "r3", filepath.Join(filesDir, "r3")},
		{"Absolute", filepath.Join(home, "r1"), filepath.Join(home, "r1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := filepath.Join(filesDir, "policies.toml")
			require.NoError(t, os.WriteFile(p, []byte("[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"s\"\nrunner_dir = \""+tc.dir+"\"\n"), 0o600))
			f, err := policyedit.ReadFile(p, backend.All())
			require.NoError(t, err)
			assert.Equal(t, tc.want, f.Policy[0].RunnerDir)
		})
	}
	t.Run("UnsetVariable", func(t *testing.T) {
		p := writePolicies(t, "\n[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"s\"\nrunner_dir = \"$RM_TEST_NOPE/r\"\n")
		_, err := policyedit.ReadFile(p, backend.All())
		require.Error(t, err)
		assert.Contains(t, err.Error(), `policies.toml:2: policy "a": runner_dir: "$RM_TEST_NOPE/r": $RM_TEST_NOPE is not set`)
	})
	t.Run("FlagTilde", func(t *testing.T) {
		got, err := policyedit.CheckRunnerDir("~/r1")
		require.NoError(t, err)
		assert.Equal(t, filepath.Join(home, "r1"), got)
	})
}
