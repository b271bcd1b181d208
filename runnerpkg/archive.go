package runnerpkg

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/runner-manager/runner-manager/datadir"
)

// maxExtracted caps what one runner archive may unpack to. A runner with its
// externals is well under 1 GiB; anything far larger is not a runner.
const maxExtracted = 4 << 30

// InstallArchive downloads the runner archive at url with client (the default
// client when nil), verifies its SHA-256 against sha256hex, unpacks it (a
// .tar.gz, or a .zip for Windows runners) and renames the result to destDir
// in one step: destDir either does not exist or holds a whole, verified
// runner. Nothing is left behind on failure. destDir must not exist yet
// (fs.ErrExist). An archive entry leading outside destDir (an absolute path,
// "..", a link out) refuses the whole archive. File modes are kept.
// progress, if not nil, is told how the download goes (see Progress).
func InstallArchive(ctx context.Context, client *http.Client, url, sha256hex, destDir string, progress Progress) error {
	want, err := hex.DecodeString(strings.TrimSpace(sha256hex))
	if err != nil || len(want) != sha256.Size {
		return fmt.Errorf("install runner: checksum %q is not a SHA-256 (64 hex digits)", sha256hex)
	}
	if client == nil {
		client = http.DefaultClient
	}
	if _, err := os.Lstat(destDir); err == nil {
		return fmt.Errorf("install runner: %s: %w (remove it to reinstall)", destDir, fs.ErrExist)
	}
	parent := filepath.Dir(destDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("install runner: %w", err)
	}

	archive, err := download(ctx, client, url, parent, want, progress)
	if errors.Is(err, errEmptyDownload) {
		return fmt.Errorf("install runner: the runner package downloaded from %s is empty (the server answered 2xx with no body): nothing was installed", url)
	}
	if err != nil {
		return fmt.Errorf("install runner from %s: %w", url, err)
	}
	defer func() {
		_ = archive.Close()
		_ = os.Remove(archive.Name())
	}()

	tmp, err := os.MkdirTemp(parent, ".install-*")
	if err != nil {
		return fmt.Errorf("install runner: %w", err)
	}
	done := false
	defer func() {
		if !done {
			_ = datadir.RemoveAll(tmp)
		}
	}()
	if err := extract(ctx, archive, tmp); err != nil {
		return fmt.Errorf("install runner from %s: %w", url, err)
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("install runner: %w", err)
	}
	if err := os.Rename(tmp, destDir); err != nil {
		return fmt.Errorf("install runner: move into place: %w", err)
	}
	done = true
	return nil
}

// downloadTries is how many times the runner package is fetched: the
// runner's own self-update tries 3 times, at once, on any failure of the
// download (actions/runner src/Runner.Common/Constants.cs:44
// RunnerDownloadRetryMaxAttempts, src/Runner.Listener/SelfUpdater.cs:276),
// and takes any 2xx (its GetStreamAsync, SelfUpdater.cs:337). Here a
// network error, a cut body, a 5xx, 408 or 429 is tried again; another
// status (404: no such package) and a checksum mismatch are not, as the
// runner checks the hash once, after the download (SelfUpdater.cs:242).
const downloadTries = 3

// errEmptyDownload is download's error for an answer with no body: said
// as such rather than as the checksum or the archive reader sees it
// ("archive: EOF").
var errEmptyDownload = errors.New("empty download")

// Progress is told done bytes of total as a download goes; total is -1
// while the server has not said its size, and done == total on the last
// call, once the whole body is in. A runner package is some 200 MB, so it
// is told sparsely: when the whole percent changes (each MiB when the size
// is unknown), not for every read. A download tried again starts again
// from 0.
type Progress func(done, total int64)

// download writes url's body to a temp file in dir and checks its SHA-256.
// The returned file is open and rewound; the caller removes it.
func download(ctx context.Context, client *http.Client, url, dir string, want []byte, progress Progress) (*os.File, error) {
	f, err := os.CreateTemp(dir, ".download-*")
	if err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = f.Close()
			_ = os.Remove(f.Name())
		}
	}()
	h := sha256.New()
	var size int64
	for try := 1; ; try++ {
		n, again, err := fetch(ctx, client, url, f, h, progress)
		if err == nil {
			size = n
			break
		}
		if !again || try >= downloadTries || ctx.Err() != nil {
			if try > 1 {
				return nil, fmt.Errorf("%w (after %d tries)", err, try)
			}
			return nil, err
		}
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			return nil, err
		}
		if err := f.Truncate(0); err != nil {
			return nil, err
		}
		h.Reset()
	}
	if size == 0 {
		return nil, errEmptyDownload
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return nil, fmt.Errorf("checksum mismatch: got sha256 %x, want %x: the download is corrupt or not the published runner; nothing was installed", got, want)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	ok = true
	return f, nil
}

