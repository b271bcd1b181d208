package fakerunner

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// ciSetup runs a CI-shaped job's setup as its first step: the three
// things real CI spends its start on, each fetched over HTTP from the
// fake GitHub unless the folder the real tool would use already holds it
// (a checkout into the workspace, a toolchain into the runner's tool
// cache, dependencies into npm's cache). It records what each took and
// whether it was warm, and reports whether it succeeded.
func (j *jobRun) ciSetup(ctx context.Context, c runnerproto.CISetup) bool {
	j.log.printf("##[group]Run CI setup: checkout %s, %s %s, %d packages", c.Commit, c.Tool.Name, c.Tool.Version, len(c.Packages))
	began := time.Now()
	rep := &runnerproto.SetupReport{}
	j.setup = rep
	phase := func(p *runnerproto.PhaseReport, do func(*runnerproto.PhaseReport) error) error {
		t := time.Now()
		err := do(p)
		p.DurationMS = time.Since(t).Milliseconds()
		p.Warm = err == nil && p.Objects == 0
		return err
	}
	err := phase(&rep.Checkout, func(p *runnerproto.PhaseReport) error { return j.checkout(ctx, c, p) })
	if err == nil {
		err = phase(&rep.Tool, func(p *runnerproto.PhaseReport) error { return j.installTool(ctx, c.Tool, p) })
	}
	if err == nil {
		err = phase(&rep.Deps, func(p *runnerproto.PhaseReport) error { return j.installDeps(ctx, c, p) })
	}
	rep.DurationMS = time.Since(began).Milliseconds()
	for _, p := range []struct {
		name string
		r    runnerproto.PhaseReport
	}{{"checkout", rep.Checkout}, {"toolchain", rep.Tool}, {"dependencies", rep.Deps}} {
		j.log.printf("%s: %d ms, %d of %d objects fetched (%d bytes), warm %t, in %s", p.name, p.r.DurationMS, p.r.Objects, p.r.Total, p.r.Fetched, p.r.Warm, p.r.Dir)
	}
	j.log.printf("##[endgroup]")
	j.l.printf("Setup of job %s took %d ms (fetched %d bytes; warm: checkout %t, toolchain %t, dependencies %t).",
		j.jr.DisplayName, rep.DurationMS, rep.Fetched(), rep.Checkout.Warm, rep.Tool.Warm, rep.Deps.Warm)
	if err != nil {
		rep.Error = err.Error()
		j.log.printf("##[error]%v", err)
		return false
	}
	return true
}

