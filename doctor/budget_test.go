package doctor_test

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// TestGitHubBudget: doctor (and init, which runs its check) says the REST
// budget GitHub answered on GET /rate_limit, whether the answer carries it
// in its body, its X-RateLimit headers or both; "0/0" was printed where a
// server sent the body alone.
func TestGitHubBudget(t *testing.T) {
	scope := rm.Scope{Kind: rm.ScopeRepository, Name: "octo/app"}
	cases := []struct {
		name   string
		modify func(*http.Response)
		want   string
	}{
		{name: "body and headers", want: "REST budget 120 of 120 calls left"},
		{name: "body only", want: "REST budget 120 of 120 calls left", modify: func(r *http.Response) {
			for k := range r.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
					r.Header.Del(k)
				}
			}
		}},
		{name: "headers only", want: "REST budget 120 of 120 calls left", modify: func(r *http.Response) {
			r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader([]byte(`{}`)))
			r.ContentLength = 2
			r.Header.Set("Content-Length", "2")
		}},
		{name: "neither", want: "GitHub told no REST budget", modify: func(r *http.Response) {
			for k := range r.Header {
				if strings.HasPrefix(strings.ToLower(k), "x-ratelimit-") {
					r.Header.Del(k)
				}
			}
			r.Body.Close()
			r.Body = io.NopCloser(bytes.NewReader([]byte(`{}`)))
			r.ContentLength = 2
			r.Header.Set("Content-Length", "2")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo("octo/app"), fakegithub.WithRateLimit(120))
			api, err := url.Parse(srv.APIURL())
			require.NoError(t, err)
			proxy := httputil.NewSingleHostReverseProxy(api)
			proxy.ModifyResponse = func(r *http.Response) error {
				if tc.modify != nil && strings.HasSuffix(r.Request.URL.Path, "/rate_limit") {
					tc.modify(r)
				}
				return nil
			}
			front := httptest.NewServer(proxy)
			t.Cleanup(front.Close)
			c, err := github.New(github.Config{WebURL: srv.URL(), APIURL: front.URL, Token: token})
			require.NoError(t, err)
			checks := doctor.GitHub(t.Context(), c, []rm.Scope{scope})
			require.NotEmpty(t, checks)
			assert.Equal(t, doctor.OK, checks[0].Status, checks[0].String())
			assert.Contains(t, checks[0].String(), "GitHub accepts the credentials ("+tc.want+")")
		})
	}
}
