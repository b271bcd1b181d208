package vm

import (
	"encoding/base64"
	"encoding/json"
	"net"
	"net/url"
)

// RunnerServices are the services a JIT configuration points its runner
// at, as "host:port": the runner's server (the Actions service), its
// broker, its token service and GitHub itself, read from the
// configuration's .runner and .credentials. A guest reaches them by
// default, whatever GitHub (github.com's regional service hosts, a GitHub
// Enterprise Server, a fake on loopback), with no list kept by hand. An
// undecodable configuration names none (the runner will say what is
// wrong with it).
func RunnerServices(jit string) []string {
	raw, err := base64.StdEncoding.DecodeString(jit)
	if err != nil {
		return nil
	}
	var files map[string]string
	if json.Unmarshal(raw, &files) != nil {
		return nil
	}
	file := func(name string, v any) {
		b, err := base64.StdEncoding.DecodeString(files[name])
		if err == nil {
			_ = json.Unmarshal(b, v)
		}
	}
	var runner struct {
		ServerURL   string `json:"serverUrl"`
		ServerURLV2 string `json:"serverUrlV2"`
		GitHubURL   string `json:"gitHubUrl"`
	}
	var creds struct {
		Data struct {
			AuthorizationURL string `json:"authorizationUrl"`
		} `json:"data"`
	}
	file(".runner", &runner)
	file(".credentials", &creds)
	var out []string
	for _, u := range []string{runner.ServerURL, runner.ServerURLV2, runner.GitHubURL, creds.Data.AuthorizationURL} {
		if hp := HostPortOf(u); hp != "" {
			out = append(out, hp)
		}
	}
	return out
}

// HostPortOf is the host:port an http(s) URL connects to, in the form
// Settings.Forward takes; "" for another URL.
func HostPortOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Hostname() == "" {
		return ""
	}
	port := u.Port()
	switch {
	case port != "":
	case u.Scheme == "https":
		port = "443"
	case u.Scheme == "http":
		port = "80"
	default:
		return ""
	}
	return net.JoinHostPort(u.Hostname(), port)
}
