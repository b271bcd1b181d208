package app_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/credstore"
	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// authToken is the token auth login keeps in these tests: long enough to
// show its last four characters, and never to be seen whole in output.
const authToken = "ghp_auth_login_secret_0123456789abcd"

// withAuthConfig writes a configuration pointing at url whose token_env
// (RM_AUTH_TOKEN) is unset, so the OS secret store is the only source.
func withAuthConfig(t *testing.T, e *env, url, apiURL string) {
	t.Helper()
	cfg := filepath.Join(e.home, "config", "runner-manager", "config.toml")
	require.NoError(t, os.MkdirAll(filepath.Dir(cfg), 0o700))
	require.NoError(t, os.WriteFile(cfg, []byte(`
[github]
url = "`+url+`"
api_url = "`+apiURL+`"
token_env = "RM_AUTH_TOKEN"
`), 0o600))
	t.Setenv("RM_AUTH_TOKEN", "")
	os.Unsetenv("RM_AUTH_TOKEN")
	t.Setenv("CREDENTIALS_DIRECTORY", "")
	os.Unsetenv("CREDENTIALS_DIRECTORY")
}

// noSecret fails when any output holds one of secrets.
func noSecret(t *testing.T, out string, secrets ...string) {
	t.Helper()
	for _, s := range secrets {
		require.NotContains(t, out, s, "a secret in the output")
	}
}

