package github_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	jwt "github.com/golang-jwt/jwt/v4"
	"github.com/runner-manager/runner-manager/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func rsaKey(t *testing.T) (*rsa.PrivateKey, []byte) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	return key, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
}

func TestAppAuth(t *testing.T) {
	key, keyPEM := rsaKey(t)
	tests := []struct {
		name    string
		app     github.App
		wantIss string
	}{
		{"AppID", github.App{AppID: 1234, InstallationID: 42, PrivateKeyPEM: keyPEM}, "1234"},
		{"ClientID", github.App{ClientID: "Iv23liABCdef", InstallationID: 42, PrivateKeyPEM: keyPEM}, "Iv23liABCdef"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tokenCalls atomic.Int64
			var mu sync.Mutex
			var issuers []string
			a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/api/v3/app/installations/42/access_tokens" && r.Method == http.MethodPost {
					tokenCalls.Add(1)
					raw := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
					claims := &jwt.RegisteredClaims{}
					_, err := jwt.ParseWithClaims(raw, claims, func(*jwt.Token) (any, error) { return &key.PublicKey, nil })
					if err != nil {
						w.WriteHeader(http.StatusUnauthorized)
						return
					}
					mu.Lock()
					issuers = append(issuers, claims.Issuer)
					mu.Unlock()
					w.WriteHeader(http.StatusCreated)
					_ = json.NewEncoder(w).Encode(map[string]any{"token": "ghs_installationtoken", "expires_at": time.Now().Add(time.Hour)})
					return
				}
				if r.Header.Get("Authorization") != "token ghs_installationtoken" {
					w.WriteHeader(http.StatusUnauthorized)
					return
				}
				_, _ = io.WriteString(w, `{"ok":true}`)
			})
			app := tt.app
			c, err := github.New(github.Config{WebURL: a.URL, App: &app})
			require.NoError(t, err)
			assert.Equal(t, a.URL+"/api/v3", c.APIURL())
			for range 3 {
				resp, body, err := get(t, c, c.APIURL()+"/repos/o/r/actions/runners")
				require.NoError(t, err)
				assert.Equal(t, 200, resp.StatusCode)
				assert.JSONEq(t, `{"ok":true}`, string(body))
			}
			assert.EqualValues(t, 1, tokenCalls.Load(), "the installation token is cached until it nears expiry")
			assert.Equal(t, []string{tt.wantIss}, issuers)
		})
	}
}

// handlerTransport serves requests in memory (no network), so timing tests
// can run in a synctest bubble.
type handlerTransport struct{ h http.Handler }

func (h handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	rec := httptest.NewRecorder()
	h.h.ServeHTTP(rec, req)
	return rec.Result(), nil
}

func TestBackoffTiming(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var n atomic.Int64
		var at []time.Duration
		start := time.Now()
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			at = append(at, time.Since(start))
			if n.Add(1) < 4 {
				w.WriteHeader(http.StatusBadGateway)
				return
			}
			_, _ = io.WriteString(w, "{}")
		})
		// The default Sleep: real timers, virtual time in the bubble.
		c, err := github.New(github.Config{WebURL: "https://ghes.example", Token: "t", Transport: handlerTransport{h}})
		require.NoError(t, err)
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodGet, c.APIURL()+"/repos/o/r", nil)
		resp, err := c.HTTPClient().Do(req)
		require.NoError(t, err)
		resp.Body.Close()
		require.Len(t, at, 4)
		for i := 1; i < 4; i++ {
			gap := at[i] - at[i-1]
			ceiling := 200 * time.Millisecond << (i - 1)
			assert.GreaterOrEqual(t, gap, ceiling/2, "gap %d", i)
			assert.LessOrEqual(t, gap, ceiling, "gap %d", i)
		}
	})
}

func TestBackoffStopsWithContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusServiceUnavailable) })
		c, err := github.New(github.Config{WebURL: "https://ghes.example", Token: "t", Transport: handlerTransport{h},
			Retry: github.RetryPolicy{Tries: 10, Base: time.Minute, Cap: time.Hour}})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.APIURL()+"/repos/o/r", nil)
		start := time.Now()
		_, err = c.HTTPClient().Do(req)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		assert.Equal(t, 90*time.Second, time.Since(start), "the backoff ends with the context, not later")
	})
}

// TestLogsRedactSecrets drives an App client through failures and checks
// neither the key nor a token reaches the logs or errors.
func TestAppSecretsNeverPrinted(t *testing.T) {
	_, keyPEM := rsaKey(t)
	a := newAPI(t, func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/access_tokens") {
			w.WriteHeader(http.StatusCreated)
			_, _ = io.WriteString(w, `{"token":"ghs_SECRETinstallationTOKEN","expires_at":"2999-01-01T00:00:00Z"}`)
			return
		}
		w.WriteHeader(http.StatusBadGateway)
	})
	var logs bytes.Buffer
	tr := http.DefaultTransport.(*http.Transport).Clone()
	c, err := github.New(github.Config{WebURL: a.URL, App: &github.App{AppID: 7, InstallationID: 9, PrivateKeyPEM: keyPEM},
		Transport: tr, Sleep: (&sleeps{}).Sleep, Logger: newTextLogger(&logs)})
	require.NoError(t, err)
	_, _, err = get(t, c, c.APIURL()+"/repos/o/r")
	require.NoError(t, err)
	require.Contains(t, logs.String(), "retrying")
	sc := bufio.NewScanner(bytes.NewReader(keyPEM))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "-----") {
			continue
		}
		assert.NotContains(t, logs.String(), line)
	}
	assert.NotContains(t, logs.String(), "ghs_SECRETinstallationTOKEN")
}
