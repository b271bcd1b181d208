package tui

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/alecthomas/kong"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/logredact"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
)

// mainFlags are runner-manager-tui's flags: just enough to find the data
// directory, the way runner-manager finds it.
type mainFlags struct {
	DataDir string           `name:"data-dir" placeholder:"DIR" help:"Data directory holding the journal and the daemon's socket (default: $$RUNNER_MANAGER_DATA_DIR, else data_dir of the configuration file, else $$XDG_STATE_HOME/runner-manager)."`
	Config  string           `name:"config" env:"RUNNER_MANAGER_CONFIG" placeholder:"FILE" help:"Configuration file (TOML) that may name the data directory (default: $$XDG_CONFIG_HOME/runner-manager/config.toml, if it exists)."`
	ASCII   bool             `name:"ascii" help:"Draw frames, rules and bars in ASCII, for a terminal or font without box-drawing glyphs (also $$RUNNER_MANAGER_TUI_ASCII=1; TERM=dumb implies it, NO_COLOR drops colour)."`
	Version kong.VersionFlag `help:"Print the version (module version, VCS commit and date) and exit."`
}

// DaemonSource is the Source of a TUI beside a daemon: the journal st of
// dataDir, with the live figures, stops and policy refreshes of the daemon
// serving dataDir (reached over its socket; without it, the journal's view).
func DaemonSource(st store.Store, dataDir string) *StoreSource {
	daemon := localapi.NewClient(dataDir)
	return &StoreSource{
		Store:   st,
		DataDir: dataDir,
		Live:    daemon.Status,
		Stop:    daemon.StopAttempt,
		Changed: daemon.Refresh,
	}
}

// exitCode carries kong's exit out of a parse (for --help).
type exitCode int

// Main is the runner-manager-tui program: it finds the data directory
// (flags, environment, configuration file), opens the journal there with
// open, and shows it with the live figures of the daemon serving it, until
// the user quits or ctx ends. It returns the exit status: 0, 1 on a
// failure, 2 on a usage or configuration error.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer, open OpenStore) (code int) {
	stderr = logredact.NewWriter(stderr) // an error may echo a credential
	var flags mainFlags
	parser, err := kong.New(&flags,
		kong.Name("runner-manager-tui"),
		kong.Description("A live terminal view of runner-manager: host memory and admission, policies, runner attempts and their logs. Run it beside `runner-manager run`; without the daemon it shows what the journal holds."),
		kong.Writers(stdout, stderr),
		kong.Exit(func(code int) { panic(exitCode(code)) }),
		kong.Vars{"version": "runner-manager-tui " + rm.ReadBuild().String()},
	)
	if err != nil {
		fmt.Fprintf(stderr, "runner-manager-tui: %v\n", err)
		return 1
	}
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitCode)
			if !ok {
				panic(r)
			}
			code = int(c)
		}
	}()
	if _, err := parser.Parse(args); err != nil {
		fmt.Fprintf(stderr, "runner-manager-tui: %v (see --help)\n", err)
		return 2
	}

	cfgPath, explicit := flags.Config, flags.Config != ""
	if !explicit {
		cfgPath, _ = configfile.DefaultConfigPath(nil) // no home: no default file
	}
	cfg, err := configfile.Load(configfile.Sources{
		Path:     cfgPath,
		Explicit: explicit,
		Flags:    map[string]configfile.FlagValue{"data_dir": {Value: flags.DataDir, Name: "--data-dir"}},
	})
	if err != nil {
		fmt.Fprintf(stderr, "runner-manager-tui: %v\n", err)
		return 2
	}
	st, err := open(ctx, cfg, stderr)
	if err != nil {
		fmt.Fprintf(stderr, "runner-manager-tui: %v\n", err)
		if errors.Is(err, ErrUsage) {
			return 2
		}
		return 1
	}
	defer st.Close()

	src := DaemonSource(st, cfg.DataDir)
	src.StaleAfter = status.StaleAfter(time.Duration(cfg.Fleet.Heartbeat))
	if err := Run(ctx, src, Options{Look: Look{ASCII: flags.ASCII}}); err != nil {
		fmt.Fprintf(stderr, "runner-manager-tui: %v\n", err)
		return 1
	}
	return 0
}
