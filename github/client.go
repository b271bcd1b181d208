package github

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	gh "github.com/google/go-github/v88/github"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/backoff"
)

// DefaultWebURL is github.com; a GitHub Enterprise Server is configured by
// its own web URL.
const DefaultWebURL = "https://github.com"

// App holds GitHub App credentials. Either AppID or ClientID names the app
// (GitHub accepts both as the JWT issuer).
type App struct {
	AppID          int64
	ClientID       string
	InstallationID int64
	// PrivateKeyPEM is the app's private key. It is a secret.
	PrivateKeyPEM []byte
}

// Config says where GitHub is and how to authenticate. Exactly one of Token
// and App is set.
type Config struct {
	// WebURL is GitHub's web address (default https://github.com); runners
	// are configured for a URL under it.
	WebURL string
	// APIURL is the REST base. Derived when empty: https://api.github.com
	// for github.com, WebURL + "/api/v3" for a GitHub Enterprise Server.
	APIURL string
	// Token is a personal access token (classic or fine-grained). A secret.
	Token string
	// App authenticates as a GitHub App installation instead of a token.
	App *App
	// UserAgent names the program to GitHub; default "runner-manager/<version>".
	UserAgent string
	// Transport sends the requests (default: a clone of
	// http.DefaultTransport). Tests point it at a fake.
	Transport http.RoundTripper
	// Logger receives retries and rate-limit notes (default: discarded).
	// Tokens never reach it.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Sleep waits d or until ctx ends (default: a timer). Tests replace it
	// so that backoffs do not wait.
	Sleep func(ctx context.Context, d time.Duration) error
	// Retry tunes the backoff on 5xx and network errors of idempotent
	// requests; zero fields take the defaults.
	Retry RetryPolicy
	// ETagCacheSize bounds the conditional-request cache, in responses
	// (default 512; negative disables it).
	ETagCacheSize int
}

// RetryPolicy is the backoff of idempotent requests on 5xx and network
// errors: Tries attempts in all, waiting Base·2^n (at most Cap) between
// two tries, the upper half of it jittered.
type RetryPolicy struct {
	Tries int           // default 4
	Base  time.Duration // default 200 ms
	Cap   time.Duration // default 5 s
	// Quiet logs each retry at debug, not warn: a one-shot command's
	// person reads the outcome, not every try before it.
	Quiet bool
}

// level is the level a retry is logged at.
func (p RetryPolicy) level() slog.Level {
	if p.Quiet {
		return slog.LevelDebug
	}
	return slog.LevelWarn
}

func (p RetryPolicy) backoff() backoff.Policy { return backoff.Policy{Base: p.Base, Cap: p.Cap} }

// outage is the pace of a watch's reconnect (scale-set and classic) after
// failures in a row: from about 1 s, doubling, capped at MaxOutageWait, so
// that GitHub back from a 5xx storm, an outage, a restart or revoked
// credentials is served again within seconds (one request per few seconds
// while it is down costs nothing that matters).
var outage = backoff.Policy{Base: time.Second, Cap: rm.MaxOutageWait}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.Tries <= 0 {
		p.Tries = 4
	}
	if p.Base <= 0 {
		p.Base = 200 * time.Millisecond
	}
	if p.Cap <= 0 {
		p.Cap = 5 * time.Second
	}
	return p
}

// Client talks to one GitHub (github.com or an Enterprise Server) with one
// set of credentials. Every REST call of both modes goes through its
// rate-limit aware transport, so one Budget covers them all. A Client is
// safe for concurrent use.
type Client struct {
	cfg    Config
	webURL *url.URL
	apiURL *url.URL
	log    *slog.Logger

	limiter *limiter
	// classic holds the demand watchers its classic targets share.
	classic demandHub
	// runnerLists holds the REST runner lists its classic targets share.
	runnerLists runnerLists
	// rest sends REST calls: auth, then the limiter (budget, retries, ETags).
	rest *http.Client
	gh   *gh.Client
	// raw sends requests that carry their own Authorization (the scale-set
	// client's): the limiter without our auth.
	raw http.RoundTripper
}

