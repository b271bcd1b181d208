package runnerpkg_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

const token = "ghp_install_test"

func TestRunner(t *testing.T) {
	srv := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo("octo/app"))
	client, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: token})
	require.NoError(t, err)
	scope, err := rm.Repository("octo/app")
	require.NoError(t, err)
	data := t.TempDir()

	_, err = runnerpkg.Newest(data)
	require.Error(t, err, "nothing installed yet")

	_, v, err := runnerpkg.Offered(t.Context(), client, scope)
	require.NoError(t, err)
	assert.Equal(t, fakegithub.RunnerVersion, v)

	_, err = runnerpkg.Runner(t.Context(), client, scope, data, runnerpkg.Options{Version: "1.0.0"})
	require.ErrorIs(t, err, rm.ErrInvalid, "only the offered version can be verified")

	var url string
	r, err := runnerpkg.Runner(t.Context(), client, scope, data, runnerpkg.Options{Downloading: func(u string) { url = u }})
	require.NoError(t, err)
	assert.NotEmpty(t, url)
	assert.False(t, r.Already)
	assert.NotEmpty(t, r.SHA256)
	assert.Equal(t, filepath.Join(data, "runners", v), r.Dir)
	_, err = os.Stat(filepath.Join(r.Dir, "bin", fakegithub.ListenerName()))
	require.NoError(t, err)
	newest, err := runnerpkg.Newest(data)
	require.NoError(t, err)
	assert.Equal(t, r.Dir, newest)

	url = ""
	r, err = runnerpkg.Runner(t.Context(), client, scope, data, runnerpkg.Options{Downloading: func(u string) { url = u }})
	require.NoError(t, err)
	assert.True(t, r.Already)
	assert.Empty(t, url, "nothing downloaded again")

	nope, err := rm.Repository("octo/nope")
	require.NoError(t, err)
	_, _, err = runnerpkg.Offered(t.Context(), client, nope)
	require.Error(t, err)
}

// --latest installs actions/runner's newest release, newer than the
// scope's offer, verified against the release's checksum; the newest
// install is then that one.
func TestLatest(t *testing.T) {
	srv := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo("octo/app"))
	srv.SetLatestRunnerRelease("9.8.7")
	client, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: token})
	require.NoError(t, err)
	scope, err := rm.Repository("octo/app")
	require.NoError(t, err)
	data := t.TempDir()
	offered, err := runnerpkg.Runner(t.Context(), client, scope, data, runnerpkg.Options{})
	require.NoError(t, err)
	assert.Equal(t, fakegithub.RunnerVersion, offered.Version)

	v, list, err := client.LatestRunnerRelease(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "9.8.7", v)
	require.NotEmpty(t, list)
	for _, d := range list {
		assert.Len(t, d.SHA256, 64, d.Filename)
	}

	_, err = runnerpkg.Latest(t.Context(), client, data, runnerpkg.Options{Version: "1.2.3"})
	require.ErrorIs(t, err, rm.ErrInvalid)
	r, err := runnerpkg.Latest(t.Context(), client, data, runnerpkg.Options{})
	require.NoError(t, err)
	assert.Equal(t, "9.8.7", r.Version)
	assert.False(t, r.Already)
	assert.Len(t, r.SHA256, 64)
	newest, err := runnerpkg.Newest(data)
	require.NoError(t, err)
	assert.Equal(t, r.Dir, newest, "policies following the newest install take it")
	b, err := os.ReadFile(filepath.Join(r.Dir, "bin", "Runner.Listener"))
	if err == nil {
		assert.Contains(t, string(b), "9.8.7", "the release's package")
	}

	r, err = runnerpkg.Latest(t.Context(), client, data, runnerpkg.Options{})
	require.NoError(t, err)
	assert.True(t, r.Already)
}

// The automatic update installs the newest release and prunes the old
// runner only once no attempt runs on it and no policy names it.
func TestUpdaterCheck(t *testing.T) {
	srv := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo("octo/app"))
	client, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: token})
	require.NoError(t, err)
	scope, err := rm.Repository("octo/app")
	require.NoError(t, err)
	data := t.TempDir()
	old, err := runnerpkg.Runner(t.Context(), client, scope, data, runnerpkg.Options{})
	require.NoError(t, err)

	// An attempt running on the old runner: its root links to it.
	root := filepath.Join(data, "attempts", rm.NewAttemptID().String())
	require.NoError(t, os.MkdirAll(root, 0o700))
	require.NoError(t, os.Symlink(filepath.Join(old.Dir, "externals"), filepath.Join(root, "externals")))

	var keep []string
	u := runnerpkg.Updater{GitHub: client, DataDir: data, Keep: func(context.Context) ([]string, error) { return keep, nil }}
	r, removed, err := u.Check(t.Context())
	require.NoError(t, err)
	assert.True(t, r.Already, "the latest release is the installed one")
	assert.Empty(t, removed)

	srv.SetLatestRunnerRelease("9.8.7")
	r, removed, err = u.Check(t.Context())
	require.NoError(t, err)
	assert.Equal(t, "9.8.7", r.Version)
	assert.False(t, r.Already)
	assert.True(t, r.Trial, "installed unproven")
	assert.Empty(t, removed, "the running attempt finishes on the old runner")
	assert.DirExists(t, old.Dir)
	newest, err := runnerpkg.Newest(data)
	require.NoError(t, err)
	assert.Equal(t, old.Dir, newest, "unproven: policies keep the old runner")
	trial, ok := runnerpkg.Candidate(data)
	require.True(t, ok)
	assert.Equal(t, r.Dir, trial.Dir)
	assert.True(t, trial.Attempt.IsZero())

	// One attempt claims the proof; a second cannot.
	a := rm.NewAttemptID()
	require.True(t, runnerpkg.Claim(trial.Dir, a))
	assert.False(t, runnerpkg.Claim(trial.Dir, rm.NewAttemptID()), "one attempt proves a runner")
	trial, ok = runnerpkg.Candidate(data)
	require.True(t, ok)
	assert.Equal(t, a, trial.Attempt)
	r2, _, err := u.Check(t.Context())
	require.NoError(t, err)
	assert.True(t, r2.Already && r2.Trial, "on trial: not installed again")
	require.NoError(t, runnerpkg.Promote(trial.Dir))
	newest, err = runnerpkg.Newest(data)
	require.NoError(t, err)
	assert.Equal(t, r.Dir, newest, "proven: new attempts launch the new runner")
	_, ok = runnerpkg.Candidate(data)
	assert.False(t, ok, "nothing on trial once proven")

	require.NoError(t, os.RemoveAll(root)) // the attempt ended
	keep = []string{old.Dir}
	_, removed, err = u.Check(t.Context())
	require.NoError(t, err)
	assert.Empty(t, removed, "a policy names the old runner")

	keep = nil
	_, removed, err = u.Check(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{old.Dir}, removed, "no attempt or policy uses it")
	assert.NoDirExists(t, old.Dir)
	assert.DirExists(t, r.Dir)
}

