package github

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"github.com/actions/scaleset"
	"github.com/hashicorp/go-retryablehttp"

	rm "github.com/runner-manager/runner-manager"
)

// scaleSetClient returns an actions/scaleset client with the Client's
// credentials whose every request passes our rate-limit transport.
func (c *Client) scaleSetClient(scope rm.Scope, log *slog.Logger) (*scaleset.Client, error) {
	configURL := scope.ConfigURL(c.webURL.String())
	info := scaleset.SystemInfo{System: "runner-manager", Version: moduleVersion(), Subsystem: "manager"}
	opts := []scaleset.HTTPOption{scaleset.WithRetryableHTTPClint(c.retryableClient()), scaleset.WithLogger(canceledAtDebug(log, c.cfg.Retry.Quiet))}
	var (
		ss  *scaleset.Client
		err error
	)
	if app := c.cfg.App; app != nil {
		ss, err = scaleset.NewClientWithGitHubApp(scaleset.ClientWithGitHubAppConfig{
			GitHubConfigURL: configURL,
			GitHubAppAuth:   scaleset.GitHubAppAuth{ClientID: app.issuer(), InstallationID: app.InstallationID, PrivateKey: string(app.PrivateKeyPEM)},
			SystemInfo:      info,
		}, opts...)
	} else {
		ss, err = scaleset.NewClientWithPersonalAccessToken(scaleset.NewClientWithPersonalAccessTokenConfig{
			GitHubConfigURL: configURL, PersonalAccessToken: c.cfg.Token, SystemInfo: info,
		}, opts...)
	}
	if err != nil {
		return nil, fmt.Errorf("scale-set client for %s: %w", scope, err)
	}
	return ss, nil
}

// retryableClient is the HTTP client handed to actions/scaleset. That
// library insists on an *http.Transport inside a retryablehttp.Client, so
// the transport is a shell whose http and https protocols are registered to
// our rate-limit transport (which does the sending, the retries of
// idempotent calls and the budget); retryablehttp itself never retries, as
// it would retry a POST. Each scaleset client gets its own instance: the
// library writes to it.
func (c *Client) retryableClient() *retryablehttp.Client {
	var rt http.RoundTripper = c.raw
	if from := scalesetAPIBase(c.webURL.String()); !strings.EqualFold(from, c.apiURL.String()) {
		rt = &rebase{from: from, to: c.apiURL.String(), next: rt}
	}
	shell := &http.Transport{TLSNextProto: map[string]func(string, *tls.Conn) http.RoundTripper{}}
	shell.RegisterProtocol("http", rt)
	shell.RegisterProtocol("https", rt)
	rc := retryablehttp.NewClient()
	rc.HTTPClient = &http.Client{Transport: shell}
	rc.RetryMax = 0
	rc.CheckRetry = func(ctx context.Context, _ *http.Response, _ error) (bool, error) { return false, nil }
	return rc
}

// scalesetAPIBase is the REST base actions/scaleset derives from a web URL.
func scalesetAPIBase(web string) string {
	u, err := parseBaseURL("web URL", web)
	if err != nil {
		return ""
	}
	host := strings.ToLower(u.Host)
	switch {
	case host == "www.github.com":
		return u.Scheme + "://api.github.com"
	case host == "github.com" || host == "github.localhost" || strings.HasSuffix(host, ".ghe.com"):
		return u.Scheme + "://api." + u.Host
	}
	return u.Scheme + "://" + u.Host + "/api/v3"
}

// rebase sends requests for the REST base actions/scaleset derived to the
// configured API URL instead.
type rebase struct {
	from, to string
	next     http.RoundTripper
}

func (r *rebase) RoundTrip(req *http.Request) (*http.Response, error) {
	u := req.URL.String()
	if len(u) >= len(r.from) && strings.EqualFold(u[:len(r.from)], r.from) && (len(u) == len(r.from) || u[len(r.from)] == '/') {
		nr := req.Clone(req.Context())
		parsed, err := nr.URL.Parse(r.to + u[len(r.from):])
		if err != nil {
			return nil, err
		}
		nr.URL, nr.Host = parsed, ""
		return r.next.RoundTrip(nr)
	}
	return r.next.RoundTrip(req)
}
