// Package runnerpkg owns the runner package's whole life on this host:
// which package GitHub offers for this machine (PickDownload, Offered),
// its download, SHA-256 check and unpacking (InstallArchive) into
// <data>/runners/<version>/, the newest installed one that policies
// without a runner directory launch (Newest), the update installed on
// trial until one attempt proves it (trial.go), the automatic update that
// fetches it and prunes what nothing uses (update.go) and the daemon's
// loop that runs it and keeps GitHub's deprecation dates known (Watch),
// and what a policy whose runner GitHub refused as deprecated is told to
// do (deprecated.go). The engine asks it through rm.RunnerInstalls; what
// it needs of GitHub are its own narrow seams (Downloads, Releases,
// Watch.Deprecation), filled by github.Client.
package runnerpkg

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
)

// Downloads is what Offered asks of GitHub. It is install's own narrow
// seam, not a port of the system: one consumer, and one implementation,
// github.Client, which every caller (the CLI, doctor) passes and so
// checks at its build; nothing plugs another in.
type Downloads interface {
	RunnerDownloads(ctx context.Context, scope rm.Scope) ([]rm.RunnerDownload, error)
}

var versionRE = regexp.MustCompile(`(\d+\.\d+\.\d+)`)

// Offered returns the runner package GitHub offers scope for this machine
// (GOOS/GOARCH), and its version.
func Offered(ctx context.Context, gh Downloads, scope rm.Scope) (rm.RunnerDownload, string, error) {
	list, err := gh.RunnerDownloads(ctx, scope)
	if err != nil {
		return rm.RunnerDownload{}, "", err
	}
	d, err := PickDownload(list, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return d, "", err
	}
	v := versionRE.FindString(d.Filename)
	if v == "" {
		return d, "", fmt.Errorf("the runner package %q names no version", d.Filename)
	}
	return d, v, nil
}

// Result says what Runner did.
type Result struct {
	Version string
	// Dir is the runner's directory, <data>/runners/<version>.
	Dir string
	// SHA256 is the checksum the package was verified against; "" when
	// the version was installed already.
	SHA256 string
	// Already is true when the version was installed before: nothing was
	// downloaded.
	Already bool
	// Trial: the runner is installed unproven (Stage), for the next attempt
	// to prove.
	Trial bool
	// Bad, if set, is why the version is not installed: it failed lately.
	Bad *rm.BadRunner
}

// Options of Runner.
type Options struct {
	// Version is the version wanted; "" takes the offered one. Only the
	// offered version comes with a checksum, so any other is refused.
	Version string
	// HTTPClient downloads the package (default: one with a 15-minute
	// timeout).
	HTTPClient *http.Client
	// Downloading, if set, is told the package's URL before the download.
	Downloading func(url string)
	// Progress, if set, is told how the download goes, a few hundred
	// times at most; a frontend prints it.
	Progress Progress
}

// Runner installs the runner GitHub offers scope into dataDir's runners
// directory, unless that version is there already. A version other than
// the offered one is refused with rm.ErrInvalid.
func Runner(ctx context.Context, gh Downloads, scope rm.Scope, dataDir string, o Options) (Result, error) {
	d, version, err := Offered(ctx, gh, scope)
	if err != nil {
		return Result{}, err
	}
	if o.Version != "" && o.Version != version {
		return Result{}, fmt.Errorf("%w: GitHub offers runner %s now, not %s; only the offered one comes with a checksum to verify (run without a version)", rm.ErrInvalid, version, o.Version)
	}
	return put(ctx, d, version, dataDir, o)
}

// Releases is what Latest, Stage and Updater ask of GitHub: like
// Downloads, install's own seam, filled by github.Client, which the CLI
// (Latest) and daemon (Updater) pass.
type Releases interface {
	LatestRunnerRelease(ctx context.Context) (string, []rm.RunnerDownload, error)
}

// Latest installs the newest release of the runner (actions/runner's
// releases), which may be newer than what GitHub offers a scope while a
// release rolls out, verified against the checksum the release gives,
// unless that version is there already. A release that gives no checksum
// for this machine's package is refused.
func Latest(ctx context.Context, gh Releases, dataDir string, o Options) (Result, error) {
	version, list, err := gh.LatestRunnerRelease(ctx)
	if err != nil {
		return Result{}, err
	}
	d, err := PickDownload(list, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return Result{}, fmt.Errorf("the latest runner release %s: %w", version, err)
	}
	if d.SHA256 == "" {
		return Result{}, fmt.Errorf("the latest runner release %s gives no SHA-256 for %s: not installed (run without --latest to install what GitHub offers)", version, d.Filename)
	}
	if o.Version != "" && o.Version != version {
		return Result{}, fmt.Errorf("%w: the latest runner release is %s, not %s", rm.ErrInvalid, version, o.Version)
	}
	return put(ctx, d, version, dataDir, o)
}

// put installs package d of version into dataDir's runners directory,
// unless it is there already.
func put(ctx context.Context, d rm.RunnerDownload, version, dataDir string, o Options) (Result, error) {
	r := Result{Version: version, Dir: datadir.New(dataDir).Runner(version)}
	if _, err := os.Stat(ListenerPath(r.Dir)); err == nil {
		r.Already = true
		// Asked for by hand, a runner on trial is taken as it is.
		if _, err := os.Lstat(filepath.Join(r.Dir, UnprovenMark)); err == nil {
			if err := Promote(r.Dir); err != nil {
				return r, err
			}
		}
		return r, nil
	}
	if o.Downloading != nil {
		o.Downloading(d.URL)
	}
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Minute}
	}
	if err := InstallArchive(ctx, hc, d.URL, d.SHA256, r.Dir, o.Progress); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return Result{}, fmt.Errorf("%s exists but holds no runner: remove it and install again", r.Dir)
		}
		return Result{}, err
	}
	r.SHA256 = d.SHA256
	return r, nil
}

// UnprovenMark, in an installed runner's directory, marks a runner installed
// by an update and not yet proven on an attempt: Newest passes over it, so
// policies keep launching the runner they had until one attempt showed the
// new one works.
const UnprovenMark = ".unproven"

// Newest returns the installed runner of the highest version under
// dataDir's runners directory (each in a directory named by its version,
// like 2.328.0, with bin/Runner.Listener), passing over unproven ones
// (UnprovenMark). An error says how to install one when there is none.
func Newest(dataDir string) (string, error) {
	runnersDir := datadir.New(dataDir).Runners()
	entries, err := os.ReadDir(runnersDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("installed runners: %w", err)
	}
	var best []int
	var bestDir string
	for _, e := range entries {
		v, ok := parseVersion(e.Name())
		if !ok {
			continue
		}
		dir := filepath.Join(runnersDir, e.Name())
		if _, err := os.Stat(ListenerPath(dir)); err != nil {
			continue
		}
		if _, err := os.Lstat(filepath.Join(dir, UnprovenMark)); err == nil {
			continue
		}
		if best == nil || slices.Compare(v, best) > 0 {
			best, bestDir = v, dir
		}
	}
	if bestDir == "" {
		return "", fmt.Errorf("no runner installed in %s: install one with `runner-manager runner install`", runnersDir)
	}
	return bestDir, nil
}
