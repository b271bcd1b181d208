package app

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/runner-manager/runner-manager/internal/bytesize"

	"github.com/runner-manager/runner-manager/runnerpkg"
)

// RunnerCmd groups the runner commands.
type RunnerCmd struct {
	Install RunnerInstallCmd `cmd:"" help:"Download the runner GitHub offers, verify its checksum, install it in the data directory."`
}

// RunnerInstallCmd installs a runner.
type RunnerInstallCmd struct {
	Version string `arg:"" optional:"" help:"The version to install, X.Y.Z: only the one GitHub offers now can be verified (default: that one)."`
	Latest  bool   `help:"Install the newest release of actions/runner, which may be newer than what GitHub offers the scope while a release rolls out (verified against the release's checksum)."`
	scopeFlags
}

// Help is the long help of runner install.
func (c *RunnerInstallCmd) Help() string {
	return `GitHub lists the runner packages a repository, organization or enterprise
may use, with their SHA-256. runner install takes the one for this machine,
checks the checksum, and unpacks it into <data>/runners/<version>/. Policies
without --runner-dir use the newest runner installed there; install a newer
one when GitHub deprecates yours (doctor tells; a runner that exits 7,
"version deprecated", holds its policy's launches until a newer one is
installed).

--latest takes the newest release of actions/runner instead (GitHub's
releases API), which may be newer than what GitHub offers the scope while a
release rolls out; it needs no scope.

The scope comes from --repo, --org or --enterprise, else from the first
policy.`
}

// Run installs the runner.
func (c *RunnerInstallCmd) Run(ctx context.Context, a *App) error {
	if c.Latest {
		return c.latest(ctx, a)
	}
	scope, ok, err := c.scope()
	if err != nil {
		return err
	}
	if !ok {
		scopes, err := a.policyScopes(ctx)
		if err != nil || len(scopes) == 0 {
			return invalid("say which GitHub scope to ask for runner packages: --repo OWNER/REPO, --org ORG or --enterprise SLUG")
		}
		scope = scopes[0]
	}
	client, err := a.GitHub()
	if err != nil {
		return err
	}
	dataDir, err := a.DataDir()
	if err != nil {
		return err
	}
	r, err := runnerpkg.Runner(ctx, client, scope, dataDir, downloadOptions(a, c.Version))
	return c.report(a, r, err)
}

// latest installs the newest release of the runner.
func (c *RunnerInstallCmd) latest(ctx context.Context, a *App) error {
	client, err := a.GitHub()
	if err != nil {
		return err
	}
	dataDir, err := a.DataDir()
	if err != nil {
		return err
	}
	r, err := runnerpkg.Latest(ctx, client, dataDir, downloadOptions(a, c.Version))
	return c.report(a, r, err)
}

// report prints what an install did.
func (c *RunnerInstallCmd) report(a *App, r runnerpkg.Result, err error) error {
	switch {
	case err != nil:
		return err
	case r.Already:
		a.printf("runner %s is already installed in %s\n", r.Version, r.Dir)
	default:
		a.printf("installed runner %s (sha256 %s verified) in %s\n", r.Version, r.SHA256, r.Dir)
	}
	return nil
}

// downloadOptions prints the package's URL and then how its download goes.
func downloadOptions(a *App, version string) runnerpkg.Options {
	p := &downloadProgress{w: a.Stdout, tty: isTerminal(a.Stdout)}
	return runnerpkg.Options{
		Version:     version,
		Downloading: func(url string) { a.printf("downloading %s\n", url) },
		Progress:    p.tell,
	}
}

// downloadProgress prints a download's progress: on a terminal one line
// rewritten in place; elsewhere (a log, a pipe) a line at each quarter, so
// a 200 MB package makes four lines, not hundreds.
type downloadProgress struct {
	w       io.Writer
	tty     bool
	quarter int64 // the last quarter printed, off a terminal
	done    int64
	width   int // of the line on the terminal, to blank what is left of it
}

func (p *downloadProgress) tell(done, total int64) {
	if done < p.done {
		p.quarter = 0 // tried again: from the start
	}
	p.done = done
	end := total > 0 && done == total
	line := fmt.Sprintf("downloaded %s", bytesize.Format(uint64(done)))
	if total > 0 {
		line = fmt.Sprintf("downloaded %s of %s (%d %%)", bytesize.Format(uint64(done)), bytesize.Format(uint64(total)), done*100/total)
	}
	if p.tty {
		pad := max(p.width-len(line), 0)
		p.width = len(line)
		fmt.Fprintf(p.w, "\r%s%s", line, strings.Repeat(" ", pad))
		if end {
			fmt.Fprintln(p.w)
		}
		return
	}
	if total <= 0 {
		return // the size unknown: only the end, told with it
	}
	if q := done * 4 / total; q > p.quarter {
		p.quarter = q
		fmt.Fprintln(p.w, line)
	}
}