// checkout brings the workspace to commit's tree as actions/checkout does
// into a workspace that already holds the repository: a .git of another
// repository is removed with the workspace's files
// (git-directory-helper.ts:20-35, :110-123), else the workspace is
// cleaned and reset (`git clean -ffdx`, `git reset --hard`: :90-106), and
// the fetch asks only for the objects .git lacks (git-source-provider.ts:
// 180-220, `git fetch` into the existing repository). Its objects live
// in .git/objects by id, as git's do; the working tree is written from
// them.
func (j *jobRun) checkout(ctx context.Context, c runnerproto.CISetup, p *runnerproto.PhaseReport) error {
	ws := j.dir
	p.Dir = ws
	gitDir := filepath.Join(ws, ".git")
	remote := strings.TrimSuffix(c.TreeURL, "/"+c.Commit)
	if b, err := os.ReadFile(filepath.Join(gitDir, "remote")); err != nil || string(b) != remote {
		emptyDir(ws)
		if err := os.MkdirAll(filepath.Join(gitDir, "objects"), 0o755); err != nil {
			return fmt.Errorf("checkout: %w", err)
		}
		if err := os.WriteFile(filepath.Join(gitDir, "remote"), []byte(remote), 0o644); err != nil {
			return fmt.Errorf("checkout: %w", err)
		}
	}
	var tree []runnerproto.CIObject
	var buf strings.Builder
	n, err := j.fetch(ctx, c.TreeURL, &buf)
	p.Fetched += n
	if err == nil {
		err = json.Unmarshal([]byte(buf.String()), &tree)
	}
	if err != nil {
		return fmt.Errorf("checkout: the tree of %s: %w", c.Commit, err)
	}
	// The index says which object each file of the working tree was
	// written from, as git's does.
	index := map[string]string{}
	indexFile := filepath.Join(gitDir, "index.json")
	if b, err := os.ReadFile(indexFile); err == nil {
		_ = json.Unmarshal(b, &index)
	}
	want := map[string]bool{}
	p.Total = len(tree)
	for _, o := range tree {
		obj := filepath.Join(gitDir, "objects", o.ID[:2], o.ID[2:])
		if !sizeIs(obj, o.Size) {
			n, err := j.fetchTo(ctx, c.BaseURL+"/objects/"+o.ID, obj)
			p.Fetched += n
			p.Objects++
			if err != nil {
				return fmt.Errorf("checkout: %s: %w", o.Path, err)
			}
		}
		want[filepath.FromSlash(o.Path)] = true
		dst := filepath.Join(ws, filepath.FromSlash(o.Path))
		if index[o.Path] == o.ID && sizeIs(dst, o.Size) {
			continue // reset --hard leaves an unchanged file alone
		}
		if err := copyFile(obj, dst); err != nil {
			return fmt.Errorf("checkout: %s: %w", o.Path, err)
		}
		index[o.Path] = o.ID
	}
	if b, err := json.Marshal(index); err == nil {
		_ = os.WriteFile(indexFile, b, 0o644)
	}
	// git clean -ffdx: what the tree does not hold goes.
	return filepath.WalkDir(ws, func(path string, d fs.DirEntry, err error) error {
		rel, _ := filepath.Rel(ws, path)
		switch {
		case err != nil:
			return nil
		case rel == ".git" && d.IsDir():
			return filepath.SkipDir
		case d.IsDir() || rel == "." || want[rel]:
			return nil
		}
		return os.Remove(path)
	})
}

// installTool installs a toolchain into the tool cache as
// @actions/tool-cache does (the setup-* actions use it): it is there when
// <cache>/<tool>/<version>/<arch> and its marker <arch>.complete both
// exist (tool-cache.ts:494-530, find); else the folder and marker are
// removed, the archive fetched and extracted into the folder, and the
// marker written (tool-cache.ts:659-689). The cache is RUNNER_TOOL_CACHE
// of the step's environment, which the runner sets (tool-cache.ts:745-
// 749). The tool's bin/ joins the job's PATH, as GITHUB_PATH would.
func (j *jobRun) installTool(ctx context.Context, t runnerproto.CITool, p *runnerproto.PhaseReport) error {
	cache := j.lookup("RUNNER_TOOL_CACHE")
	if cache == "" {
		return errors.New("toolchain: RUNNER_TOOL_CACHE is not set")
	}
	dir := filepath.Join(cache, t.Name, t.Version, t.Arch)
	p.Dir, p.Total = dir, 1
	marker := dir + ".complete"
	if isDir(dir) && exists(marker) {
		j.addPath(filepath.Join(dir, "bin"))
		return nil
	}
	_ = os.RemoveAll(dir)
	_ = os.Remove(marker)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("toolchain: %w", err)
	}
	n, err := j.get(ctx, t.URL, func(r io.Reader) error { return extractTar(r, dir) })
	p.Fetched += n
	p.Objects++
	if err != nil {
		return fmt.Errorf("toolchain %s %s: %w", t.Name, t.Version, err)
	}
	if err := os.WriteFile(marker, nil, 0o644); err != nil {
		return fmt.Errorf("toolchain: %w", err)
	}
	j.addPath(filepath.Join(dir, "bin"))
	return nil
}

