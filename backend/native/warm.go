package native

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/warm"
)

// The names in an attempt root the warm side adds: the runner's work
// folder (the JIT configuration's .runner says "_work", relative to the
// root: docs/warm.md) and the attempt's own HOME.
const (
	workLink = "_work"
	homeName = "_home"
)

// DefaultHomeFiles are copied from the manager's HOME into every
// attempt's fresh HOME when present: what git and ssh read and a job
// commonly relies on. A job's writes to its copies go with the attempt.
var DefaultHomeFiles = []string{".gitconfig", ".ssh/known_hosts"}

// WithHome sets what an attempt's fresh HOME holds of the manager's:
// files are copied (a job's writes go with the attempt), links are
// symbolic links to the manager's own (a toolchain a job runs from HOME:
// .rustup, .pyenv; shared by every job, so only what jobs only read).
// Names are relative to the manager's HOME. Without it DefaultHomeFiles
// are copied and nothing linked.
func WithHome(files, links []string) Option {
	return func(l *Launcher) { l.homeFiles, l.homeLinks, l.homeSet = files, links, true }
}

// WithSharedHome gives runners the manager's own HOME, as before fresh
// HOMEs: every job of every repository reads and writes the same one.
func WithSharedHome() Option { return func(l *Launcher) { l.sharedHome = true } }

// RunsWarm says the native launcher can run an attempt in a workspace
// slot: its root's _work is a symbolic link to the slot's work folder. Not
// on Windows, where a symbolic link needs a privilege a service account
// seldom has (a directory junction would do; not built yet).
func (l *Launcher) RunsWarm() bool { return runtime.GOOS != "windows" }

// prepareWarm links the root's work folder to the slot, when the spec has
// one.
func prepareWarm(root string, spec rm.LaunchSpec) error {
	if spec.Warm == nil {
		return nil
	}
	if spec.Warm.Dir == "" || !filepath.IsAbs(spec.Warm.Dir) {
		return fmt.Errorf("workspace slot %s has no absolute work folder (%q)", spec.Warm, spec.Warm.Dir)
	}
	work := filepath.Join(root, workLink)
	// The root comes with an empty work folder of its own: the slot's
	// takes its place.
	if err := os.Remove(work); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("make room for slot %s: %w", spec.Warm, err)
	}
	if err := os.Symlink(spec.Warm.Dir, work); err != nil {
		return fmt.Errorf("link the work folder to slot %s: %w", spec.Warm, err)
	}
	return nil
}

// unlinkWarm removes the root's link to its slot before the root goes or
// is kept: the slot is the next attempt's, not a failed one's to show.
func unlinkWarm(root string) error {
	work := filepath.Join(root, workLink)
	if fi, err := os.Lstat(work); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		return os.Remove(work)
	}
	return nil
}

// prepareHome makes the attempt's fresh HOME (0700) with the copies and
// links it is configured with, and returns its path; "" when runners share
// the manager's HOME.
func (l *Launcher) prepareHome(root string) (string, error) {
	if l.sharedHome || runtime.GOOS == "windows" {
		return "", nil
	}
	home := filepath.Join(root, homeName)
	if err := os.Mkdir(home, 0o700); err != nil {
		return "", fmt.Errorf("make the attempt's HOME: %w", err)
	}
	files, links := DefaultHomeFiles, []string(nil)
	if l.homeSet {
		files, links = l.homeFiles, l.homeLinks
	}
	if len(files)+len(links) == 0 {
		return home, nil
	}
	src, err := os.UserHomeDir()
	if err != nil {
		return home, nil // nothing to copy from
	}
	var errs []error
	for _, name := range files {
		from, to, ok := homePaths(src, home, name)
		if !ok {
			continue
		}
		fi, err := os.Stat(from)
		if err != nil || !fi.Mode().IsRegular() {
			continue // absent: nothing to give
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, datadir.CopyFile(from, to, 0o600))
	}
	for _, name := range links {
		from, to, ok := homePaths(src, home, name)
		if !ok {
			continue
		}
		if _, err := os.Stat(from); err != nil {
			continue
		}
		if err := os.MkdirAll(filepath.Dir(to), 0o700); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, os.Symlink(from, to))
	}
	if err := errors.Join(errs...); err != nil {
		return "", fmt.Errorf("fill the attempt's HOME: %w", err)
	}
	return home, nil
}

// homePaths joins a configured name under both HOMEs, refusing one that
// leaves them.
func homePaths(src, dst, name string) (string, string, bool) {
	clean := filepath.Clean(filepath.FromSlash(name))
	if clean == "." || filepath.IsAbs(clean) || clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", "", false
	}
	return filepath.Join(src, clean), filepath.Join(dst, clean), true
}

// warmEnv adds to env the cache variables of the spec's slot (none the
// operator set: a name already in env wins) and the attempt's HOME unless
// the spec's own environment sets one.
func warmEnv(env []string, spec rm.LaunchSpec, home string) []string {
	has := func(name string) bool {
		for _, kv := range env {
			if n, _, _ := strings.Cut(kv, "="); envEqual(n, name) {
				return true
			}
		}
		return false
	}
	var b envBuilder
	for _, kv := range env {
		n, _, _ := strings.Cut(kv, "=")
		b.set(n, kv)
	}
	if spec.Warm != nil {
		for _, kv := range warm.Env(spec.Warm.Dir, false, has) {
			n, _, _ := strings.Cut(kv, "=")
			b.set(n, kv)
		}
	}
	if home != "" && !specSets(spec, "HOME") {
		b.set("HOME", "HOME="+home)
	}
	return b.env
}

// specSets reports whether the spec's own environment sets name.
func specSets(spec rm.LaunchSpec, name string) bool {
	for _, kv := range spec.Env {
		if n, _, _ := strings.Cut(kv, "="); envEqual(n, name) {
			return true
		}
	}
	return false
}
