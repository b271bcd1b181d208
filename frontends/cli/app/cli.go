package app

import (
	"github.com/alecthomas/kong"
)

// CLI is the grammar of runner-manager: global flags and the commands.
type CLI struct {
	Config    string           `help:"Configuration file (TOML). Default: $$XDG_CONFIG_HOME/runner-manager/config.toml." env:"RUNNER_MANAGER_CONFIG" placeholder:"FILE" type:"path"`
	DataDir   string           `help:"Data directory: journal, runners, attempts. Default: $$XDG_STATE_HOME/runner-manager." env:"RUNNER_MANAGER_DATA_DIR" placeholder:"DIR" type:"path"`
	LogFormat string           `help:"Log format: text or json (default text)." env:"RUNNER_MANAGER_LOG_FORMAT" placeholder:"FORMAT"`
	LogLevel  string           `help:"Log level: debug, info, warn or error (default info)." env:"RUNNER_MANAGER_LOG_LEVEL" placeholder:"LEVEL"`
	Store     string           `help:"The journal: a PostgreSQL URL (postgres://user@host/db) a fleet shares. Default: <data>/journal.db." env:"RUNNER_MANAGER_STORE" placeholder:"URL"`
	Version   kong.VersionFlag `help:"Print the version and exit."`

	Init    InitCmd    `cmd:"" group:"setup" help:"Write a commented configuration file, create the data directory, check the GitHub credentials."`
	Policy  PolicyCmd  `cmd:"" group:"setup" help:"Add, list, change, pause and remove policies: what this host serves, and how many runners."`
	Runner  RunnerCmd  `cmd:"" group:"setup" help:"Install the GitHub Actions runner."`
	VM      VMCmd      `cmd:"" group:"setup" name:"vm" help:"Build the guest images of the vm backend."`
	Auth    AuthCmd    `cmd:"" group:"setup" help:"Keep GitHub's credentials in the OS secret store (login, logout), and say which are in force (status)."`
	Service ServiceCmd `cmd:"" group:"setup" help:"Install or remove the service that runs the daemon at boot or login."`
	Update  UpdateCmd  `cmd:"" group:"setup" help:"Replace this program with the newest release (checked against its SHA256SUMS) and hand over the running daemon."`
	Doctor  DoctorCmd  `cmd:"" group:"setup" help:"Check credentials, runner, data directory and disk; find leftover runners (--fix removes them)."`

	Completion CompletionCmd `cmd:"" group:"setup" help:"Print the shell completion script for bash, zsh or fish."`

	Run   RunCmd   `cmd:"" group:"run" help:"Run the daemon in the foreground (SIGINT or SIGTERM stop it)."`
	TUI   TUICmd   `cmd:"" group:"run" name:"tui" help:"Watch and steer the daemon in a terminal UI."`
	Demo  DemoCmd  `cmd:"" group:"run" help:"Run the whole system against a built-in fake GitHub with fake runners: no token needed."`
	Bench BenchCmd `cmd:"" group:"run" help:"Measure the daemon on a simulated busy day against the built-in fake GitHub (docs/performance.md)."`

	Status   StatusCmd   `cmd:"" group:"look" help:"Show host memory, admission, each policy's runners and demand, the GitHub budget."`
	Jobs     JobsCmd     `cmd:"" group:"look" help:"List the jobs that wait (for how long, for which policy, why) and the jobs that run (on which attempt)."`
	Attempts AttemptsCmd `cmd:"" group:"look" help:"List runner attempts from the journal."`
	Attempt  AttemptCmd  `cmd:"" group:"look" help:"Show one runner attempt."`
	Logs     LogsCmd     `cmd:"" group:"look" help:"Print a runner attempt's log."`
	Weights  WeightsCmd  `cmd:"" group:"look" help:"List the heaviest jobs: p50/p90 peak memory, CPU, duration, runs."`
	Warm     WarmCmd     `cmd:"" group:"look" help:"List, prune and remove the workspace slots a repository's jobs run in, kept between them."`
}

var commandGroups = []kong.Group{
	{Key: "setup", Title: "Set up:"},
	{Key: "run", Title: "Run:"},
	{Key: "look", Title: "Look:"},
}
