package github

import (
	"net/http"
	"testing"
)

func TestCredentialRoute(t *testing.T) {
	for _, tc := range []struct {
		method, path string
		want         bool
	}{
		{http.MethodPost, "/repos/o/r/actions/runners/registration-token", true},
		{http.MethodPost, "/api/v3/orgs/o/actions/runners/remove-token", true},
		{http.MethodPost, "/actions/runner-registration", true},
		{http.MethodPost, "/api/v3/actions/runner-registration/", true},
		{http.MethodPost, "/enterprises/e/actions/runners/generate-jitconfig", true},
		{http.MethodPost, "/_services/pipelines/_apis/runtime/runnerscalesets/3/generatejitconfig", true},
		{http.MethodPost, "/app/installations/99/access_tokens", true},
		{http.MethodPost, "/tenant/_apis/runtime/runnerscalesets/3/sessions", true},
		{http.MethodPatch, "/tenant/_apis/runtime/runnerscalesets/3/sessions/abc", true},
		{http.MethodDelete, "/tenant/_apis/runtime/runnerscalesets/3/sessions/abc", false},
		{http.MethodGet, "/tenant/_apis/runtime/runnerscalesets/3/sessions/abc/messages", false},
		{http.MethodPost, "/tenant/_apis/runtime/runnerscalesets/3/acquirejobs", false},
		{http.MethodGet, "/repos/o/r/actions/runners", false},
		{http.MethodDelete, "/repos/o/r/actions/runners/5", false},
		{http.MethodGet, "/rate_limit", false},
	} {
		if got := credentialRoute(tc.method, tc.path); got != tc.want {
			t.Errorf("credentialRoute(%s %s) = %v, want %v", tc.method, tc.path, got, tc.want)
		}
	}
}
