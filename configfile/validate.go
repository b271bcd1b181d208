package configfile

import (
	"fmt"
	"net"
	"net/url"
	"strings"
)

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
	switch c.VM.Accel {
	case "", "kvm", "tcg":
	default:
		return c.errAt("vm.accel", "%q is not kvm or tcg", c.VM.Accel)
	}
	switch c.VM.Network {
	case "", "restricted", "open":
	default:
		return c.errAt("vm.network", "%q is not restricted or open", c.VM.Network)
	}
	if m := c.VM.Memory; m != 0 && m < 128<<20 {
		return c.errAt("vm.memory", "%s is below 128MiB, the least a guest boots in", m)
	}
	if c.Admission.MaxSpares < -1 || c.Admission.MaxSpares > 1024 {
		return c.errAt("admission.max_spares", "%d is not between -1 (no warm spares) and 1024 (0: the default, 8)", c.Admission.MaxSpares)
	}
	if c.VM.CPUs < 0 || c.VM.CPUs > 64 {
		return c.errAt("vm.cpus", "%d is not between 1 and 64", c.VM.CPUs)
	}
	for _, f := range c.VM.Forward {
		if _, _, err := net.SplitHostPort(f); err != nil {
			return c.errAt("vm.forward", "%q is not HOST:PORT (for example \"proxy.corp:3128\")", f)
		}
	}
	if c.Store.PasswordFile != "" && c.Store.URL == "" {
		return c.errAt("store.password_file", "is set but [store] url is not: the password is for a PostgreSQL store (url = \"postgres://user@host/database\")")
	}
	if c.Webhook.Listen != "" && c.Webhook.SecretEnv == "" {
		return c.errAt("webhook.secret_env", "webhooks need a secret: name the environment variable holding it")
	}
	return nil
}

func checkHTTPURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL", s)
	}
	return nil
}
