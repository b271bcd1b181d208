package container

import (
	rm "github.com/runner-manager/runner-manager"
	"os"
	"strings"
)

// proxyEnv is what every container gets of the manager's environment
// unasked: the runner's HTTP client needs the proxy to reach GitHub. The
// rest (PATH, HOME, locale) is the image's.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy"}

// Variables the launcher sets itself; a spec or the manager's environment
// never overrides them.
const (
	envJITConfig        = "ACTIONS_RUNNER_INPUT_JITCONFIG"
	envReturnDeprecated = "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE"
	envAttempt          = "RUNNER_MANAGER_ATTEMPT"
	envAllowRoot        = "RUNNER_ALLOW_RUNASROOT"
)

func ownEnv(name string) bool {
	switch name {
	case envJITConfig, envReturnDeprecated, envAttempt, envAllowRoot:
		return true
	}
	return false
}

// containerEnv is the container's environment for spec: the proxy
// variables and the policy's PassEnv names from the manager's environment
// (parent), then spec.Env, then the launcher's own variables; one entry per
// name, later ones winning. The image's own environment (PATH, HOME) comes
// under it: the engine merges the two.
//
// RUNNER_ALLOW_RUNASROOT=1 is always set: the runner refuses uid 0 without
// it, and in a container uid 0 is the container's root, inside the
// boundary the container draws.
func containerEnv(parent, pass []string, spec rm.LaunchSpec) []string {
	var b envList
	for _, kv := range parent {
		name, _, ok := strings.Cut(kv, "=")
		if ok && name != "" && !ownEnv(name) && (matches(name, proxyEnv) || matches(name, pass)) {
			b.set(name, kv)
		}
	}
	for _, kv := range spec.Env {
		name, _, ok := strings.Cut(kv, "=")
		if ok && name != "" && !ownEnv(name) {
			b.set(name, kv)
		}
	}
	b.set(envJITConfig, envJITConfig+"="+spec.JITConfig)
	b.set(envReturnDeprecated, envReturnDeprecated+"=1")
	b.set(envAttempt, envAttempt+"="+spec.Attempt.String())
	b.set(envAllowRoot, envAllowRoot+"=1")
	return b.env
}

func environ() []string { return os.Environ() }

// matches reports whether name is one of names (an entry ending in "*" is
// a prefix).
func matches(name string, names []string) bool {
	for _, n := range names {
		if prefix, ok := strings.CutSuffix(n, "*"); ok {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		} else if name == n {
			return true
		}
	}
	return false
}

// envList keeps one "NAME=value" per name, in first-set order.
type envList struct {
	env []string
	at  map[string]int
}

func (b *envList) set(name, kv string) {
	if b.at == nil {
		b.at = map[string]int{}
	}
	if i, ok := b.at[name]; ok {
		b.env[i] = kv
		return
	}
	b.at[name] = len(b.env)
	b.env = append(b.env, kv)
}
