package doctor_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// TestGitHubRateLimitingOff: a GitHub Enterprise Server with rate limiting
// off answers GET /rate_limit 404 "Rate limiting is not enabled.": doctor
// says so and is healthy; the scope check still proves the credentials. A
// 404 that says anything else is still a failure, and so is a bad token.
func TestGitHubRateLimitingOff(t *testing.T) {
	scope := rm.Scope{Kind: rm.ScopeRepository, Name: "octo/app"}
	cases := []struct {
		name   string
		opts   []fakegithub.Option
		token  string
		fault  bool
		status []doctor.Status
		detail string
	}{
		{name: "rate limiting off", opts: []fakegithub.Option{fakegithub.WithRateLimitingOff()}, token: token,
			status: []doctor.Status{doctor.OK, doctor.OK}, detail: "rate limiting is off on this server"},
		{name: "rate limiting on", token: token,
			status: []doctor.Status{doctor.OK, doctor.OK}, detail: "GitHub accepts the credentials (REST budget"},
		{name: "another 404", token: token, fault: true,
			status: []doctor.Status{doctor.Fail}, detail: "GitHub did not check the credentials"},
		{name: "off, bad token", opts: []fakegithub.Option{fakegithub.WithRateLimitingOff()}, token: "ghp_wrong",
			status: []doctor.Status{doctor.Fail}, detail: "GitHub refuses the credentials"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := githubtest.NewTestServer(t, append([]fakegithub.Option{fakegithub.WithToken(token), fakegithub.WithRepo("octo/app")}, tc.opts...)...)
			if tc.fault {
				srv.Fault(fakegithub.RouteRateLimit, fakegithub.Fault{Status: 404})
			}
			c, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: tc.token})
			require.NoError(t, err)
			checks := doctor.GitHub(t.Context(), c, []rm.Scope{scope})
			require.Len(t, checks, len(tc.status), "%v", checks)
			for i, s := range tc.status {
				assert.Equal(t, s, checks[i].Status, checks[i].String())
			}
			assert.Contains(t, checks[0].String(), tc.detail)
		})
	}
}
