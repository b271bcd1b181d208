package runnerpkg

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/datadir"
)

// Prune removes the runners installed under dataDir/runners that nothing
// uses: not the newest (policies without a runner directory launch it),
// not one of keep (the runner directories policies name), and not one an
// attempt root under dataDir/attempts (a running attempt's, or a spare's)
// links to — an attempt finishes on the runner it started with — and not
// one on trial (unproven, not marked bad). It returns the directories it
// removed.
func Prune(dataDir string, keep []string) ([]string, error) {
	runners := datadir.New(dataDir).Runners()
	newest, err := Newest(dataDir)
	if err != nil {
		return nil, nil // nothing installed: nothing to prune
	}
	used := map[string]bool{real(newest): true}
	for _, k := range keep {
		if k != "" {
			used[real(k)] = true
		}
	}
	for _, root := range attemptRoots(datadir.New(dataDir)) {
		if ext, err := filepath.EvalSymlinks(filepath.Join(root, "externals")); err == nil {
			used[filepath.Dir(ext)] = true
		}
	}
	entries, err := os.ReadDir(runners)
	if err != nil {
		return nil, fmt.Errorf("prune installed runners: %w", err)
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		dir := filepath.Join(runners, e.Name())
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || used[real(dir)] {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "bin")); err != nil {
			continue // not a runner (or one being unpacked)
		}
		if _, err := os.Lstat(filepath.Join(dir, UnprovenMark)); err == nil {
			if _, bad := BadRelease(dataDir, e.Name()); !bad {
				continue // on trial
			}
		}
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("prune runner %s: %w", e.Name(), err))
			continue
		}
		removed = append(removed, dir)
	}
	return removed, errors.Join(errs...)
}

// real is path with its symlinks resolved (path itself when it cannot be).
func real(path string) string {
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	return filepath.Clean(path)
}

// attemptRoots lists the attempt roots of d, live and spare (kept failed
// roots under .failed/ are for reading only: not counted).
func attemptRoots(dd datadir.Dir) []string {
	var out []string
	for _, d := range []string{dd.Attempts(), dd.SpareRoots()} {
		entries, err := os.ReadDir(d)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				out = append(out, filepath.Join(d, e.Name()))
			}
		}
	}
	return out
}

// Updater keeps the newest runner release installed (`[runner]
// auto_update`): it installs and verifies the latest release (Stage), on
// trial until one attempt proved it (trial.go), while running attempts
// finish on the runner they started with; then it prunes the runners
// nothing uses (Prune).
type Updater struct {
	GitHub  Releases
	DataDir string
	// Keep lists the runner directories policies name (never pruned).
	Keep func(ctx context.Context) ([]string, error)
	Log  *slog.Logger
}