// installDeps installs the dependencies as `npm ci` does: each package
// comes from npm's cache if there, else from the registry into the cache
// (cacache's content-addressed layout, _cacache/content-v2/<algorithm>/…),
// then node_modules is made anew from the cache. npm's cache is
// npm_config_cache when set, else ~/.npm (%LocalAppData%\npm-cache on
// Windows): https://docs.npmjs.com/cli/using-npm/config#cache.
func (j *jobRun) installDeps(ctx context.Context, c runnerproto.CISetup, p *runnerproto.PhaseReport) error {
	cache := NPMCache(j.lookup)
	if cache == "" {
		return errors.New("dependencies: neither npm_config_cache nor HOME is set")
	}
	p.Dir, p.Total = cache, len(c.Packages)
	modules := filepath.Join(j.dir, "node_modules")
	_ = os.RemoveAll(modules)
	for _, pkg := range c.Packages {
		obj := filepath.Join(cache, "_cacache", "content-v2", "sha256", pkg.ID[:2], pkg.ID[2:4], pkg.ID[4:])
		if !sizeIs(obj, pkg.Size) {
			n, err := j.fetchTo(ctx, c.BaseURL+"/objects/"+pkg.ID, obj)
			p.Fetched += n
			p.Objects++
			if err != nil {
				return fmt.Errorf("dependencies: %s: %w", pkg.Path, err)
			}
		}
		if err := copyFile(obj, filepath.Join(modules, pkg.Path, "package.tgz")); err != nil {
			return fmt.Errorf("dependencies: %s: %w", pkg.Path, err)
		}
	}
	return nil
}

// NPMCache is the folder npm caches into for a step whose variables
// lookup reads: npm_config_cache, else ~/.npm (on Windows
// %LocalAppData%\npm-cache); "" when neither can be known.
func NPMCache(lookup func(string) string) string {
	if c := lookup("npm_config_cache"); c != "" {
		return c
	}
	if runtime.GOOS == "windows" {
		if d := lookup("LOCALAPPDATA"); d != "" {
			return filepath.Join(d, "npm-cache")
		}
		return ""
	}
	if h := lookup("HOME"); h != "" {
		return filepath.Join(h, ".npm")
	}
	return ""
}

// addPath puts dir first on the PATH of the job's next steps.
func (j *jobRun) addPath(dir string) {
	j.env = append(j.env, "PATH="+dir+string(os.PathListSeparator)+j.lookup("PATH"))
}

// get fetches url and hands its body to read, returning the bytes read.
func (j *jobRun) get(ctx context.Context, url string, read func(io.Reader) error) (int64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := j.l.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	cr := &countingReader{r: resp.Body}
	err = read(cr)
	_, _ = io.Copy(io.Discard, cr)
	return cr.n, err
}

func (j *jobRun) fetch(ctx context.Context, url string, w io.Writer) (int64, error) {
	return j.get(ctx, url, func(r io.Reader) error { _, err := io.Copy(w, r); return err })
}

// fetchTo fetches url into the file dst, whole or not at all.
func (j *jobRun) fetchTo(ctx context.Context, url, dst string) (int64, error) {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(dst), ".fetch-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := j.fetch(ctx, url, tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	return n, err
}

type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// extractTar extracts a tar's regular files and directories under dir.
func extractTar(r io.Reader, dir string) error {
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.FromSlash(h.Name)
		if !filepath.IsLocal(name) {
			return fmt.Errorf("archive entry %q leaves its folder", h.Name)
		}
		dst := filepath.Join(dir, name)
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, fs.FileMode(h.Mode)&0o755|0o600)
			if err != nil {
				return err
			}
			_, err = io.Copy(f, tr)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

func sizeIs(path string, size int64) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Size() == size
}

func exists(path string) bool { _, err := os.Stat(path); return err == nil }

func isDir(path string) bool { fi, err := os.Stat(path); return err == nil && fi.IsDir() }
