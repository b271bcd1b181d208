package warm

import (
	"bufio"
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/runner-manager/runner-manager/datadir"
)

// perJob are the folders of a runner's work folder that belong to one job
// and go when it ends: _temp holds the job's step scripts and its file
// commands (GITHUB_ENV, GITHUB_OUTPUT, which may carry what a step meant
// to pass on, secrets included) and the credentials actions/checkout
// writes since v5; _actions holds the actions the job downloaded, which
// the runner fetches again for every job. docs/warm.md gives the sources.
var perJob = []string{"_temp", "_actions"}

// Scrub removes from a slot's work folder what must not outlive its job:
// the per-job folders, and the job's token that actions/checkout leaves in
// a workspace's .git/config (an http.<url>.extraheader, removed by the
// action's post step, which a cancelled job never runs).
func Scrub(work string) error {
	var errs []error
	for _, d := range perJob {
		if err := datadir.RemoveAll(filepath.Join(work, d)); err != nil {
			errs = append(errs, err)
		}
	}
	// Workspaces are <work>/<repo>/<repo> (a path of the workflow may move
	// the checkout below it, so a few levels are looked at).
	err := filepath.WalkDir(work, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // gone or unreadable: nothing of ours to scrub
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(work, path)
		depth := strings.Count(rel, string(filepath.Separator))
		if rel != "." && strings.HasPrefix(rel, "_") {
			return fs.SkipDir // the runner's own folders and the caches
		}
		if d.Name() == ".git" {
			// The repository's config, and its submodules' (checkout
			// persists the token into those too).
			configs, _ := filepath.Glob(filepath.Join(path, "modules", "*", "config"))
			for _, c := range append([]string{filepath.Join(path, "config")}, configs...) {
				if err := scrubGitConfig(c); err != nil {
					errs = append(errs, err)
				}
			}
			return fs.SkipDir
		}
		if depth >= 4 {
			return fs.SkipDir
		}
		return nil
	})
	return errors.Join(append(errs, err)...)
}

// scrubGitConfig drops every extraheader line of a git config file.
func scrubGitConfig(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var out bytes.Buffer
	changed := false
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		key, _, _ := strings.Cut(strings.TrimSpace(line), "=")
		if strings.EqualFold(strings.TrimSpace(key), "extraheader") {
			changed = true
			continue
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil || !changed {
		return err
	}
	return datadir.WriteFileAtomic(path, out.Bytes(), 0o600)
}