// A release whose checksum does not match is not installed: the old runner
// stays the one launched, the release is marked bad and not downloaded
// again while that lasts; a newer release is tried.
func TestStageBadChecksum(t *testing.T) {
	srv := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo("octo/app"))
	client, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: token})
	require.NoError(t, err)
	scope, err := rm.Repository("octo/app")
	require.NoError(t, err)
	data := t.TempDir()
	old, err := runnerpkg.Runner(t.Context(), client, scope, data, runnerpkg.Options{})
	require.NoError(t, err)

	srv.SetLatestRunnerRelease("9.8.7")
	srv.BreakRunnerRelease("9.8.7")
	downloads := 0
	o := runnerpkg.Options{Downloading: func(string) { downloads++ }}
	_, err = runnerpkg.Stage(t.Context(), client, data, o)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "checksum")
	assert.Equal(t, 1, downloads)
	newest, err := runnerpkg.Newest(data)
	require.NoError(t, err)
	assert.Equal(t, old.Dir, newest, "the old runner serves on")
	assert.NoDirExists(t, filepath.Join(data, "runners", "9.8.7"))
	b, ok := runnerpkg.LastBad(data)
	require.True(t, ok)
	assert.Equal(t, "9.8.7", b.Version)
	assert.Contains(t, b.Reason, "checksum")
	assert.NotContains(t, b.Reason, "\n", "one line")

	r, err := runnerpkg.Stage(t.Context(), client, data, o)
	require.NoError(t, err, "a bad release is skipped, not failed again")
	require.NotNil(t, r.Bad)
	assert.Equal(t, 1, downloads, "not downloaded again")

	srv.SetLatestRunnerRelease("9.8.8")
	r, err = runnerpkg.Stage(t.Context(), client, data, o)
	require.NoError(t, err)
	assert.True(t, r.Trial)
	assert.Equal(t, "9.8.8", r.Version)
}

// A proof that failed marks the runner bad: it is no longer on trial, the
// old runner stays, and Prune removes the bad one once unused.
func TestMarkBadEndsTrial(t *testing.T) {
	srv := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo("octo/app"))
	client, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: token})
	require.NoError(t, err)
	scope, err := rm.Repository("octo/app")
	require.NoError(t, err)
	data := t.TempDir()
	old, err := runnerpkg.Runner(t.Context(), client, scope, data, runnerpkg.Options{})
	require.NoError(t, err)
	srv.SetLatestRunnerRelease("9.8.7")
	r, err := runnerpkg.Stage(t.Context(), client, data, runnerpkg.Options{})
	require.NoError(t, err)
	removed, err := runnerpkg.Prune(data, nil)
	require.NoError(t, err)
	assert.Empty(t, removed, "the runner on trial is kept")

	require.NoError(t, runnerpkg.MarkBad(data, "9.8.7", "its proof attempt ended before it listened:\nexit code 1"))
	_, ok := runnerpkg.Candidate(data)
	assert.False(t, ok)
	newest, err := runnerpkg.Newest(data)
	require.NoError(t, err)
	assert.Equal(t, old.Dir, newest)
	removed, err = runnerpkg.Prune(data, nil)
	require.NoError(t, err)
	assert.Equal(t, []string{r.Dir}, removed)
	b, ok := runnerpkg.LastBad(data)
	require.True(t, ok)
	assert.Equal(t, "its proof attempt ended before it listened: exit code 1", b.Reason)
}

func TestNewer(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"2.331.0", "2.330.0", true}, {"2.330.0", "2.330.0", false}, {"2.330.10", "2.330.9", true},
		{"2.329.0", "2.330.0", false}, {"x", "2.330.0", false}, {"2.330.0", "x", true},
		{"2.328.0", "2.327.1", true}, {"2.10.0", "2.9.0", true}, // numbers, not strings
		{"v2.329.0", "2.328.0", true}, {"latest", "2.328.0", false}, {"2.328.0", "latest", true},
		{"x", "y", false},
	} {
		assert.Equal(t, c.want, runnerpkg.Newer(c.a, c.b), "%s > %s", c.a, c.b)
	}
}
