package configfile

import (
	"path"
	"strings"
)

// Warm configures warm jobs (docs/warm.md): each repository's jobs run in
// workspace slots kept between them, with the tools' caches in them.
type Warm struct {
	// Enabled (on by default) runs the attempts of repository policies
	// in slots; a policy's own `cold` switch turns one policy off.
	Enabled bool `toml:"enabled" env:"RUNNER_MANAGER_WARM_ENABLED"`
	// Cap bounds the slots of this host ("20GiB"); the least recently used
	// slot no attempt holds is evicted past it.
	Cap Size `toml:"cap" env:"RUNNER_MANAGER_WARM_CAP"`
	// HomeFiles are copied from the manager's HOME into each native
	// attempt's fresh HOME (".gitconfig", ".ssh/known_hosts").
	HomeFiles []string `toml:"home_files" env:"RUNNER_MANAGER_WARM_HOME_FILES"`
	// HomeLinks are linked from the manager's HOME into it: toolchains a
	// job runs from HOME (".rustup", ".pyenv"), shared by every job.
	HomeLinks []string `toml:"home_links" env:"RUNNER_MANAGER_WARM_HOME_LINKS"`
	// SharedHome gives native runners the manager's own HOME, as before
	// fresh HOMEs: every job of every repository writes the same one.
	SharedHome bool `toml:"shared_home" env:"RUNNER_MANAGER_WARM_SHARED_HOME"`
}

// DefaultWarmCap is the slots' cap when the file names none.
const DefaultWarmCap = Size(20 << 30)

// DefaultWarm is the [warm] section's defaults.
func DefaultWarm() Warm {
	return Warm{Enabled: true, Cap: DefaultWarmCap, HomeFiles: []string{".gitconfig", ".ssh/known_hosts"}}
}

func (c *File) validateWarm() error {
	if c.Warm.Enabled && c.Warm.Cap < 1<<20 {
		return c.errAt("warm.cap", "%s is too small for a workspace (at least 1MiB; turn warm jobs off with enabled = false)", c.Warm.Cap)
	}
	for _, key := range []struct {
		name  string
		names []string
	}{{"warm.home_files", c.Warm.HomeFiles}, {"warm.home_links", c.Warm.HomeLinks}} {
		for _, n := range key.names {
			if !relativeInHome(n) {
				return c.errAt(key.name, "%q must be a path relative to HOME, inside it (for example .gitconfig)", n)
			}
		}
	}
	return nil
}

// relativeInHome reports whether name is a path under HOME: relative,
// not leaving it.
func relativeInHome(name string) bool {
	clean := path.Clean(strings.ReplaceAll(name, `\`, "/"))
	return name != "" && clean != "." && clean != ".." && !strings.HasPrefix(clean, "../") && !path.IsAbs(clean) &&
		!(len(clean) > 1 && clean[1] == ':')
}
