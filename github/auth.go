package github

import (
	"fmt"
	"net/http"
	"strings"

	"github.com/bradleyfalzon/ghinstallation/v2"
	jwt "github.com/golang-jwt/jwt/v4"
)

// authTransport returns the RoundTripper adding our credentials to REST
// requests, and the identity keying the ETag cache. Credentials go only to
// the API host: a redirect to a download host never carries them.
func (c *Client) authTransport(next http.RoundTripper) (http.RoundTripper, string, error) {
	identity := identityOf(c.cfg)
	if c.cfg.App == nil {
		return &hostAuth{api: c.apiURL.Host, next: next, auth: &bearer{token: c.cfg.Token, next: next}}, identity, nil
	}
	app := c.cfg.App
	key, err := jwt.ParseRSAPrivateKeyFromPEM(app.PrivateKeyPEM)
	if err != nil {
		// The parser's message names the PEM problem, never the key.
		return nil, "", fmt.Errorf("github: the GitHub App private key is not an RSA PEM key (download a new one from the app's settings): %v", err)
	}
	signer := issuerSigner{iss: app.issuer(), rsa: ghinstallation.NewRSASigner(jwt.SigningMethodRS256, key)}
	atr, err := ghinstallation.NewAppsTransportWithOptions(next, app.AppID, ghinstallation.WithSigner(signer))
	if err != nil {
		return nil, "", fmt.Errorf("github: GitHub App transport: %w", err)
	}
	atr.BaseURL = c.apiURL.String()
	itr := ghinstallation.NewFromAppsTransport(atr, app.InstallationID)
	itr.BaseURL = c.apiURL.String()
	return &hostAuth{api: c.apiURL.Host, next: next, auth: itr}, identity, nil
}

// bearer adds a personal access token, on a clone of the request as the
// RoundTripper contract asks.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// hostAuth sends requests for the API host through auth and others (a
// redirect to a download host) straight to next, without credentials.
type hostAuth struct {
	api  string
	auth http.RoundTripper
	next http.RoundTripper
}

func (h *hostAuth) RoundTrip(req *http.Request) (*http.Response, error) {
	if strings.EqualFold(req.URL.Host, h.api) {
		return h.auth.RoundTrip(req)
	}
	return h.next.RoundTrip(req)
}

// issuerSigner signs the app JWT with the configured issuer: the client id
// when one is given (ghinstallation would write the numeric app id).
type issuerSigner struct {
	iss string
	rsa ghinstallation.Signer
}

func (s issuerSigner) Sign(claims jwt.Claims) (string, error) {
	if rc, ok := claims.(*jwt.RegisteredClaims); ok {
		c := *rc
		c.Issuer = s.iss
		claims = &c
	}
	return s.rsa.Sign(claims)
}
