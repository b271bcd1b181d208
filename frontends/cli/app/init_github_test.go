package app_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// init tells a GitHub it could not reach from one that refused the
// credentials.
func TestInitGitHubUnreachableOrRefused(t *testing.T) {
	t.Run("Unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		url := "http://" + l.Addr().String()
		require.NoError(t, l.Close()) // nothing listens there now

		e := newEnv(t)
		t.Setenv("GITHUB_TOKEN", "ghp_test")
		stderr := e.fails(app.ExitUnavailable, "init", "--github-url", url, "--repo", "octo/app")
		assert.Contains(t, stderr, "could not reach GitHub at "+url+"/api/v3: ")
		assert.Contains(t, stderr, "connection refused")
		assert.Contains(t, stderr, "check [github] url / api_url in ")
		assert.NotContains(t, stderr, "refused the credentials")
	})
	t.Run("Refused", func(t *testing.T) {
		for _, status := range []int{http.StatusUnauthorized, http.StatusForbidden} {
			gh := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Error(w, `{"message":"Bad credentials"}`, status)
			}))
			e := newEnv(t)
			t.Setenv("GITHUB_TOKEN", "ghp_test")
			r := e.run("init", "--github-url", gh.URL, "--repo", "octo/app")
			gh.Close()
			require.Equal(t, 1, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, "but GitHub refuses the credentials (GitHub answered", status)
			assert.NotContains(t, r.stderr, "accepts", status)
			assert.Contains(t, r.stdout, "[FAIL] GitHub refuses the credentials", status)
			assert.NotContains(t, r.stderr, "could not reach", status)
			assert.NotContains(t, r.stdout+r.stderr, "ghp_test", "the token is never printed")
		}
	})
}

// init's next steps name the scope it was given.
func TestInitNextSteps(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{nil, `
Next:
  runner-manager runner install --repo OWNER/REPO
  runner-manager policy add home --repo OWNER/REPO --scale-set home --max 2
  runner-manager run                       # then jobs with runs-on: home run here
`},
		{[]string{"--repo", "octo/app"}, `
Next:
  runner-manager runner install --repo octo/app
  runner-manager policy add home --repo octo/app --scale-set home --max 2
  runner-manager run                       # then jobs with runs-on: home run here
`},
		{[]string{"--org", "octo"}, `
Next:
  runner-manager runner install --org octo
  runner-manager policy add home --org octo --scale-set home --max 2
  runner-manager run                       # then jobs with runs-on: home run here
`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			e := newEnv(t)
			out := e.ok(append([]string{"init", "--no-check"}, tt.args...)...)
			_, next, ok := strings.Cut(out, "\n\n")
			require.True(t, ok, out)
			assert.Equal(t, tt.want, "\n"+next)
		})
	}
	t.Run("NoToken", func(t *testing.T) {
		e := newEnv(t)
		out := e.ok("init", "--repo", "octo/app", "--token-env", "MY_TOKEN")
		assert.Contains(t, out, "  export MY_TOKEN=...                      # a token that can manage runners\n  runner-manager runner install --repo octo/app\n")
	})
}