// fetch copies one answer to url into f and h, returning its size; again
// says whether a failure is worth another try.
func fetch(ctx context.Context, client *http.Client, url string, f io.Writer, h io.Writer, progress Progress) (n int64, again bool, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, false, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, true, err
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		code := resp.StatusCode
		return 0, code >= 500 || code == http.StatusRequestTimeout || code == http.StatusTooManyRequests, fmt.Errorf("server answered %s", resp.Status)
	}
	var w io.Writer = io.MultiWriter(f, h)
	if progress != nil {
		w = &progressWriter{w: w, total: resp.ContentLength, tell: progress}
		progress(0, resp.ContentLength)
	}
	n, err = io.Copy(w, resp.Body)
	if err != nil {
		return n, true, fmt.Errorf("download: %w", err)
	}
	if progress != nil {
		progress(n, n)
	}
	return n, false, nil
}

// progressWriter counts what passes and tells Progress at each new whole
// percent of total (each MiB when total is unknown), short of the end:
// fetch tells the end once the body is all in.
type progressWriter struct {
	w           io.Writer
	done, total int64
	told        int64 // the last percent (or MiB) told
	tell        Progress
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	p.done += int64(n)
	step := p.done >> 20
	if p.total > 0 {
		step = p.done * 100 / p.total
	}
	if step != p.told && (p.total <= 0 || p.done < p.total) {
		p.told = step
		p.tell(p.done, p.total)
	}
	return n, err
}

// extract unpacks a gzip'd tar or a zip archive (told apart by their magic
// bytes) into dir.
func extract(ctx context.Context, f *os.File, dir string) error {
	magic := make([]byte, 4)
	if n, err := io.ReadFull(f, magic); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return fmt.Errorf("archive of %d bytes is too short to be a .tar.gz or a .zip", n)
		}
		return fmt.Errorf("archive: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	x := &extractor{ctx: ctx, root: dir}
	switch {
	case magic[0] == 0x1f && magic[1] == 0x8b:
		return x.tarGz(f)
	case bytes.Equal(magic, []byte("PK\x03\x04")):
		info, err := f.Stat()
		if err != nil {
			return err
		}
		return x.zip(f, info.Size())
	}
	return errors.New("archive is neither a .tar.gz nor a .zip")
}

type extractor struct {
	ctx     context.Context
	root    string
	written int64
}

func (x *extractor) tarGz(r io.Reader) error {
	gz, err := gzip.NewReader(bufio.NewReader(r))
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	defer gz.Close()
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("archive: %w", err)
		}
		if err := x.ctx.Err(); err != nil {
			return err
		}
		mode := h.FileInfo().Mode()
		switch h.Typeflag {
		case tar.TypeDir:
			err = x.dir(h.Name, mode)
		case tar.TypeReg:
			err = x.file(h.Name, mode, tr)
		case tar.TypeSymlink:
			err = x.symlink(h.Name, h.Linkname)
		case tar.TypeLink:
			err = x.hardlink(h.Name, h.Linkname)
		default:
			// Devices, FIFOs, extended headers: a runner has none to install.
			_, err = x.path(h.Name)
		}
		if err != nil {
			return err
		}
	}
}

