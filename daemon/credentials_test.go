package daemon_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/credstore"
	"github.com/runner-manager/runner-manager/daemon"
)

// The daemon takes GitHub's credentials from the first of: the
// configuration's files, the variable token_env names, what systemd loaded
// for the service ($CREDENTIALS_DIRECTORY), the data directory's store.
func TestGitHubConfigCredentialOrder(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Linux store (a private file) is tested here")
	}
	data := t.TempDir()
	loaded := t.TempDir()
	c := configfile.Defaults()
	c.DataDir = data
	c.GitHub.TokenEnv = "RM_ORDER_TOKEN"
	t.Setenv("RM_ORDER_TOKEN", "")
	os.Unsetenv("RM_ORDER_TOKEN")
	t.Setenv(credstore.ServiceEnv, "")
	os.Unsetenv(credstore.ServiceEnv)

	token := func() (string, configfile.Source) {
		t.Helper()
		creds, err := daemon.Credentials(&c)
		require.NoError(t, err)
		gc, err := daemon.GitHubConfig(&c, "test")
		require.NoError(t, err)
		assert.Equal(t, creds.Token, gc.Token)
		return gc.Token, creds.Source
	}

	_, err := daemon.GitHubConfig(&c, "test")
	require.ErrorIs(t, err, configfile.ErrNoCredentials)
	assert.Contains(t, err.Error(), "runner-manager auth login")

	require.NoError(t, credstore.ForDataDir("linux", data).Set(credstore.GitHub, []byte(`{"token":"ghp_from_the_store"}`)))
	tok, src := token()
	assert.Equal(t, "ghp_from_the_store", tok)
	assert.Equal(t, configfile.SourceStore, src)

	// Under systemd the daemon may not read the root-only file: it reads
	// the copy systemd loaded (a token alone, as an operator may write).
	require.NoError(t, os.WriteFile(filepath.Join(loaded, credstore.GitHub), []byte("ghp_loaded_by_systemd\n"), 0o400))
	t.Setenv(credstore.ServiceEnv, loaded)
	tok, _ = token()
	assert.Equal(t, "ghp_loaded_by_systemd", tok)

	t.Setenv("RM_ORDER_TOKEN", "ghp_from_the_environment")
	tok, src = token()
	assert.Equal(t, "ghp_from_the_environment", tok)
	assert.Equal(t, configfile.SourceEnv, src)

	file := filepath.Join(t.TempDir(), "token")
	require.NoError(t, os.WriteFile(file, []byte("ghp_from_token_file\n"), 0o600))
	c.GitHub.TokenFile = file
	tok, src = token()
	assert.Equal(t, "ghp_from_token_file", tok)
	assert.Equal(t, configfile.SourceTokenFile, src)

	t.Run("a damaged record is an error that quotes nothing", func(t *testing.T) {
		c := c
		c.GitHub.TokenFile = ""
		t.Setenv("RM_ORDER_TOKEN", "")
		os.Unsetenv("RM_ORDER_TOKEN")
		require.NoError(t, os.Chmod(filepath.Join(loaded, credstore.GitHub), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(loaded, credstore.GitHub), []byte(`{"token":"ghp_half`), 0o600))
		_, err := daemon.GitHubConfig(&c, "test")
		require.ErrorContains(t, err, "damaged")
		assert.NotContains(t, err.Error(), "ghp_half")
	})
}
