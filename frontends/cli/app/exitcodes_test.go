package app_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// Each failure class has its own exit status, and every failure ends with
// one line naming the command that fixes it. Each case drives the program
// into one class for real: the fake GitHub answering or not, a journal
// missing, a name taken.
func TestExitStatusByClass(t *testing.T) {
	add := func(name string) []string {
		return []string{"policy", "add", name, "--repo", "octo/app", "--scale-set", name}
	}
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, e *env, srv *fakegithub.Server)
		args  []string
		code  int
		try   string // the last line, after "try: runner-manager " and the global flags
		says  string
	}{
		{name: "Usage", args: []string{"frobnicate"}, code: app.ExitUsage,
			try: "--help", says: "unexpected argument frobnicate"},
		{name: "Invalid", args: append(add("p"), "--max", "0"), code: app.ExitInvalid,
			try: "policy add --help", says: "max 0 must be at least 1"},
		{name: "NotFound", setup: func(t *testing.T, e *env, _ *fakegithub.Server) { e.ok(add("q")...) },
			args: []string{"policy", "show", "nope"}, code: app.ExitNotFound,
			try: "policy list", says: `no policy named "nope"`},
		{name: "NotFoundAtGitHub", args: []string{"policy", "add", "p", "--repo", "octo/nope", "--scale-set", "p"}, code: app.ExitNotFound,
			try: "doctor", says: "does not exist or the credentials cannot see it"},
		{name: "Conflict", setup: func(t *testing.T, e *env, _ *fakegithub.Server) { e.ok(add("p")...) },
			args: add("p"), code: app.ExitConflict, try: "status", says: `"p"`},
		{name: "NotAuthenticated", setup: func(t *testing.T, e *env, _ *fakegithub.Server) { t.Setenv("RM_TEST_TOKEN", "") },
			args: []string{"run", "--once"}, code: app.ExitNotAuthenticated,
			try: "init --force --token-env RM_TEST_TOKEN", says: "no GitHub credentials"},
		{name: "AuthFailed", setup: func(t *testing.T, e *env, _ *fakegithub.Server) {
			t.Setenv("RM_TEST_TOKEN", "ghp_"+strings.Repeat("x", 36))
		},
			args: add("p"), code: app.ExitAuthFailed, try: "doctor", says: "invalid, revoked or expired"},
		{name: "Refused", setup: func(t *testing.T, e *env, srv *fakegithub.Server) {
			srv.Fault(fakegithub.RouteRepoDownloads, fakegithub.Fault{Status: http.StatusForbidden})
		}, args: add("p"), code: app.ExitRefused, try: "doctor", says: "the credentials lack"},
		{name: "Unavailable", setup: func(t *testing.T, e *env, srv *fakegithub.Server) { srv.StopListening() },
			args: add("p"), code: app.ExitUnavailable, try: "doctor", says: "--offline adds the policy"},
		{name: "UnavailableServerError", setup: func(t *testing.T, e *env, srv *fakegithub.Server) {
			srv.Fault(fakegithub.RouteRepoDownloads, fakegithub.Fault{Status: http.StatusBadGateway})
		}, args: add("p"), code: app.ExitUnavailable, try: "doctor", says: "502"},
		{name: "RateLimited", setup: func(t *testing.T, e *env, srv *fakegithub.Server) { srv.SetRateLimit(0) },
			args: add("p"), code: app.ExitRateLimited, try: "status", says: "rate limit"},
		{name: "LocalState", args: []string{"attempts"}, code: app.ExitLocalState, try: "init", says: "no journal in"},
		{name: "LocalStateNoDataDir", setup: func(t *testing.T, e *env, _ *fakegithub.Server) { e.noDataDir() },
			args: add("p"), code: app.ExitLocalState, try: "init", says: "does not exist"},
		{name: "UnsupportedHost", setup: func(t *testing.T, e *env, _ *fakegithub.Server) {
			t.Cleanup(app.SetHostOS("plan9"))
			t.Cleanup(app.SetExecutable("/usr/local/bin/runner-manager"))
		}, args: []string{"service", "install", "--user"}, code: app.ExitUnsupportedHost, try: "doctor", says: "not plan9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			srv, _ := withFakeGitHub(t, e)
			if tc.setup != nil {
				tc.setup(t, e, srv)
			}
			r := e.run(tc.args...)
			require.Equal(t, tc.code, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
			assert.Contains(t, r.stderr, tc.says)
			lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
			last := lines[len(lines)-1]
			assert.True(t, strings.HasPrefix(last, "try: runner-manager "), "the last line names the next command: %q", r.stderr)
			assert.True(t, strings.HasSuffix(last, " "+tc.try), "want %q, got %q", tc.try, last)
			assert.Equal(t, 1, strings.Count(r.stderr, "\ntry: "), r.stderr)
		})
	}
}

// The next step keeps the --config and --data-dir given, so it acts on
// the same journal (a hint without them would make a second one).
func TestNextStepKeepsGlobals(t *testing.T) {
	e := newEnv(t)
	cfg := filepath.Join(e.home, "my config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("data_dir = \""+e.dataDir+"\"\n"), 0o600))
	require.Equal(t, 0, e.runRaw("--config", cfg, "policy", "add", "q", "--repo", "o/r", "--scale-set", "q", "--offline").code)
	r := e.runRaw("--config", cfg, "policy", "show", "nope")
	require.Equal(t, app.ExitNotFound, r.code, r.stderr)
	assert.True(t, strings.HasSuffix(r.stderr, "\ntry: runner-manager --config '"+cfg+"' policy list\n"), r.stderr)
}
