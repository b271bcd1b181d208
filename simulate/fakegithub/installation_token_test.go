package fakegithub_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/logredact"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// mintInstallationToken asks for installation 4242's token of app 42 with
// the X-GitHub-Stateless-S2S-Token header set to override ("" for none).
func mintInstallationToken(t *testing.T, s *fakegithub.Server, keyPEM []byte, override string) string {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxT(t, 10*time.Second), http.MethodPost, s.APIURL()+"app/installations/4242/access_tokens", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+appJWT(t, keyPEM))
	if override != "" {
		req.Header.Set("X-GitHub-Stateless-S2S-Token", override)
	}
	resp, err := s.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, resp.StatusCode, string(b))
	var out struct{ Token string }
	require.NoError(t, json.Unmarshal(b, &out))
	return out.Token
}

// stateless tells the two forms apart: ghs_APPID_JWT has two dots, the
// classic form none.
func stateless(t *testing.T, tok string) bool {
	t.Helper()
	require.True(t, strings.HasPrefix(tok, "ghs_"), tok)
	if !strings.Contains(tok, ".") {
		assert.Regexp(t, `^ghs_[0-9a-f]+$`, tok, "the classic form")
		return false
	}
	assert.True(t, strings.HasPrefix(tok, "ghs_42_eyJ"), "ghs_APPID_JWT: %s", tok)
	assert.Equal(t, 2, strings.Count(tok, "."), tok)
	assert.Greater(t, len(tok), 500, "about 520 characters, as GitHub's")
	return true
}

// Not parallel: the default alternates across the process, so two tokens
// minted in a row are one of each form only when no other test mints.
func TestInstallationTokenForms(t *testing.T) {
	t.Run("DefaultBoth", func(t *testing.T) {
		s := newServer(t)
		key, keyPEM := newAppKey(t)
		s.AddApp(42, &key.PublicKey, 4242)
		seen := map[bool]int{}
		for range 4 {
			tok := mintInstallationToken(t, s, keyPEM, "")
			seen[stateless(t, tok)]++
			status, body := restGet(t, s, "repos/"+repo, "token "+tok)
			assert.Equal(t, http.StatusOK, status, "either form authenticates: %s", body)
			assert.Equal(t, logredact.Marker, logredact.String(tok), "the redactor knows both forms")
		}
		assert.Equal(t, map[bool]int{true: 2, false: 2}, seen, "the forms alternate")
	})
	for _, tc := range []struct {
		name     string
		form     fakegithub.InstallationTokenForm
		override string
		want     bool
	}{
		{"Stateless", fakegithub.InstallationTokensStateless, "", true},
		{"Classic", fakegithub.InstallationTokensClassic, "", false},
		{"HeaderEnables", fakegithub.InstallationTokensClassic, "enabled", true},
		{"HeaderDisables", fakegithub.InstallationTokensStateless, "disabled", false},
		{"OtherValueIgnored", fakegithub.InstallationTokensClassic, "true", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newServer(t, fakegithub.WithInstallationTokens(tc.form))
			key, keyPEM := newAppKey(t)
			s.AddApp(42, &key.PublicKey, 4242)
			for range 2 {
				tok := mintInstallationToken(t, s, keyPEM, tc.override)
				assert.Equal(t, tc.want, stateless(t, tok))
				status, _ := restGet(t, s, "repos/"+repo, "Bearer "+tok)
				assert.Equal(t, http.StatusOK, status)
			}
		})
	}
}