func (x *extractor) zip(r io.ReaderAt, size int64) error {
	zr, err := zip.NewReader(r, size)
	if err != nil {
		return fmt.Errorf("archive: %w", err)
	}
	for _, zf := range zr.File {
		if err := x.ctx.Err(); err != nil {
			return err
		}
		mode := zf.Mode()
		switch {
		case mode.IsDir():
			err = x.dir(zf.Name, mode)
		case mode&fs.ModeSymlink != 0:
			err = x.zipSymlink(zf)
		case mode.IsRegular():
			err = x.zipFile(zf, mode)
		default:
			_, err = x.path(zf.Name)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func (x *extractor) zipFile(zf *zip.File, mode fs.FileMode) error {
	rc, err := zf.Open()
	if err != nil {
		return fmt.Errorf("archive: %s: %w", zf.Name, err)
	}
	defer rc.Close()
	return x.file(zf.Name, mode, rc)
}

func (x *extractor) zipSymlink(zf *zip.File) error {
	rc, err := zf.Open()
	if err != nil {
		return fmt.Errorf("archive: %s: %w", zf.Name, err)
	}
	defer rc.Close()
	target, err := io.ReadAll(io.LimitReader(rc, 4096))
	if err != nil {
		return fmt.Errorf("archive: %s: %w", zf.Name, err)
	}
	return x.symlink(zf.Name, string(target))
}

// path is where an entry goes, refusing one that leads outside the root: an
// absolute name, a ".." that climbs out, or a parent that is a link out.
func (x *extractor) path(name string) (string, error) {
	clean := filepath.FromSlash(strings.TrimPrefix(name, "./"))
	if clean == "" || clean == "." {
		return x.root, nil
	}
	if !filepath.IsLocal(clean) {
		return "", fmt.Errorf("archive entry %q leads outside the install directory: refused", name)
	}
	to := filepath.Join(x.root, clean)
	if err := x.inside(filepath.Dir(to)); err != nil {
		return "", fmt.Errorf("archive entry %q: %w", name, err)
	}
	return to, nil
}

// inside checks that dir, with its links resolved, is within the root. A
// directory not made yet is checked through its nearest existing parent.
func (x *extractor) inside(dir string) error {
	root, err := filepath.EvalSymlinks(x.root)
	if err != nil {
		return err
	}
	for {
		real, err := filepath.EvalSymlinks(dir)
		if errors.Is(err, fs.ErrNotExist) && dir != x.root {
			dir = filepath.Dir(dir)
			continue
		}
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(root, real); err != nil || !filepath.IsLocal(rel) && rel != "." {
			return errors.New("leads outside the install directory through a link: refused")
		}
		return nil
	}
}

func (x *extractor) dir(name string, mode fs.FileMode) error {
	to, err := x.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(to, 0o755); err != nil {
		return err
	}
	return os.Chmod(to, mode.Perm()|0o700)
}

func (x *extractor) file(name string, mode fs.FileMode, r io.Reader) error {
	to, err := x.path(name)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if info, err := os.Lstat(to); err == nil && info.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("archive entry %q would write through a link: refused", name)
	}
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	n, err := io.Copy(out, io.LimitReader(r, maxExtracted-x.written+1))
	x.written += n
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("archive: %s: %w", name, err)
	}
	if x.written > maxExtracted {
		return fmt.Errorf("archive unpacks to more than %d bytes: not a runner, refused", int64(maxExtracted))
	}
	return os.Chmod(to, mode.Perm())
}

// symlink makes a link whose target stays inside the root. The target may
// climb ("../lib") only before it descends: a ".." after a name could climb
// out through a link made by an earlier entry.
func (x *extractor) symlink(name, target string) error {
	refused := fmt.Errorf("archive link %q → %q leads outside the install directory: refused", name, target)
	to, err := x.path(name)
	if err != nil {
		return err
	}
	t := filepath.FromSlash(target)
	if t == "" || filepath.IsAbs(t) || filepath.VolumeName(t) != "" || strings.HasPrefix(t, string(filepath.Separator)) {
		return refused
	}
	descended := false
	for _, part := range strings.Split(t, string(filepath.Separator)) {
		switch {
		case part == "..":
			if descended {
				return refused
			}
		case part != "." && part != "":
			descended = true
		}
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	realRoot, err := filepath.EvalSymlinks(x.root)
	if err != nil {
		return err
	}
	realParent, err := filepath.EvalSymlinks(filepath.Dir(to))
	if err != nil {
		return err
	}
	rel, err := filepath.Rel(realRoot, filepath.Join(realParent, t))
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return refused
	}
	return os.Symlink(t, to)
}

func (x *extractor) hardlink(name, target string) error {
	to, err := x.path(name)
	if err != nil {
		return err
	}
	from, err := x.path(target)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	return os.Link(from, to)
}
