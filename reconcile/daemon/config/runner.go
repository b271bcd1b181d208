package config

// Runner configures how the daemon keeps its runner up to date.
type Runner struct {
	// AutoUpdate installs actions/runner's newest release when there is
	// one (checked at start, every 6 hours, and every 10 minutes while a
	// deprecated runner holds a policy's launches), verified against its
	// checksum; policies without a runner directory launch it from then
	// on, running attempts finish on theirs, and runners nothing uses any
	// more are removed.
	AutoUpdate bool `toml:"auto_update" env:"RUNNER_MANAGER_RUNNER_AUTO_UPDATE"`
}
