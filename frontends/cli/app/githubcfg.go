package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/reconcile/daemon"
)

// userAgent names the program to GitHub.
func userAgent() string { return "runner-manager/" + version() }

// GitHub returns a client for the configured GitHub with the configured
// credentials; an error wrapping config.ErrNoCredentials when there are none.
func (a *App) GitHub() (*github.Client, error) {
	c, err := a.Config()
	if err != nil {
		return nil, err
	}
	return daemon.NewGitHubClient(c, userAgent(), a.Logger())
}

// check is one line of a report: init and doctor print them.
type check struct {
	OK   bool
	Warn bool // a problem that does not stop the manager
	What string
	Fix  string // how to fix it, when not OK
}

func (c check) String() string {
	mark := "ok  "
	switch {
	case c.Warn:
		mark = "warn"
	case !c.OK:
		mark = "FAIL"
	}
	s := "[" + mark + "] " + c.What
	if !c.OK && c.Fix != "" {
		s += "\n       " + strings.ReplaceAll(c.Fix, "\n", "\n       ")
	}
	return s
}

// checkGitHub checks the credentials against GitHub: that they are
// accepted, and for each scope that they can manage its runners (listing
// runners and runner downloads, which need the runners' read permission).
func checkGitHub(ctx context.Context, client *github.Client, scopes []rm.Scope) []check {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []check
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(client.APIURL(), "/")+"/rate_limit", nil)
	if err != nil {
		return []check{{What: "GitHub API " + client.APIURL(), Fix: err.Error()}}
	}
	resp, err := client.HTTPClient().Do(req)
	switch {
	case err != nil:
		out = append(out, check{What: "reach GitHub at " + client.APIURL(), Fix: err.Error() + "\ncheck [github] url / api_url and the network"})
		return out
	case resp.StatusCode == http.StatusUnauthorized:
		resp.Body.Close()
		out = append(out, check{What: "GitHub accepts the credentials", Fix: "GitHub answered 401: the token or app key is invalid, revoked or expired; create a new one"})
		return out
	default:
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 {
			out = append(out, check{What: "GitHub accepts the credentials", Fix: "GitHub answered " + resp.Status})
			return out
		}
	}
	b := client.Budget()
	out = append(out, check{OK: true, What: fmt.Sprintf("GitHub accepts the credentials (REST budget %d/%d)", b.Remaining, b.Limit)})
	for _, s := range scopes {
		_, err := client.RunnerDownloads(ctx, s)
		what := "manage runners of " + s.String()
		switch {
		case err == nil:
			out = append(out, check{OK: true, What: what})
		case errors.Is(err, github.ErrUnauthorized), errors.Is(err, github.ErrNotFound):
			out = append(out, check{What: what, Fix: err.Error()})
		default:
			out = append(out, check{What: what, Fix: err.Error()})
		}
	}
	return out
}

// scopeFlags names at most one scope (init, runner install).
type scopeFlags struct {
	Repo       string `help:"A repository to check access to." placeholder:"OWNER/REPO" xor:"scope"`
	Org        string `help:"An organization to check access to." placeholder:"ORG" xor:"scope"`
	Enterprise string `help:"An enterprise to check access to." placeholder:"SLUG" xor:"scope"`
}

func (f scopeFlags) scope() (rm.Scope, bool, error) {
	switch {
	case f.Repo != "":
		s, err := rm.Repository(f.Repo)
		return s, true, err
	case f.Org != "":
		s, err := rm.Organization(f.Org)
		return s, true, err
	case f.Enterprise != "":
		s, err := rm.Enterprise(f.Enterprise)
		return s, true, err
	}
	return rm.Scope{}, false, nil
}

// policyScopes lists the distinct scopes of the journal's policies.
func (a *App) policyScopes(ctx context.Context) ([]rm.Scope, error) {
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return nil, err
	}
	ps, err := st.Policies(ctx)
	if err != nil {
		return nil, err
	}
	var out []rm.Scope
	seen := map[rm.Scope]bool{}
	for _, p := range ps {
		if !seen[p.Target.Scope] {
			seen[p.Target.Scope] = true
			out = append(out, p.Target.Scope)
		}
	}
	return out, nil
}