// New checks cfg and returns a Client. It sends nothing.
func New(cfg Config) (*Client, error) {
	if cfg.WebURL == "" {
		cfg.WebURL = DefaultWebURL
	}
	web, err := parseBaseURL("web URL", cfg.WebURL)
	if err != nil {
		return nil, err
	}
	if cfg.APIURL == "" {
		cfg.APIURL = deriveAPIURL(web)
	}
	api, err := parseBaseURL("API URL", cfg.APIURL)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.Token != "" && cfg.App != nil:
		return nil, errors.New("github: configure either a token or a GitHub App, not both")
	case cfg.Token == "" && cfg.App == nil:
		return nil, errors.New("github: no credentials: set a personal access token or a GitHub App (id, installation id, private key)")
	case cfg.App != nil:
		if err := cfg.App.validate(); err != nil {
			return nil, err
		}
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "runner-manager/" + moduleVersion()
	}
	if cfg.Transport == nil {
		cfg.Transport = http.DefaultTransport.(*http.Transport).Clone()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Sleep == nil {
		cfg.Sleep = sleepCtx
	}
	cfg.Retry = cfg.Retry.withDefaults()
	if cfg.ETagCacheSize == 0 {
		cfg.ETagCacheSize = 512
	}

	c := &Client{cfg: cfg, webURL: web, apiURL: api, log: cfg.Logger}
	c.limiter = newLimiter(cfg, api)

	auth, identity, err := c.authTransport(cfg.Transport)
	if err != nil {
		return nil, err
	}
	rest := &limitTransport{lim: c.limiter, next: auth, identity: identity, userAgent: cfg.UserAgent, etags: cfg.ETagCacheSize > 0}
	c.rest = &http.Client{Transport: rest}
	c.raw = &limitTransport{lim: c.limiter, next: cfg.Transport}

	base := api.String() + "/"
	c.gh, err = gh.NewClient(
		gh.WithTransport(rest),
		gh.WithUserAgent(cfg.UserAgent),
		gh.WithURLs(&base, &base),
		// Our transport refuses while the budget is exhausted, with our
		// clock and our error type; go-github's own check would only
		// duplicate it.
		gh.WithDisableRateLimitCheck(),
	)
	if err != nil {
		return nil, fmt.Errorf("github: REST client: %w", err)
	}
	return c, nil
}

// Budget is the core REST budget as last seen in a response's headers.
func (c *Client) Budget() rm.Budget { return c.limiter.budget() }

// SecondaryHold is until when a secondary (abuse) rate limit GitHub
// answered holds this client's requests back; zero when none holds.
func (c *Client) SecondaryHold() time.Time { return c.limiter.secondaryHold() }

// WebURL is GitHub's web address, without a trailing slash.
func (c *Client) WebURL() string { return c.webURL.String() }

// APIURL is the REST base, without a trailing slash.
func (c *Client) APIURL() string { return c.apiURL.String() }

// HTTPClient sends REST requests with the client's credentials through its
// rate-limit aware transport, for calls this package does not wrap.
func (c *Client) HTTPClient() *http.Client { return c.rest }

func (a *App) validate() error {
	switch {
	case a.AppID == 0 && a.ClientID == "":
		return errors.New("github: the GitHub App needs its app id or client id")
	case a.InstallationID == 0:
		return errors.New("github: the GitHub App needs its installation id (the number at the end of the installation's settings URL)")
	case len(a.PrivateKeyPEM) == 0:
		return errors.New("github: the GitHub App needs its private key (PEM file)")
	}
	return nil
}

// issuer is the JWT issuer naming the app.
func (a *App) issuer() string {
	if a.ClientID != "" {
		return a.ClientID
	}
	return strconv.FormatInt(a.AppID, 10)
}

// identity names the credentials without revealing them: the ETag cache is
// keyed by it so that two identities never share a cached body.
func identityOf(cfg Config) string {
	if cfg.App != nil {
		return fmt.Sprintf("app:%s:%d", cfg.App.issuer(), cfg.App.InstallationID)
	}
	sum := sha256.Sum256([]byte(cfg.Token))
	return "token:" + hex.EncodeToString(sum[:8])
}

func parseBaseURL(what, s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimRight(s, "/"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("github: %s %q must be an http(s) URL such as https://github.example.com", what, s)
	}
	u.RawQuery, u.Fragment = "", ""
	return u, nil
}

// deriveAPIURL is https://api.github.com for github.com (and api.<host>
// for GHE.com hosts), else the Enterprise Server's WebURL + /api/v3.
func deriveAPIURL(web *url.URL) string {
	host := strings.ToLower(web.Host)
	switch {
	case host == "github.com" || host == "www.github.com":
		return "https://api.github.com"
	case strings.HasSuffix(host, ".ghe.com"):
		return web.Scheme + "://api." + web.Host
	}
	return web.Scheme + "://" + web.Host + "/api/v3"
}

func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
