package configfile

// Runner configures how the daemon keeps its runner up to date.
type Runner struct {
	// AutoUpdate (on by default) installs actions/runner's newest release
	// when there is one (checked at start, every 6 hours, at once when a
	// policy's runner is refused as deprecated, and every minute while
	// that lasts), verified against its checksum, and proves it on one
	// attempt; once that attempt's runner listened or ran a job, policies
	// without a runner directory launch it from then on (running attempts
	// finish on theirs) and runners nothing uses any more are removed. A
	// failed update (download, checksum, proof) leaves the installed runner
	// serving and is not tried again for 6 hours unless a newer release
	// comes. GitHub refuses runners more than 30 days behind the newest
	// release, so turning this off means installing updates by hand.
	AutoUpdate bool `toml:"auto_update" env:"RUNNER_MANAGER_RUNNER_AUTO_UPDATE"`
	// JobReport (on by default) makes every job of the native backend
	// show its own footprint (peak memory, average and busiest CPU,
	// duration, policy and host) in its log and step summary, through the
	// runner's job hooks, chaining any hook the runner already had; and
	// names each attempt's job in the journal where GitHub did not.
	JobReport bool `toml:"job_report" env:"RUNNER_MANAGER_RUNNER_JOB_REPORT"`
}

// DefaultAutoUpdate: runner updates are on unless turned off.
const DefaultAutoUpdate = true

// DefaultJobReport: every job reports its footprint unless turned off.
const DefaultJobReport = true