// auth login from standard input keeps the token in a file only its owner
// reads; auth status says it is in force and the fake GitHub accepts it;
// a one-shot command and the daemon's one pass find it there; an explicit
// variable wins over it; auth logout removes it. No output ever holds it.
func TestAuthLoginStatusLogout(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Linux store (a private file) is tested here; the others' seams in credstore")
	}
	e := newEnv(t)
	srv := githubtest.NewTestServer(t, fakegithub.WithToken(authToken), fakegithub.WithToken("ghp_from_the_environment_0000wxyz"),
		fakegithub.WithRepo("octo/app"))
	withAuthConfig(t, e, srv.URL(), srv.APIURL())
	var all strings.Builder
	run := func(code int, stdin string, args ...string) result {
		t.Helper()
		r := e.runIn(context.Background(), stdin, append([]string{"--data-dir", e.dataDir}, args...)...)
		all.WriteString(r.stdout + r.stderr)
		require.Equal(t, code, r.code, "runner-manager %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
		return r
	}

	r := run(app.ExitNotAuthenticated, "", "auth", "status")
	assert.Equal(t, "GitHub credentials: none in force\n", r.stdout)
	assert.Contains(t, r.stderr, "runner-manager auth login")

	r = run(0, authToken+"\n", "auth", "login")
	kept := filepath.Join(e.dataDir, "credentials", "github")
	assert.Contains(t, r.stdout, "[ok  ] GitHub accepts the credentials")
	assert.Contains(t, r.stdout, "Kept a token ending in …abcd in the file "+filepath.Dir(kept)+".\n")
	assert.Contains(t, r.stdout, "LoadCredential=")
	st, err := os.Stat(kept)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	st, err = os.Stat(filepath.Dir(kept))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	rateLimits := srv.Calls(fakegithub.RouteRateLimit)
	r = run(0, "", "auth", "status")
	assert.Equal(t, "GitHub credentials: a token ending in …abcd\n  from the file "+filepath.Dir(kept)+"\n", r.stdout[:strings.Index(r.stdout, "[ok  ]")])
	assert.Contains(t, r.stdout, "[ok  ] GitHub accepts the credentials (REST budget ")
	assert.Equal(t, rateLimits+1, srv.Calls(fakegithub.RouteRateLimit), "one cheap request")

	// A one-shot command that asks GitHub finds the kept token.
	run(0, "", "policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "1", "--memory-estimate", "64MiB")
	// And so does the daemon.
	run(0, "", "run", "--once", "--metrics-addr", "")

	t.Run("an explicit variable wins", func(t *testing.T) {
		t.Setenv("RM_AUTH_TOKEN", "ghp_from_the_environment_0000wxyz")
		r := run(0, "", "auth", "status")
		assert.Contains(t, r.stdout, "GitHub credentials: a token ending in …wxyz\n  from $RM_AUTH_TOKEN ([github] token_env)\n")
		assert.Contains(t, r.stdout, "  unused: the file "+filepath.Dir(kept)+" keeps a token ending in …abcd\n")
		r = run(0, authToken, "auth", "login", "--no-check")
		assert.Contains(t, r.stdout, "They are not in force: $RM_AUTH_TOKEN ([github] token_env) wins")
		noSecret(t, all.String(), "ghp_from_the_environment_0000wxyz")
	})

	r = run(0, "", "auth", "logout")
	assert.Contains(t, r.stdout, "Removed GitHub's credentials from the file "+filepath.Dir(kept)+".\n")
	assert.NoFileExists(t, kept)
	r = run(1, "", "auth", "logout")
	assert.Contains(t, r.stderr, "keeps no GitHub credentials: nothing to remove")
	run(app.ExitNotAuthenticated, "", "auth", "status")

	noSecret(t, all.String(), authToken)
}

// auth login keeps nothing GitHub refuses; it keeps what it could not
// check (GitHub unreachable) and says so; bad input is refused.
func TestAuthLoginRefusedUnreachableBad(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Linux store (a private file) is tested here")
	}
	t.Run("Refused", func(t *testing.T) {
		e := newEnv(t)
		srv := githubtest.NewTestServer(t, fakegithub.WithToken("ghp_the_only_good_one_000000"))
		withAuthConfig(t, e, srv.URL(), srv.APIURL())
		r := e.runIn(context.Background(), authToken, "--data-dir", e.dataDir, "auth", "login")
		require.Equal(t, app.ExitAuthFailed, r.code, r.stderr)
		assert.Contains(t, r.stderr, "GitHub refuses a token ending in …abcd")
		assert.Contains(t, r.stderr, "nothing was kept")
		assert.NoFileExists(t, filepath.Join(e.dataDir, "credentials", "github"))
		noSecret(t, r.stdout+r.stderr, authToken)
	})
	t.Run("Unreachable", func(t *testing.T) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		url := "http://" + l.Addr().String()
		require.NoError(t, l.Close())
		e := newEnv(t)
		withAuthConfig(t, e, url, url+"/api/v3")
		// Each command tries GitHub a few times (about a second): run the
		// two side by side, status on a data directory of its own whose
		// store already keeps the token.
		other := filepath.Join(e.home, "other")
		require.NoError(t, credstore.ForDataDir(runtime.GOOS, other).Set(credstore.GitHub, []byte(`{"token":"`+authToken+`"}`)))
		statusDone := make(chan result, 1)
		go func() { statusDone <- e.runIn(context.Background(), "", "--data-dir", other, "auth", "status") }()

		r := e.runIn(context.Background(), authToken, "--data-dir", e.dataDir, "auth", "login")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "Not checked: could not reach GitHub at "+url+"/api/v3")
		assert.FileExists(t, filepath.Join(e.dataDir, "credentials", "github"))
		noSecret(t, r.stdout+r.stderr, authToken)

		r = <-statusDone
		require.Equal(t, 1, r.code)
		assert.Contains(t, r.stdout, "GitHub credentials: a token ending in …abcd\n")
		assert.Contains(t, r.stderr, "could not reach GitHub at "+url+"/api/v3: the credentials were not checked")
		assert.NotContains(t, r.stderr, "refuse")
		noSecret(t, r.stdout+r.stderr, authToken)
	})
	t.Run("Bad", func(t *testing.T) {
		e := newEnv(t)
		withAuthConfig(t, e, "https://github.com", "https://api.github.com")
		for _, tt := range []struct {
			stdin string
			args  []string
			code  int
			want  string
		}{
			{"", nil, 2, "no token on standard input"},
			{"  \n", nil, 2, "no token on standard input"},
			{"ghp_one two", nil, app.ExitInvalid, "holds a space"},
			{"", []string{"--app-id", "1"}, 2, "also needs --installation-id and --private-key-file"},
			{"", []string{"--app-id", "1", "--installation-id", "2", "--private-key-file", "/no/such.pem"}, app.ExitInvalid, "--private-key-file: cannot read the secret file"},
		} {
			r := e.runIn(context.Background(), tt.stdin, append([]string{"--data-dir", e.dataDir, "auth", "login", "--no-check"}, tt.args...)...)
			assert.Equal(t, tt.code, r.code, "%q %v: %s", tt.stdin, tt.args, r.stderr)
			assert.Contains(t, r.stderr, tt.want)
			assert.NotContains(t, r.stderr, "ghp_one")
		}
		assert.NoDirExists(t, filepath.Join(e.dataDir, "credentials"))
	})
}

