package app_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// TestPolicyAddChecksGitHub: policy add asks GitHub before it writes: a
// repository, organization or runner group GitHub does not know is
// refused with nothing written; GitHub not answering is refused too, with
// --offline the way past; what it found is said (the scale set exists or
// will be created).
func TestPolicyAddChecksGitHub(t *testing.T) {
	e := newEnv(t)
	srv, _ := withFakeGitHub(t, e)
	org, err := rm.Organization("octo")
	require.NoError(t, err)
	srv.AddRunnerGroup(org, "ci")
	names := func() []string {
		var list []struct {
			Name string `json:"name"`
		}
		require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "list", "--json")), &list))
		var out []string
		for _, p := range list {
			out = append(out, p.Name)
		}
		return out
	}

	for _, tc := range []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{name: "new scale set", args: []string{"home", "--repo", "octo/app", "--scale-set", "home"},
			stdout: "checked at GitHub: repo:octo/app, runner group Default; scale set home does not exist yet: the daemon creates it when it starts"},
		{name: "org group", args: []string{"ci", "--org", "octo", "--scale-set", "ci", "--runner-group", "ci"},
			stdout: "checked at GitHub: org:octo, runner group ci; scale set ci does not exist yet"},
		{name: "classic", args: []string{"gpu", "--repo", "octo/app", "--labels", "gpu"},
			stdout: "checked at GitHub: repo:octo/app, runner group Default\n"},
		{name: "unknown repository", args: []string{"nope", "--repo", "octo/nope", "--scale-set", "nope"}, code: app.ExitNotFound,
			stderr: "nothing was written; --offline adds the policy without asking GitHub"},
		{name: "unknown runner group", args: []string{"grp", "--org", "octo", "--scale-set", "grp", "--runner-group", "gpu-boxes"}, code: app.ExitNotFound,
			stderr: `runner group "gpu-boxes"`},
		{name: "unknown group, classic", args: []string{"grpc", "--org", "octo", "--labels", "grpc", "--runner-group", "gpu-boxes"}, code: app.ExitNotFound,
			stderr: `no such runner group`},
		{name: "offline", args: []string{"later", "--repo", "octo/later", "--scale-set", "later", "--offline"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(append([]string{"policy", "add"}, tc.args...)...)
			require.Equal(t, tc.code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stdout, tc.stdout)
			assert.Contains(t, r.stderr, tc.stderr)
			if tc.code != 0 {
				assert.NotContains(t, names(), tc.args[0], "nothing written")
			} else {
				assert.Contains(t, names(), tc.args[0])
			}
		})
	}

	// A scale set that exists (the daemon created home's) is found.
	e.ok("policy", "rm", "later") // its repository does not exist: run --once would fail on it
	e.ok("run", "--once")
	e.ok("policy", "rm", "home", "--keep-scale-set") // its scale set stays at GitHub
	r := e.run("policy", "add", "home2", "--repo", "octo/app", "--scale-set", "home")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `scale set home exists \(id \d+\) and will be served`, r.stdout)

	// GitHub down: refused, nothing written.
	srv.Fault(fakegithub.RouteRepoDownloads, fakegithub.Fault{Status: http.StatusBadGateway})
	r = e.run("policy", "add", "down", "--repo", "octo/app", "--scale-set", "down")
	require.Equal(t, app.ExitUnavailable, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "GitHub did not confirm its target")
	assert.Contains(t, r.stderr, "--offline")
	assert.NotContains(t, names(), "down")
}

// Without credentials configured, policy add writes the policy and says
// it was not checked.
func TestPolicyAddWithoutCredentials(t *testing.T) {
	e := newEnv(t)
	r := e.run("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "note: policy home is not checked at GitHub: no credentials are configured")
}