// Stage installs the latest release, verified against its checksum, unless
// it is installed already, no newer than the newest proven runner, or
// marked bad (Result.Bad). With a proven runner installed the new one is
// put in place unproven (Result.Trial); a download or checksum failure
// marks the release bad (MarkBad) and is returned.
func Stage(ctx context.Context, gh Releases, dataDir string, o Options) (Result, error) {
	version, list, err := gh.LatestRunnerRelease(ctx)
	if err != nil {
		return Result{}, err
	}
	r := Result{Version: version, Dir: datadir.New(dataDir).Runner(version)}
	if b, bad := BadRelease(dataDir, version); bad {
		r.Bad = &b
		return r, nil
	}
	current, err := Newest(dataDir)
	if err != nil {
		return Latest(ctx, gh, dataDir, o) // nothing to keep serving: install it as it is
	}
	if !Newer(version, filepath.Base(current)) {
		r.Already, r.Dir, r.Version = true, current, filepath.Base(current)
		return r, nil
	}
	_, staleErr := os.Stat(datadir.New(dataDir).BadRunner(version))
	if _, err := os.Stat(ListenerPath(r.Dir)); err == nil {
		if staleErr != nil {
			r.Already, r.Trial = true, true
			return r, nil
		}
		// Its bad mark expired: fetch it afresh and prove it again.
		if err := os.RemoveAll(r.Dir); err != nil {
			return r, fmt.Errorf("remove runner %s to install it again: %w", version, err)
		}
	}
	_ = os.Remove(datadir.New(dataDir).BadRunner(version))
	fail := func(err error) (Result, error) {
		_ = MarkBad(dataDir, version, err.Error())
		return r, err
	}
	d, err := PickDownload(list, runtime.GOOS, runtime.GOARCH)
	if err != nil {
		return fail(fmt.Errorf("the latest runner release %s: %w", version, err))
	}
	if d.SHA256 == "" {
		return fail(fmt.Errorf("the latest runner release %s gives no SHA-256 for %s", version, d.Filename))
	}
	stage := datadir.New(dataDir).RunnerTrial(version)
	_ = os.RemoveAll(stage)
	hc := o.HTTPClient
	if hc == nil {
		hc = &http.Client{Timeout: 15 * time.Minute}
	}
	if o.Downloading != nil {
		o.Downloading(d.URL)
	}
	if err := InstallArchive(ctx, hc, d.URL, d.SHA256, stage, o.Progress); err != nil {
		if ctx.Err() != nil {
			return r, err // stopped, not failed
		}
		return fail(err)
	}
	if err := os.WriteFile(filepath.Join(stage, UnprovenMark), nil, 0o644); err != nil {
		_ = os.RemoveAll(stage)
		return r, fmt.Errorf("install runner %s: %w", version, err)
	}
	if err := os.Rename(stage, r.Dir); err != nil {
		_ = os.RemoveAll(stage)
		return r, fmt.Errorf("install runner %s: move into place: %w", version, err)
	}
	r.SHA256, r.Trial = d.SHA256, true
	return r, nil
}

// Check stages the latest release if it is new, then prunes.
// A download is logged sparsely (logDownload).
func (u Updater) Check(ctx context.Context) (Result, []string, error) {
	r, err := Stage(ctx, u.GitHub, u.DataDir, logDownload(u.Log))
	if err != nil {
		return r, nil, fmt.Errorf("update the runner: %w", err)
	}
	var keep []string
	if u.Keep != nil {
		if keep, err = u.Keep(ctx); err != nil {
			return r, nil, fmt.Errorf("update the runner: read the policies' runner directories: %w", err)
		}
	}
	removed, err := Prune(u.DataDir, keep)
	return r, removed, err
}

// logDownload logs an update's download for a daemon's log: where from,
// then each quarter of it; a 200 MB package over a slow link makes four
// lines, never one per read. The end is the caller's line ("installed").
func logDownload(log *slog.Logger) Options {
	if log == nil {
		return Options{}
	}
	quarter := int64(0)
	return Options{
		Downloading: func(url string) { log.Info("downloading a newer runner", "url", url) },
		Progress: func(done, total int64) {
			if total <= 0 || done >= total {
				return
			}
			if q := done * 4 / total; q > quarter {
				quarter = q
				log.Info("downloading a newer runner", "percent", q*25, "bytes", done, "of", total)
			} else if q < quarter {
				quarter = q // tried again
			}
		},
	}
}

// Once calls Check and logs what it did; a failure is logged (once per
// release: a release that failed is marked bad and not tried again for
// BadFor), to be tried again next in a while.
func (u Updater) Once(ctx context.Context, next time.Duration) Result {
	log := u.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r, removed, err := u.Check(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("automatic runner update failed: the installed runner serves on", "version", r.Version, "err", err, "retry_after", BadFor)
	case err == nil && r.Trial && !r.Already:
		log.Info("installed a newer runner: the next attempt proves it, then every policy launches it", "version", r.Version, "dir", r.Dir)
	case err == nil && r.Bad == nil && !r.Already:
		log.Info("installed a newer runner: new attempts launch it, running ones finish on theirs", "version", r.Version, "dir", r.Dir)
	}
	for _, dir := range slices.Sorted(slices.Values(removed)) {
		log.Info("removed a runner no attempt or policy uses", "dir", dir)
	}
	return r
}
