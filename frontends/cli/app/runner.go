package app

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform"
)

// RunnerCmd groups the runner commands.
type RunnerCmd struct {
	Install RunnerInstallCmd `cmd:"" help:"Download the runner GitHub offers, verify its checksum, install it in the data directory."`
}

// RunnerInstallCmd installs a runner.
type RunnerInstallCmd struct {
	Version string `arg:"" optional:"" help:"The version to install, X.Y.Z: only the one GitHub offers now can be verified (default: that one)."`
	scopeFlags
}

// Help is the long help of runner install.
func (c *RunnerInstallCmd) Help() string {
	return `GitHub lists the runner packages a repository, organization or enterprise
may use, with their SHA-256. runner install takes the one for this machine,
checks the checksum, and unpacks it into <data>/runners/<version>/. Policies
without --runner-dir use the newest runner installed there; install a newer
one when GitHub deprecates yours (doctor tells).

The scope comes from --repo, --org or --enterprise, else from the first
policy.`
}

var runnerVersionRE = regexp.MustCompile(`(\d+\.\d+\.\d+)`)

// Run installs the runner.
func (c *RunnerInstallCmd) Run(ctx context.Context, a *App) error {
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
	d, version, err := offeredRunner(ctx, client, scope)
	if err != nil {
		return err
	}
	if c.Version != "" && c.Version != version {
		return invalid("GitHub offers runner %s now, not %s; only the offered one comes with a checksum to verify (run without a version)", version, c.Version)
	}
	dataDir, err := a.DataDir()
	if err != nil {
		return err
	}
	dest := filepath.Join(dataDir, runnersDir, version)
	if _, err := os.Stat(listenerPath(dest)); err == nil {
		a.printf("runner %s is already installed in %s\n", version, dest)
		return nil
	}
	a.printf("downloading %s\n", d.URL)
	hc := &http.Client{Timeout: 15 * time.Minute}
	if err := platform.InstallRunner(ctx, hc, d.URL, d.SHA256, dest); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists but holds no runner: remove it and install again", dest)
		}
		return err
	}
	a.printf("installed runner %s (sha256 %s verified) in %s\n", version, d.SHA256, dest)
	return nil
}

// offeredRunner is the package GitHub offers scope for this machine, and
// its version.
func offeredRunner(ctx context.Context, client *github.Client, scope rm.Scope) (github.Download, string, error) {
	list, err := client.RunnerDownloads(ctx, scope)
	if err != nil {
		return github.Download{}, "", err
	}
	d, err := github.PickDownload(list, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return d, "", err
	}
	v := runnerVersionRE.FindString(d.Filename)
	if v == "" {
		return d, "", fmt.Errorf("the runner package %q names no version", d.Filename)
	}
	return d, v, nil
}
