package github

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// RunnerDeprecation is a runner version's end-of-life schedule: after
// Registration GitHub registers no runner of it, after Runtime it gives
// them no jobs (the listener is refused, exit 7). A zero time: none set.
type RunnerDeprecation struct {
	Version      string
	Registration time.Time
	Runtime      time.Time
}

// runnerDeprecationBody is GET /{scope}/actions/runners/deprecations/{version}
// (GitHub's changelog of 2026-09-03; go-github v88 has no method for it,
// so it is asked through the client's raw request).
type runnerDeprecationBody struct {
	RunnerVersion            string     `json:"runner_version"`
	RegistrationDeprecatesAt *time.Time `json:"registration_deprecates_at"`
	RuntimeDeprecatesAt      *time.Time `json:"runtime_deprecates_at"`
}

// RunnerDeprecation asks GitHub when version stops being accepted in scope.
func (c *Client) RunnerDeprecation(ctx context.Context, scope rm.Scope, version string) (RunnerDeprecation, error) {
	var prefix string
	switch scope.Kind {
	case rm.ScopeRepository:
		prefix = "repos/" + scope.Name
	case rm.ScopeOrganization:
		prefix = "orgs/" + url.PathEscape(scope.Name)
	case rm.ScopeEnterprise:
		prefix = "enterprises/" + url.PathEscape(scope.Name)
	default:
		return RunnerDeprecation{}, fmt.Errorf("read the runner's deprecation: scope %q has no kind", scope.Name)
	}
	req, err := c.gh.NewRequest(ctx, http.MethodGet, prefix+"/actions/runners/deprecations/"+url.PathEscape(version), nil)
	if err != nil {
		return RunnerDeprecation{}, fmt.Errorf("read the deprecation of runner %s: %w", version, err)
	}
	var body runnerDeprecationBody
	if _, err := c.gh.Do(req, &body); err != nil {
		return RunnerDeprecation{}, restError(err, "read the deprecation of runner "+version+" in "+scope.String(), scope)
	}
	out := RunnerDeprecation{Version: version}
	if body.RegistrationDeprecatesAt != nil {
		out.Registration = *body.RegistrationDeprecatesAt
	}
	if body.RuntimeDeprecatesAt != nil {
		out.Runtime = *body.RuntimeDeprecatesAt
	}
	return out, nil
}
