package daemon_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestRunServesJobsAsAnApp serves jobs authenticated as a GitHub App whose
// installation tokens come in both of GitHub's forms, the stateless
// ghs_APPID_JWT of 2026 (about 520 characters) and the classic one, one
// after the other (a token living under a minute is renewed before each
// call); no log line holds one.
func TestRunServesJobsAsAnApp(t *testing.T) {
	w := newWorld(t, fakegithub.WithInstallationTokens(fakegithub.InstallationTokensBoth),
		fakegithub.WithInstallationTokenLifetime(30*time.Second))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	w.gh.AddApp(7, &key.PublicKey, 77)
	cfg := w.github()
	cfg.Token, cfg.App = "", &github.App{AppID: 7, InstallationID: 77, PrivateKeyPEM: keyPEM}
	logs := &lockedBuffer{}
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: cfg, ClassicPoll: 200 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "home", true) // classic: REST calls all along

	stop := start(t, d)
	w.serve(t, 2, "home", true)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 2 }, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())

	forms := map[string]int{}
	for _, c := range w.gh.CredentialLedger() {
		if c.Kind != fakegithub.CredInstallationToken {
			continue
		}
		if strings.Count(c.Value, ".") == 2 {
			forms["stateless"]++
		} else {
			forms["classic"]++
		}
		assert.NotContains(t, logs.String(), c.Value, "an installation token was logged")
	}
	assert.Positive(t, forms["stateless"], "%v", forms)
	assert.Positive(t, forms["classic"], "%v", forms)
}
