package app_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

func TestInitChecksCredentials(t *testing.T) {
	e := newEnv(t)
	srv, _ := withFakeGitHub(t, e)
	cfg := filepath.Join(e.home, "fresh.toml")
	t.Setenv("RUNNER_MANAGER_GITHUB_API_URL", srv.APIURL())

	out := e.ok("--config", cfg, "init", "--github-url", srv.URL(), "--token-env", "RM_TEST_TOKEN", "--repo", "octo/app")
	assert.Contains(t, out, "[ok  ] GitHub accepts the credentials")
	assert.Contains(t, out, "[ok  ] manage runners of repo:octo/app")

	t.Run("unknown repository", func(t *testing.T) {
		r := e.run("--config", cfg, "init", "--force", "--github-url", srv.URL(), "--token-env", "RM_TEST_TOKEN", "--repo", "octo/nope")
		assert.Equal(t, 1, r.code, r.stderr)
		assert.Contains(t, r.stdout, "[FAIL] manage runners of repo:octo/nope")
		assert.Contains(t, r.stdout, "does not exist or the credentials cannot see it")
		assert.Contains(t, r.stderr, "runner-manager doctor")
	})
	t.Run("refused token", func(t *testing.T) {
		t.Setenv("RM_TEST_TOKEN", "ghp_revoked")
		r := e.run("--config", cfg, "init", "--force", "--github-url", srv.URL(), "--token-env", "RM_TEST_TOKEN")
		assert.Equal(t, 1, r.code, r.stderr)
		assert.Contains(t, r.stdout, "401")
		assert.NotContains(t, r.stdout+r.stderr, "ghp_revoked")
	})
}

func TestRunnerInstall(t *testing.T) {
	e := newEnv(t)
	withFakeGitHub(t, e)
	out := e.ok("runner", "install", "--repo", "octo/app")
	assert.Contains(t, out, "verified")
	assert.Regexp(t, `downloaded \S+ of \S+ \(100 %\)\n`, out, "the download's progress, to its end")
	v := fakegithub.RunnerVersion
	listener := filepath.Join(e.dataDir, "runners", v, "bin", fakegithub.ListenerName())
	_, err := os.Stat(listener)
	require.NoError(t, err, out)

	assert.Contains(t, e.ok("runner", "install", "--repo", "octo/app"), "already installed")
	assert.Contains(t, e.fails(app.ExitInvalid, "runner", "install", "--repo", "octo/app", "1.0.0"), "offers runner "+v)

	// A policy without --runner-dir now finds a runner: no note.
	r := e.run("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stderr, "no runner is installed")
	// The scope comes from the policies when not given.
	require.NoError(t, os.RemoveAll(filepath.Join(e.dataDir, "runners")))
	assert.Contains(t, e.ok("runner", "install"), "installed runner "+v)
}

func TestDoctor(t *testing.T) {
	e := newEnv(t)
	srv, runnerDir := withFakeGitHub(t, e)
	// A classic policy: its leftovers are in GitHub's REST runner list
	// (scale-set ones are looked up by name: doctor's tests).
	e.ok("policy", "add", "home", "--repo", "octo/app", "--labels", "home", "--runner-dir", runnerDir)
	// A registration of this host that no attempt owns, and an attempt
	// directory of an attempt that is not live.
	hostID, err := os.ReadFile(filepath.Join(e.dataDir, "state", "host-id"))
	require.NoError(t, err)
	prefix := "rm-" + strings.TrimSpace(string(hostID))[:8] + "-"
	client, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: fakeToken})
	require.NoError(t, err)
	target, err := rm.NewLabelTarget(rm.Scope{Kind: rm.ScopeRepository, Name: "octo/app"}, "", []string{"home"})
	require.NoError(t, err)
	ct, err := github.NewClassicTarget(client, target, github.ClassicOptions{NamePrefix: prefix})
	require.NoError(t, err)
	_, err = ct.JITConfig(t.Context(), prefix+"leftover") // registered, never started
	require.NoError(t, err)
	left := filepath.Join(e.dataDir, "attempts", rm.NewAttemptID().String())
	require.NoError(t, os.MkdirAll(left, 0o700))

	out := e.ok("doctor")
	for _, want := range []string{
		"[ok  ] data directory", "[ok  ] journal integrity", "[ok  ] GitHub accepts the credentials",
		"[ok  ] manage runners of repo:octo/app", "[ok  ] daemon not running",
		"[warn] registrations of repo:octo/app: 1 of this host, 1 leftover", prefix + "leftover",
		"[warn] attempt directories: 1 leftover",
	} {
		assert.Contains(t, out, want)
	}

	out = e.ok("doctor", "--fix")
	assert.Contains(t, out, "removed 1")
	_, err = os.Stat(left)
	assert.ErrorIs(t, err, os.ErrNotExist)
	for _, r := range srv.Runners() {
		assert.NotEqual(t, prefix+"leftover", r.Name)
	}
	out = e.ok("doctor")
	assert.Contains(t, out, "0 leftover")

	t.Run("loose data dir", func(t *testing.T) {
		require.NoError(t, os.Chmod(e.dataDir, 0o755))
		assert.Contains(t, e.ok("doctor"), "chmod 700")
		assert.Contains(t, e.ok("doctor", "--fix"), "tightened to 0700")
		fi, err := os.Stat(e.dataDir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	})
	t.Run("failing", func(t *testing.T) {
		t.Setenv("RM_TEST_TOKEN", "")
		r := e.run("doctor")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stdout, "[FAIL] GitHub credentials")
	})
}

func TestRunnerInstallLatest(t *testing.T) {
	e := newEnv(t)
	srv, _ := withFakeGitHub(t, e)
	srv.SetLatestRunnerRelease("9.8.7")
	out := e.ok("runner", "install", "--latest")
	assert.Contains(t, out, "installed runner 9.8.7 (sha256 ")
	_, err := os.Stat(filepath.Join(e.dataDir, "runners", "9.8.7", "bin", fakegithub.ListenerName()))
	require.NoError(t, err, out)
	assert.Contains(t, e.ok("runner", "install", "--latest"), "already installed")
	assert.Contains(t, e.fails(app.ExitInvalid, "runner", "install", "--latest", "1.0.0"), "latest runner release is 9.8.7")
}
