package github_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// A version's end-of-life schedule reads as GitHub gives it: both times,
// one, or none (null).
func TestRunnerDeprecation(t *testing.T) {
	fake := githubtest.NewTestServer(t, fakegithub.WithToken(fakeToken), fakegithub.WithRepo(fakeRepo))
	c, err := github.New(github.Config{WebURL: fake.URL(), APIURL: fake.APIURL(), Token: fakeToken})
	require.NoError(t, err)
	scope, err := rm.Repository(fakeRepo)
	require.NoError(t, err)

	reg := time.Date(2026, 12, 20, 0, 0, 0, 0, time.UTC)
	run := time.Date(2026, 12, 27, 0, 0, 0, 0, time.UTC)
	fake.SetDeprecationSchedule("2.330.0", reg, run)
	got, err := c.RunnerDeprecation(t.Context(), scope, "2.330.0")
	require.NoError(t, err)
	assert.Equal(t, "2.330.0", got.Version)
	assert.True(t, reg.Equal(got.Registration), "%v", got.Registration)
	assert.True(t, run.Equal(got.Runtime), "%v", got.Runtime)

	got, err = c.RunnerDeprecation(t.Context(), scope, "2.331.0")
	require.NoError(t, err)
	assert.True(t, got.Registration.IsZero() && got.Runtime.IsZero(), "none set: null")

	before := time.Now().Add(-time.Second)
	fake.SetDeprecated("2.329.0")
	got, err = c.RunnerDeprecation(t.Context(), scope, "2.329.0")
	require.NoError(t, err)
	assert.True(t, got.Runtime.After(before), "refused now: its runtime ended now")
	assert.Equal(t, 3, fake.Calls(fakegithub.RouteRepoRunnerDeprecation))

	org, err := rm.Organization("nobody-knows")
	require.NoError(t, err)
	_, err = c.RunnerDeprecation(t.Context(), org, "2.330.0")
	require.Error(t, err, "an unknown scope")
}
