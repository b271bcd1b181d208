package doctor

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// GitHub checks the credentials against GitHub: that they are accepted
// (GET /rate_limit, which costs no quota), and for each scope that they
// can manage its runners (listing the runner downloads needs the runners'
// read permission). The first check says whether GitHub accepts them.
func GitHub(ctx context.Context, client *github.Client, scopes []rm.Scope) []Check {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	const name = "github"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(client.APIURL(), "/")+"/rate_limit", nil)
	if err != nil {
		return []Check{fail(name, "GitHub API "+client.APIURL(), err.Error())}
	}
	resp, err := client.HTTPClient().Do(req)
	if status, refused := github.AppRefused(err); refused {
		return []Check{fail(name, "GitHub refuses the credentials", "GitHub answered "+status+" when asked for the App's installation token: check its app id, installation id and key")}
	}
	if err != nil {
		return []Check{fail(name, "reach GitHub at "+client.APIURL(), err.Error()+"\ncheck [github] url / api_url and the network")}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	var out []Check
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return []Check{fail(name, "GitHub refuses the credentials", "GitHub answered 401: the token or app key is invalid, revoked or expired; create a new one")}
	case resp.StatusCode == http.StatusForbidden:
		return []Check{fail(name, "GitHub refuses the credentials", "GitHub answered "+resp.Status)}
	case rateLimitingOff(resp.StatusCode, body):
		// The scope checks below tell whether the credentials are accepted.
		out = append(out, ok(name, "GitHub answers; rate limiting is off on this server (no REST budget to spend)"))
	case resp.StatusCode/100 != 2:
		return []Check{fail(name, "GitHub did not check the credentials", "GitHub answered "+resp.Status)}
	default:
		out = append(out, ok(name, "GitHub accepts the credentials ("+budgetOf(body, client.Budget())+")"))
	}
	for _, s := range scopes {
		what := "manage runners of " + s.String()
		if _, err := client.RunnerDownloads(ctx, s); err != nil {
			out = append(out, fail("github-scope", what, err.Error()))
		} else {
			out = append(out, ok("github-scope", what))
		}
	}
	return out
}

// rateLimitingOff reports whether GET /rate_limit's answer is a GitHub
// Enterprise Server's with rate limiting off, its default ("Rate limits are
// disabled by default for GitHub Enterprise Server":
// docs.github.com/enterprise-server@3.19/rest/using-the-rest-api/rate-limits-for-the-rest-api;
// GitHub's REST description, github/rest-api-description, lists 404 for
// the operation rate-limit/get): 404 with the message "Rate limiting is
// not enabled." That is the server's setting, not a fault of the setup.
func rateLimitingOff(status int, body []byte) bool {
	if status != http.StatusNotFound {
		return false
	}
	var e struct {
		Message string `json:"message"`
	}
	return json.Unmarshal(body, &e) == nil && strings.Contains(strings.ToLower(e.Message), "rate limiting is not enabled")
}

// runnerVersion warns when the installed runner is older than the one
// GitHub offers scope: GitHub stops old runners.
func runnerVersion(ctx context.Context, client *github.Client, scope rm.Scope, installed string) []Check {
	_, offered, err := runnerpkg.Offered(ctx, client, scope)
	if have := filepath.Base(installed); err == nil && runnerpkg.Newer(offered, have) {
		return []Check{warn("runner-version", fmt.Sprintf("installed runner %s is older than the %s GitHub offers", have, offered),
			"GitHub stops old runners: run `runner-manager runner install`")}
	}
	return nil
}

// budgetOf says the core REST budget GET /rate_limit answered: from its
// body (resources.core: GitHub's REST description, rate-limit/get and its
// rate-limit-overview schema; go-github v88 rate_limit.go RateLimits.Core),
// else from the X-RateLimit headers the client saw (headers that a server
// may leave off this free request).
func budgetOf(body []byte, seen rm.Budget) string {
	var overview struct {
		Resources struct {
			Core *struct {
				Limit     int `json:"limit"`
				Remaining int `json:"remaining"`
			} `json:"core"`
		} `json:"resources"`
	}
	if json.Unmarshal(body, &overview) == nil && overview.Resources.Core != nil && overview.Resources.Core.Limit > 0 {
		c := overview.Resources.Core
		return fmt.Sprintf("REST budget %d of %d calls left", c.Remaining, c.Limit)
	}
	if seen.Limit > 0 {
		return fmt.Sprintf("REST budget %d of %d calls left", seen.Remaining, seen.Limit)
	}
	return "GitHub told no REST budget"
}