// auth login keeps a GitHub App's ids and key; status names the App by
// its ids and the key by its public fingerprint, and the fake GitHub
// accepts the App (an installation token minted from the key).
func TestAuthLoginApp(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the Linux store (a private file) is tested here")
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	e := newEnv(t)
	srv := githubtest.NewTestServer(t)
	srv.AddApp(7, &key.PublicKey, 77)
	withAuthConfig(t, e, srv.URL(), srv.APIURL())
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	keyFile := filepath.Join(e.home, "app.pem")
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))

	out := e.ok("auth", "login", "--app-id", "7", "--installation-id", "77", "--private-key-file", keyFile)
	assert.Contains(t, out, "Kept GitHub App 7, installation 77, key SHA256:")
	require.NoError(t, os.Remove(keyFile), "once kept, the key file may go")

	out = e.ok("auth", "status")
	assert.Contains(t, out, "GitHub credentials: GitHub App 7, installation 77, key SHA256:")
	assert.Contains(t, out, "[ok  ] GitHub accepts the credentials")
	noSecret(t, out, "PRIVATE KEY", string(keyPEM[40:80]))

	// An installation the App does not have is refused, and nothing kept.
	require.NoError(t, os.WriteFile(keyFile, keyPEM, 0o600))
	r := e.run("auth", "login", "--app-id", "7", "--installation-id", "78", "--private-key-file", keyFile)
	assert.NotEqual(t, 0, r.code, "stdout: %s\nstderr: %s", r.stdout, r.stderr)
	assert.Contains(t, r.stderr, "GitHub refuses GitHub App 7, installation 78, key SHA256:")
	assert.Contains(t, r.stderr, "404 Not Found when asked for the App's installation token")
	assert.Contains(t, e.ok("auth", "status", "--no-check"), "installation 77")
}

// service install writes LoadCredential= when auth login kept the
// credentials, and no secret.
func TestServiceInstallLoadsKeptCredential(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("LoadCredential= is systemd's")
	}
	defer app.SetExecutable("/usr/local/bin/runner-manager")()
	defer app.SetLingering(func(string) bool { return true })()
	e := newEnv(t)
	withAuthConfig(t, e, "https://github.com", "https://api.github.com")
	unit := e.ok("service", "install", "--print", "--user")
	assert.NotContains(t, unit, "\nLoadCredential=")

	r := e.runIn(context.Background(), authToken, "--data-dir", e.dataDir, "auth", "login", "--no-check")
	require.Equal(t, 0, r.code, r.stderr)
	unit = e.ok("service", "install", "--print", "--user")
	assert.Contains(t, unit, "\nLoadCredential=github:"+filepath.Join(e.dataDir, "credentials", "github")+"\n")
	noSecret(t, unit, authToken)
	out := e.ok("service", "install", "--user")
	assert.Contains(t, out, "The unit loads the credentials `runner-manager auth login` kept in ")
	noSecret(t, out, authToken)
}
