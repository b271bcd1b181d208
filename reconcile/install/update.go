package install

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// attemptsDir is where the launcher keeps attempt roots (and .spare/).
const attemptsDir = "attempts"

// Prune removes the runners installed under dataDir/runners that nothing
// uses: not the newest (policies without a runner directory launch it),
// not one of keep (the runner directories policies name), and not one an
// attempt root under dataDir/attempts (a running attempt's, or a spare's)
// links to — an attempt finishes on the runner it started with. It returns
// the directories it removed.
func Prune(dataDir string, keep []string) ([]string, error) {
	runners := filepath.Join(dataDir, RunnersDir)
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
	for _, root := range attemptRoots(filepath.Join(dataDir, attemptsDir)) {
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

// attemptRoots lists the attempt roots under dir and its .spare/ (kept
// failed roots under .failed/ are for reading only: not counted).
func attemptRoots(dir string) []string {
	var out []string
	for _, d := range []string{dir, filepath.Join(dir, ".spare")} {
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
// auto_update`): it installs and verifies the latest release (Latest),
// which policies without a runner directory launch from then on, while
// running attempts finish on the runner they started with; then it prunes
// the runners nothing uses (Prune).
type Updater struct {
	GitHub  Releases
	DataDir string
	// Keep lists the runner directories policies name (never pruned).
	Keep func(ctx context.Context) ([]string, error)
	Log  *slog.Logger
}

// Check installs the latest release if it is new, then prunes.
func (u Updater) Check(ctx context.Context) (Result, []string, error) {
	r, err := Latest(ctx, u.GitHub, u.DataDir, Options{})
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

// Once calls Check and logs what it did; a failure is logged, to be tried
// again next in a while.
func (u Updater) Once(ctx context.Context, next time.Duration) {
	log := u.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r, removed, err := u.Check(ctx)
	switch {
	case err != nil && ctx.Err() == nil:
		log.Warn("automatic runner update failed; trying again later", "err", err, "next", next)
	case err == nil && !r.Already:
		log.Info("installed a newer runner: new attempts launch it, running ones finish on theirs", "version", r.Version, "dir", r.Dir)
	}
	for _, dir := range slices.Sorted(slices.Values(removed)) {
		log.Info("removed a runner no attempt or policy uses", "dir", dir)
	}
}
