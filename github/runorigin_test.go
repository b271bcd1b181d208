package github_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/github"
)

// ForkRun reads GET /repos/{owner}/{repo}/actions/runs/{run_id} (go-github
// v88 actions_workflow_runs.go:213, GetWorkflowRunByID): head_repository
// (WorkflowRun.HeadRepository, omitempty there) against the repository.
// Every answer GitHub's schema allows is a case: the same repository (any
// case), a fork, no head repository at all (a fork, to be safe), and an
// error status (a fork, with the error).
func TestForkRun(t *testing.T) {
	for _, c := range []struct {
		name     string
		status   int
		body     string
		fork     bool
		wantsErr bool
	}{
		{"same repository", 200, `{"id":7,"head_repository":{"full_name":"octo/app"},"repository":{"full_name":"octo/app"}}`, false, false},
		{"same repository, other case", 200, `{"id":7,"head_repository":{"full_name":"Octo/App"}}`, false, false},
		{"a fork", 200, `{"id":7,"head_repository":{"full_name":"mallory/app","fork":true}}`, true, false},
		{"no head repository", 200, `{"id":7,"head_repository":null}`, true, false},
		{"not found", 404, `{"message":"Not Found"}`, true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.Equal(t, "/api/v3/repos/octo/app/actions/runs/7", r.URL.Path)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			})
			cl, err := github.New(github.Config{WebURL: "https://ghes.example", Token: "t", Transport: handlerTransport{h}})
			require.NoError(t, err)
			fork, err := cl.ForkRun(t.Context(), "octo/app", 7)
			assert.Equal(t, c.fork, fork)
			if c.wantsErr {
				assert.Error(t, err)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}
