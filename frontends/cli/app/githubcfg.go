package app

import (
	"context"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/github"
)

// userAgent names the program to GitHub.
func userAgent() string { return "runner-manager/" + version() }

// GitHub returns a client for the configured GitHub with the configured
// credentials; an error wrapping configfile.ErrNoCredentials when there are none.
// A one-shot command's client logs its retries at debug (--log-level debug
// shows them): its person reads the outcome, not each try; the daemon's
// warns.
func (a *App) GitHub() (*github.Client, error) {
	c, err := a.Config()
	if err != nil {
		return nil, err
	}
	return daemon.NewGitHubClient(c, userAgent(), a.Logger(), !a.serving)
}

// check is one line of a report: init and doctor print them.
type check struct {
	OK   bool
	Warn bool // a problem that does not stop the manager
	What string
	Fix  string // how to fix it, when not OK
	// Unreachable: GitHub did not answer at all (dial, DNS, timeout), so
	// it said nothing of the credentials.
	Unreachable bool
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

// checkGitHub checks the credentials against GitHub (doctor.GitHub).
func checkGitHub(ctx context.Context, client *github.Client, scopes []rm.Scope) []check {
	var out []check
	for _, c := range doctor.GitHub(ctx, client, scopes) {
		out = append(out, check{OK: c.Status == doctor.OK, Warn: c.Status == doctor.Warn, What: c.Detail, Fix: c.Hint,
			// doctor.GitHub's words for a request that got no answer.
			Unreachable: c.Status == doctor.Fail && strings.HasPrefix(c.Detail, "reach GitHub at ")})
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
