package daemon_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/daemon"
)

// load writes a configuration file and loads it as the program does.
func load(t *testing.T, body string) *configfile.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(path, []byte(body), 0o600))
	c, err := configfile.Load(configfile.Sources{Path: path, Explicit: true,
		LookupEnv: func(string) (string, bool) { return "", false }})
	require.NoError(t, err)
	return c
}

func TestFromConfig(t *testing.T) {
	const file = `
data_dir = "/var/lib/rm"
[github]
url = "https://ghe.example.com"
token_env = "RM_TEST_TOKEN"
[admission]
memory_reserve = "512MiB"
disk_floor = "3GiB"
[daemon]
metrics_addr = ":9464"
`
	t.Run("OK", func(t *testing.T) {
		t.Setenv("RM_TEST_TOKEN", "ghp_secret")
		cfg, err := daemon.FromConfig(load(t, file), "runner-manager/test")
		require.NoError(t, err)
		assert.Equal(t, "/var/lib/rm", cfg.DataDir)
		assert.Equal(t, "https://ghe.example.com", cfg.GitHub.WebURL)
		assert.Equal(t, "ghp_secret", cfg.GitHub.Token)
		assert.Equal(t, "runner-manager/test", cfg.GitHub.UserAgent)
		require.NotNil(t, cfg.Admission)
		assert.EqualValues(t, 512<<20, cfg.Admission.Reserve)
		assert.EqualValues(t, 3<<30, cfg.Admission.DiskFloor)
		assert.Equal(t, "/var/lib/rm", cfg.Admission.DiskPath)
		assert.NotNil(t, cfg.Admission.Memory)
		assert.NotNil(t, cfg.Admission.DiskFree)
		assert.Equal(t, ":9464", cfg.MetricsAddr)
		assert.Empty(t, cfg.Webhook.Listen)
	})
	t.Run("Webhook", func(t *testing.T) {
		t.Setenv("RM_TEST_TOKEN", "ghp_secret")
		t.Setenv("RM_TEST_HOOK", "shh")
		cfg, err := daemon.FromConfig(load(t, file+"[webhook]\nlisten = \":8080\"\nsecret_env = \"RM_TEST_HOOK\"\nmax_body = \"64KiB\"\n"), "")
		require.NoError(t, err)
		assert.Equal(t, daemon.Webhook{Listen: ":8080", Secret: []byte("shh"), MaxBody: 64 << 10}, cfg.Webhook)
	})
	t.Run("WebhookNoSecret", func(t *testing.T) {
		t.Setenv("RM_TEST_TOKEN", "ghp_secret")
		t.Setenv("RM_TEST_HOOK", "")
		_, err := daemon.FromConfig(load(t, file+"[webhook]\nlisten = \":8080\"\nsecret_env = \"RM_TEST_HOOK\"\n"), "")
		assert.ErrorIs(t, err, rm.ErrInvalid)
		assert.ErrorContains(t, err, "$RM_TEST_HOOK")
	})
	t.Run("ErrNoCredentials", func(t *testing.T) {
		t.Setenv("RM_TEST_TOKEN", "")
		_, err := daemon.FromConfig(load(t, file), "")
		assert.ErrorIs(t, err, configfile.ErrNoCredentials)
		_, err = daemon.NewGitHubClient(load(t, file), "", nil, false)
		assert.ErrorIs(t, err, configfile.ErrNoCredentials)
	})
	t.Run("Client", func(t *testing.T) {
		t.Setenv("RM_TEST_TOKEN", "ghp_secret")
		c, err := daemon.NewGitHubClient(load(t, file), "", nil, false)
		require.NoError(t, err)
		assert.Equal(t, "https://ghe.example.com/api/v3", c.APIURL())
	})
}

// [runner] job_report is on unless the file or its variable says false.
func TestFromConfigJobReport(t *testing.T) {
	t.Setenv("RM_TEST_TOKEN", "ghp_secret")
	const file = "data_dir = \"/var/lib/rm\"\n[github]\ntoken_env = \"RM_TEST_TOKEN\"\n"
	cfg, err := daemon.FromConfig(load(t, file), "")
	require.NoError(t, err)
	assert.True(t, cfg.JobReport, "on by default")
	cfg, err = daemon.FromConfig(load(t, file+"[runner]\nauto_update = false\n"), "")
	require.NoError(t, err)
	assert.True(t, cfg.JobReport, "another key of [runner] keeps it on")
	cfg, err = daemon.FromConfig(load(t, file+"[runner]\njob_report = false\n"), "")
	require.NoError(t, err)
	assert.False(t, cfg.JobReport)

	path := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
	c, err := configfile.Load(configfile.Sources{Path: path, Explicit: true, LookupEnv: func(k string) (string, bool) {
		if k == "RUNNER_MANAGER_RUNNER_JOB_REPORT" {
			return "false", true
		}
		return "", false
	}})
	require.NoError(t, err)
	assert.False(t, c.Runner.JobReport, "$RUNNER_MANAGER_RUNNER_JOB_REPORT")
}
