package native

import (
	"os"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// baseRunnerEnv names the variables of the manager's environment every
// runner gets: what a shell, a locale and the runner's HTTP client need,
// nothing that is commonly a credential. A job's code runs in its runner's
// environment and can read all of it, so the environment is built from
// names allowed here (an entry ending in "*" is a prefix), never by copying
// the manager's and deleting known secrets: a token under a name nobody
// thought of would reach every job. SSL_CERT_FILE and SSL_CERT_DIR are paths
// the runner needs behind a TLS-inspecting proxy, like the proxy variables.
var baseRunnerEnv = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_*", "TZ", "TMPDIR",
	"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// runnerOwnEnv are the variables the launcher sets itself: a value of the
// same name in the manager's environment or in a spec's Env never wins.
var runnerOwnEnv = []string{
	"ACTIONS_RUNNER_INPUT_JITCONFIG", "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE",
	platform.AttemptEnv, "RUNNER_ALLOW_RUNASROOT",
}

// WithPassEnv names more variables of the manager's environment that
// runners get, besides the base allow-list (PATH, HOME, USER, LOGNAME, SHELL,
// LANG, LC_*, TZ, TMPDIR, the proxy variables, SSL_CERT_FILE/DIR and, on
// Windows, the system's own variables). A name ending in "*" passes every
// variable with that prefix. Pass only what jobs may read: every variable a
// runner has is visible to the code of every job it runs. Values the policy
// sets itself go in rm.LaunchSpec.Env instead.
func WithPassEnv(names ...string) Option {
	return func(l *Launcher) { l.passEnv = append(l.passEnv, names...) }
}

// environ is the runner's environment for spec: the allowed variables of
// the manager's environment, then spec.Env, then what the runner needs;
// one entry per name, later entries winning.
func (l *Launcher) environ(spec rm.LaunchSpec) []string {
	return runnerEnviron(os.Environ(), l.passEnv, spec, runningAsRoot())
}

// RunnerEnviron is the environment any launcher gives a runner for spec,
// built from the manager's environment by the allow-list (see WithPassEnv;
// pass names more variables): a launcher of its own uses it so that no
// variable of the manager beyond the list reaches a job.
func RunnerEnviron(spec rm.LaunchSpec, pass ...string) []string {
	return runnerEnviron(os.Environ(), pass, spec, runningAsRoot())
}

// runnerEnviron builds a runner's environment from parent (the manager's
// environment) keeping only the names allowed by the base list, the
// platform's list and pass.
func runnerEnviron(parent, pass []string, spec rm.LaunchSpec, asRoot bool) []string {
	var b envBuilder
	for _, kv := range parent {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue // Windows keeps "=C:=C:\dir" entries: not ours to pass
		}
		if envMatches(name, baseRunnerEnv) || envMatches(name, platformRunnerEnv) || envMatches(name, pass) {
			b.set(name, kv)
		}
	}
	for _, kv := range spec.Env {
		name, _, ok := strings.Cut(kv, "=")
		if ok && name != "" && !envMatches(name, runnerOwnEnv) {
			b.set(name, kv)
		}
	}
	b.set("ACTIONS_RUNNER_INPUT_JITCONFIG", "ACTIONS_RUNNER_INPUT_JITCONFIG="+spec.JITConfig)
	b.set("ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1")
	b.set(platform.AttemptEnv, platform.AttemptEnv+"="+spec.Attempt.String())
	if asRoot {
		b.set("RUNNER_ALLOW_RUNASROOT", "RUNNER_ALLOW_RUNASROOT=1")
	}
	return b.env
}

// envMatches reports whether name is one of names (an entry ending in "*"
// is a prefix), with the platform's case rule.
func envMatches(name string, names []string) bool {
	for _, n := range names {
		if prefix, ok := strings.CutSuffix(n, "*"); ok {
			if envHasPrefix(name, prefix) {
				return true
			}
		} else if envEqual(name, n) {
			return true
		}
	}
	return false
}

// envBuilder keeps one "NAME=value" per name, in first-set order.
type envBuilder struct {
	env []string
	at  map[string]int
}

func (b *envBuilder) set(name, kv string) {
	if b.at == nil {
		b.at = map[string]int{}
	}
	key := envKey(name)
	if i, ok := b.at[key]; ok {
		b.env[i] = kv
		return
	}
	b.at[key] = len(b.env)
	b.env = append(b.env, kv)
}
