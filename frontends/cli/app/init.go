package app

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/configfile"
)

// InitCmd sets a host up.
type InitCmd struct {
	GitHubURL string `name:"github-url" help:"GitHub's web URL (default https://github.com; your server's for GitHub Enterprise Server)." placeholder:"URL"`
	TokenEnv  string `help:"The environment variable holding the token (default GITHUB_TOKEN)." placeholder:"NAME"`
	TokenFile string `help:"A file holding the token instead (it must be chmod 600)." placeholder:"FILE" type:"path"`
	scopeFlags
	Force   bool `help:"Overwrite an existing configuration file."`
	NoCheck bool `help:"Do not contact GitHub."`
}

// Help is the long help of init.
func (c *InitCmd) Help() string {
	return `init writes a commented configuration file (see --config; the default is
$XDG_CONFIG_HOME/runner-manager/config.toml), creates the data directory
(mode 0700) with this host's identity and journal, and checks the GitHub
credentials: that GitHub accepts them and, with --repo, --org or
--enterprise, that they can manage that scope's runners. It says which
permission is missing.

The token itself never goes in the file: export it (GITHUB_TOKEN by
default) or keep it in a file only you can read (--token-file).`
}

// Run sets the host up.
func (c *InitCmd) Run(ctx context.Context, a *App) error {
	scope, hasScope, err := c.scope()
	if err != nil {
		return err
	}
	path, err := a.ConfigPath()
	if err != nil {
		return err
	}
	if _, err := os.Stat(path); err == nil && !c.Force {
		return invalid("%s exists: edit it, or overwrite it with --force", path)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	a.createsDataDir = true
	if err := c.checkFlags(a); err != nil {
		return err
	}
	dataDir := a.cli.DataDir
	if dataDir == "" && c.Force {
		// --force rewrites the file, not where the journal is.
		dataDir = configfile.DataDirOf(path)
	}
	content := configfile.Template(configfile.TemplateData{GitHubURL: c.GitHubURL, TokenEnv: c.TokenEnv, TokenFile: c.TokenFile, DataDir: dataDir})
	if err := writeCheckedConfig(path, content); err != nil {
		return err
	}
	a.cli.Config = path
	a.cfg = nil
	a.printf("wrote %s\n", path)
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	host, err := a.Host(ctx)
	if err != nil {
		return err
	}
	a.printf("data directory %s (host %s, %s)\n", cfg.DataDir, host.Name, host.ID)

	next := nextSteps{scope: scope, hasScope: hasScope, tokenEnv: cfg.GitHub.TokenEnv, globals: a.givenConfig()}
	if c.NoCheck {
		a.printNext(next)
		return nil
	}
	client, err := a.GitHub()
	if errors.Is(err, configfile.ErrNoCredentials) {
		a.printf("GitHub credentials: none yet (%v)\n", err)
		next.needToken = true
		a.printNext(next)
		return nil
	}
	if err != nil {
		return err
	}
	var scopes []rm.Scope
	if hasScope {
		scopes = append(scopes, scope)
	}
	var failed, unreachable *check
	for _, ch := range checkGitHub(ctx, client, scopes) {
		a.printf("%s\n", ch)
		switch {
		case ch.Unreachable:
			unreachable = &ch
		case !ch.OK && failed == nil:
			failed = &ch
		}
	}
	switch {
	case unreachable != nil:
		cause, _, _ := strings.Cut(unreachable.Fix, "\n")
		return rm.WithClass(rm.ClassUnavailable, fmt.Errorf("the configuration was written, but could not reach GitHub at %s: %s: check [github] url / api_url in %s and the network, then run `runner-manager doctor`",
			client.APIURL(), cause, path))
	case failed != nil:
		fix, _, _ := strings.Cut(failed.Fix, "\n")
		return fmt.Errorf("the configuration was written, but %s (%s): fix that, then run `runner-manager doctor`", failed.What, fix)
	}
	a.printNext(next)
	return nil
}

// writeCheckedConfig writes content to path (0600, atomically) once it
// loads as a configuration file.
func writeCheckedConfig(path, content string) error {
	tmp, err := os.CreateTemp("", "runner-manager-init-*.toml")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(content); err != nil {
		tmp.Close()
		return err
	}
	tmp.Close()
	if _, err := configfile.Load(configfile.Sources{Path: tmp.Name(), Explicit: true, Backends: backend.Configs()}); err != nil {
		return fmt.Errorf("%w: %v", rm.ErrInvalid, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	if err := writeFileAtomic(path, []byte(content), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// nextSteps are what init tells a person to do next: with the scope given
// to init (--repo, --org, --enterprise), its own; else placeholders.
type nextSteps struct {
	scope     rm.Scope
	hasScope  bool
	needToken bool
	tokenEnv  string
	// globals are the --config given to init, for the commands it
	// prints: without it those would open another journal.
	globals string
}

// checkFlags checks init's own flags as configuration values, so that an
// error names the flag and its value, not a line of the file init writes.
func (c *InitCmd) checkFlags(a *App) error {
	flags := map[string]configfile.FlagValue{
		"github.url":        {Value: c.GitHubURL, Name: "--github-url"},
		"github.token_env":  {Value: c.TokenEnv, Name: "--token-env"},
		"github.token_file": {Value: c.TokenFile, Name: "--token-file"},
	}
	if a.flagGiven("--data-dir") {
		flags["data_dir"] = configfile.FlagValue{Value: a.cli.DataDir, Name: "--data-dir"}
	}
	if _, err := configfile.Load(configfile.Sources{Flags: flags}); err != nil {
		return fmt.Errorf("%w: %v", rm.ErrInvalid, err)
	}
	return nil
}

// givenConfig is the global --config flag on the command line, quoted for
// a shell, with a trailing space; "" when it was not given. The data
// directory needs no flag: init writes it in that file.
func (a *App) givenConfig() string {
	if a.cli.Config == "" || !a.flagGiven("--config") {
		return ""
	}
	path, err := filepath.Abs(a.cli.Config)
	if err != nil {
		path = a.cli.Config
	}
	return "--config " + shellQuote(path) + " "
}

func (a *App) printNext(n nextSteps) {
	scopeFlag := "--repo OWNER/REPO"
	if n.hasScope {
		switch n.scope.Kind {
		case rm.ScopeRepository:
			scopeFlag = "--repo " + n.scope.Name
		case rm.ScopeOrganization:
			scopeFlag = "--org " + n.scope.Name
		case rm.ScopeEnterprise:
			scopeFlag = "--enterprise " + n.scope.Name
		}
	}
	lines := [][2]string{}
	if n.needToken {
		lines = append(lines, [2]string{"export " + cmpOr(n.tokenEnv, "GITHUB_TOKEN") + "=...", "a token that can manage runners"})
	}
	lines = append(lines,
		[2]string{"runner-manager " + n.globals + "runner install " + scopeFlag, ""},
		[2]string{"runner-manager " + n.globals + "policy add home " + scopeFlag + " --scale-set home --max 2", ""},
		[2]string{"runner-manager " + n.globals + "run", "then jobs with runs-on: home run here"})
	a.printf("\nNext:\n")
	for _, l := range lines {
		if l[1] == "" {
			a.printf("  %s\n", l[0])
			continue
		}
		a.printf("  %-40s # %s\n", l[0], l[1])
	}
}
