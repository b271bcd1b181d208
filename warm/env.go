package warm

import (
	"path"
	"path/filepath"
)

// CachesDir is the folder of a slot's work folder that holds the
// ecosystems' caches: beside the runner's own _tool, _temp and _actions,
// a name the runner does not use (actions/runner's Constants.cs names its
// work folder's subdirectories).
const CachesDir = "_caches"

// A cacheVar is one tool's cache setting, reached through a variable the
// tool reads; Sub is its folder under CachesDir.
type cacheVar struct {
	Name   string
	Sub    string
	Source string // the tool's documentation of the variable
	// Value, when set, makes the variable's value from the folder (a
	// tool that takes its cache as an option, not a path).
	Value func(dir string) string
}

// cacheVars are the caches a warm slot keeps, each through the variable
// its tool documents. The runner's tool cache needs none: the runner
// keeps it under its work folder (_work/_tool) unless RUNNER_TOOL_CACHE
// or AGENT_TOOLSDIRECTORY says otherwise, so it lives in the slot.
var cacheVars = []cacheVar{
	{Name: "npm_config_cache", Sub: "npm", Source: "https://docs.npmjs.com/cli/using-npm/config#cache (npm_config_<key> in the environment sets <key>)"},
	{Name: "npm_config_store_dir", Sub: "pnpm-store", Source: "https://pnpm.io/settings#storedir (pnpm reads npm's configuration formats: https://pnpm.io/configuring)"},
	{Name: "YARN_CACHE_FOLDER", Sub: "yarn", Source: "https://classic.yarnpkg.com/en/docs/cli/cache (yarn 1) and https://yarnpkg.com/configuration/yarnrc#cacheFolder (YARN_ prefix, yarn 2+)"},
	{Name: "PIP_CACHE_DIR", Sub: "pip", Source: "https://pip.pypa.io/en/stable/topics/caching/ and https://pip.pypa.io/en/stable/topics/configuration/#environment-variables"},
	{Name: "GOMODCACHE", Sub: "go-mod", Source: "https://go.dev/ref/mod#environment-variables"},
	{Name: "GOCACHE", Sub: "go-build", Source: "https://pkg.go.dev/cmd/go#hdr-Build_and_test_caching"},
	{Name: "CARGO_HOME", Sub: "cargo", Source: "https://doc.rust-lang.org/cargo/guide/cargo-home.html"},
	{Name: "GRADLE_USER_HOME", Sub: "gradle", Source: "https://docs.gradle.org/current/userguide/directory_layout.html#dir:gradle_user_home"},
	{Name: "MAVEN_OPTS", Sub: "m2", Source: "https://maven.apache.org/configure.html (MAVEN_OPTS) and https://maven.apache.org/guides/mini/guide-configuring-maven.html (maven.repo.local)",
		Value: func(dir string) string { return "-Dmaven.repo.local=" + dir }},
	{Name: "NUGET_PACKAGES", Sub: "nuget", Source: "https://learn.microsoft.com/nuget/consume-packages/managing-the-global-packages-and-cache-folders"},
	{Name: "BUN_INSTALL_CACHE_DIR", Sub: "bun", Source: "https://bun.sh/docs/install/cache"},
	{Name: "DENO_DIR", Sub: "deno", Source: "https://docs.deno.com/runtime/fundamentals/modules/#deno_dir"},
	{Name: "CCACHE_DIR", Sub: "ccache", Source: "https://ccache.dev/manual/latest.html#config_cache_dir"},
	{Name: "XDG_CACHE_HOME", Sub: "xdg", Source: "https://specifications.freedesktop.org/basedir-spec/latest/ (every tool that follows it: pip, pre-commit, Go's build cache when GOCACHE is unset)"},
}

// Var is one cache variable the manager sets, for docs and doctor.
type Var struct {
	Name, Folder, Source string
}

// Vars lists the cache variables a warm attempt gets, with their sources.
func Vars() []Var {
	out := make([]Var, len(cacheVars))
	for i, v := range cacheVars {
		out[i] = Var{Name: v.Name, Folder: CachesDir + "/" + v.Sub, Source: v.Source}
	}
	return out
}

// Env is the cache variables for a runner whose work folder is workFolder
// as the runner sees it (a host path for a native runner, a path in the
// container or guest otherwise; slash says the runner's OS separates with
// '/'). A variable set (set reports it) by the operator, in the manager's
// passed environment or the policy's own, wins: it is left out.
func Env(workFolder string, slash bool, set func(name string) bool) []string {
	join := filepath.Join
	if slash {
		join = path.Join
	}
	var env []string
	for _, v := range cacheVars {
		if set != nil && set(v.Name) {
			continue
		}
		dir := join(workFolder, CachesDir, v.Sub)
		val := dir
		if v.Value != nil {
			val = v.Value(dir)
		}
		env = append(env, v.Name+"="+val)
	}
	return env
}

// EnvNames are the names Env may set.
func EnvNames() []string {
	out := make([]string, len(cacheVars))
	for i, v := range cacheVars {
		out[i] = v.Name
	}
	return out
}
