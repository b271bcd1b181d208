package github_test

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestAppInstallationTokenForms: the App client works with installation
// tokens of either form, GitHub's stateless ghs_APPID_JWT of 2026 (about
// 520 characters) and the classic opaque one, one after the other
// as GitHub's staged rollout hands them out, and logs neither.
func TestAppInstallationTokenForms(t *testing.T) {
	t.Parallel()
	// A token living under a minute is renewed before each call.
	env := newFakeEnv(t, "App",
		fakegithub.WithInstallationTokens(fakegithub.InstallationTokensBoth),
		fakegithub.WithInstallationTokenLifetime(30*time.Second))
	scope := repoScope(t)
	for range 4 {
		_, err := env.client.RunnerDownloads(t.Context(), scope)
		require.NoError(t, err)
	}
	forms := map[string]int{}
	for _, c := range env.fake.CredentialLedger() {
		if c.Kind != fakegithub.CredInstallationToken {
			continue
		}
		if strings.Count(c.Value, ".") == 2 {
			forms["stateless"]++
			assert.Greater(t, len(c.Value), 500)
		} else {
			forms["classic"]++
			assert.Regexp(t, `^ghs_[0-9a-f]+$`, c.Value)
		}
	}
	assert.GreaterOrEqual(t, forms["stateless"], 1, "%v", forms)
	assert.GreaterOrEqual(t, forms["classic"], 1, "%v", forms)
}
