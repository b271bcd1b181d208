package configfile

import (
	"fmt"
	"net"
	"net/url"
	"regexp"
	"strings"
)

// ErrAt returns an *Error about key, located where its value came from:
// for the rules of a table that are not the file's own (BackendSection).
func (c *File) ErrAt(key, format string, args ...any) error { return c.errAt(key, format, args...) }

// errAt returns an *Error about key, located where its value came from.
func (c *File) errAt(key, format string, args ...any) error {
	o := c.Origins[key]
	w := o.Where
	if w == "" {
		w = string(o.Kind)
	}
	return &Error{Where: w, Key: key, Msg: fmt.Sprintf(format, args...)}
}

func (c *File) validate() error {
	if err := c.validateFleet(); err != nil {
		return err
	}
	if err := c.validateWarm(); err != nil {
		return err
	}
	if g := c.Daemon.HungGrace; g < MinHungGrace || g > MaxHungGrace {
		return c.errAt("daemon.hung_grace", "%s is outside %s to %s", g, MinHungGrace, MaxHungGrace)
	}
	switch c.Log.Format {
	case "text", "json":
	default:
		return c.errAt("log.format", "%q is not text or json", c.Log.Format)
	}
	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		return c.errAt("log.level", "%q is not debug, info, warn or error", c.Log.Level)
	}
	if err := checkHTTPURL(c.GitHub.URL); err != nil {
		return c.errAt("github.url", "%v (for example https://github.com or https://ghes.example.com)", err)
	}
	if c.GitHub.APIURL != "" {
		if err := checkHTTPURL(c.GitHub.APIURL); err != nil {
			return c.errAt("github.api_url", "%v (for example https://ghes.example.com/api/v3), or leave it out to derive it from url", err)
		}
	}
	if c.GitHub.TokenEnv == "" {
		return c.errAt("github.token_env", "must name an environment variable (default %s)", DefaultTokenEnv)
	}
	if !envNameRE.MatchString(c.GitHub.TokenEnv) {
		return c.errAt("github.token_env", "%q is not an environment variable name (letters, digits and _, not starting with a digit; default %s)", c.GitHub.TokenEnv, DefaultTokenEnv)
	}
	if c.GitHub.UsesApp() {
		var missing []string
		if c.GitHub.AppID == 0 && c.GitHub.ClientID == "" {
			missing = append(missing, "app_id (or client_id)")
		}
		if c.GitHub.InstallationID == 0 {
			missing = append(missing, "installation_id")
		}
		if c.GitHub.PrivateKeyFile == "" {
			missing = append(missing, "private_key_file")
		}
		if len(missing) > 0 {
			key := "github.app_id"
			for _, k := range []string{"github.app_id", "github.client_id", "github.installation_id", "github.private_key_file"} {
				if c.Origins[k].Kind != FromDefault {
					key = k
					break
				}
			}
			return c.errAt(key, "GitHub App authentication also needs %s in [github]", strings.Join(missing, " and "))
		}
	}
	for _, k := range []struct {
		key, addr string
	}{{"webhook.listen", c.Webhook.Listen}, {"daemon.metrics_addr", c.Daemon.MetricsAddr}} {
		if k.addr == "" {
			continue
		}
		if _, _, err := net.SplitHostPort(k.addr); err != nil {
			return c.errAt(k.key, "%q is not HOST:PORT or :PORT (for example 127.0.0.1:%s)", k.addr, DefaultMetricsPort)
		}
	}
	if c.Admission.MaxSpares < -1 || c.Admission.MaxSpares > 1024 {
		return c.errAt("admission.max_spares", "%d is not between -1 (no warm spares) and 1024 (0: the default, 8)", c.Admission.MaxSpares)
	}
	if c.Store.PasswordFile != "" && c.Store.URL == "" {
		return c.errAt("store.password_file", "is set but [store] url is not: the password is for a PostgreSQL store (url = \"postgres://user@host/database\")")
	}
	if c.Webhook.Listen != "" && c.Webhook.SecretEnv == "" {
		return c.errAt("webhook.secret_env", "webhooks need a secret: name the environment variable holding it")
	}
	return nil
}

// CheckMemoryReserve refuses an [admission] memory_reserve that is not
// less than the host's memory (total bytes): admission would never start
// a runner, and the daemon would wait for ever without a word. It is
// checked where the daemon is built, the machine at hand.
func (c *File) CheckMemoryReserve(total uint64) error {
	if total == 0 || c.Admission.MemoryReserve.Bytes() < total {
		return nil
	}
	return c.errAt("admission.memory_reserve", "%s is not less than this host's memory (%s): no runner could ever start; lower it (default %s)",
		c.Admission.MemoryReserve, Size(total), DefaultMemoryReserve)
}

// envNameRE is what a shell accepts as a variable name (POSIX, "Shell
// Variables"): a name it cannot export is one no token can be in.
var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}
