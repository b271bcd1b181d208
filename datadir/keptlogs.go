package datadir

import (
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// diagDir is the runner's own log directory in an attempt root, and its
// name in a kept log directory.
const diagDir = "_diag"

// The default retention of kept logs.
const (
	DefaultLogMaxAge   = 14 * 24 * time.Hour
	DefaultLogMaxBytes = 1 << 30
)

// KeepLogs keeps the logs of attempt a, whose root is root, under
// KeptLog(a) before its root goes: runner.log as it is (a hard link, a copy
// across filesystems) and each file of _diag/ gzipped. A root without
// runner.log (never launched) keeps nothing. The kept directory's time is
// now, for PruneKeptLogs.
func (d Dir) KeepLogs(a rm.AttemptID, root string, now time.Time) error {
	src := filepath.Join(root, RunnerLogName)
	if _, err := os.Lstat(src); err != nil {
		return nil
	}
	dir := d.KeptLog(a)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("keep the logs of attempt %s: %w", a, err)
	}
	dst := filepath.Join(dir, RunnerLogName)
	_ = os.Remove(dst)
	if err := os.Link(src, dst); err != nil {
		if err := CopyFile(src, dst, 0o600); err != nil {
			return fmt.Errorf("keep the runner log of attempt %s: %w", a, err)
		}
	}
	var errs []error
	entries, _ := os.ReadDir(filepath.Join(root, diagDir))
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue // pages/: the job's step logs, which GitHub keeps
		}
		if err := os.MkdirAll(filepath.Join(dir, diagDir), 0o700); err != nil {
			errs = append(errs, err)
			break
		}
		if err := gzipFile(filepath.Join(root, diagDir, e.Name()), filepath.Join(dir, diagDir, e.Name()+".gz")); err != nil {
			errs = append(errs, fmt.Errorf("keep %s of attempt %s: %w", e.Name(), a, err))
		}
	}
	errs = append(errs, os.Chtimes(dir, now, now))
	return errors.Join(errs...)
}

func gzipFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	zw, _ := gzip.NewWriterLevel(out, gzip.BestSpeed)
	_, err = io.Copy(zw, in)
	return errors.Join(err, zw.Close(), out.Close())
}

// LogRetention bounds the kept logs: none older than MaxAge, and at most
// MaxBytes in all (the oldest go first). A zero field does not bound.
type LogRetention struct {
	MaxAge   time.Duration
	MaxBytes int64
}

// Pruned is what PruneKeptLogs removed and what is left.
type Pruned struct {
	Removed      int
	RemovedBytes int64
	Kept         int
	KeptBytes    int64
}

// PruneKeptLogs removes kept attempt logs (KeptLogs) beyond r, at now:
// first those older than r.MaxAge, then the oldest while the rest exceed
// r.MaxBytes. An attempt's logs go whole.
func (d Dir) PruneKeptLogs(r LogRetention, now time.Time) (Pruned, error) {
	var out Pruned
	root := d.KeptLogs()
	entries, err := os.ReadDir(root)
	if errors.Is(err, fs.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("prune kept logs: %w", err)
	}
	type kept struct {
		path string
		at   time.Time
		size int64
	}
	var all []kept
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		k := kept{path: filepath.Join(root, e.Name()), at: info.ModTime()}
		_ = filepath.WalkDir(k.path, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if fi, err := d.Info(); err == nil {
					k.size += fi.Size()
				}
			}
			return nil
		})
		all = append(all, k)
	}
	slices.SortFunc(all, func(a, b kept) int { return a.at.Compare(b.at) })
	var total int64
	for _, k := range all {
		total += k.size
	}
	var errs []error
	for _, k := range all {
		old := r.MaxAge > 0 && now.Sub(k.at) > r.MaxAge
		over := r.MaxBytes > 0 && total > r.MaxBytes
		if !old && !over {
			out.Kept++
			out.KeptBytes += k.size
			continue
		}
		if err := RemoveAll(k.path); err != nil {
			errs = append(errs, fmt.Errorf("prune kept logs %s: %w", filepath.Base(k.path), err))
			out.Kept++
			out.KeptBytes += k.size
			continue
		}
		total -= k.size
		out.Removed++
		out.RemovedBytes += k.size
	}
	return out, errors.Join(errs...)
}
