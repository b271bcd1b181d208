package vm

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// overlays makes the attempts' qcow2 overlays. An empty overlay of a base
// is the same file for every attempt (its header names the base by its
// path), so qemu-img makes it once per base, a template kept under the
// launcher's directory, and each attempt's is a copy of the template's
// few hundred KiB: a copy takes well under a millisecond, qemu-img 10 to
// 250 ms here (it links many libraries and opens the base). A base that
// changed (rebuilt in place) gets a new template.
type overlays struct {
	dir string // where templates are kept

	making    sync.Mutex // one template made at a time: launches at once wait for it
	mu        sync.Mutex
	templates map[string]template // by base path
}

type template struct {
	path  string
	size  int64
	mtime time.Time
}

// create writes the attempt's overlay of base at disk, 0600.
func (o *overlays) create(ctx context.Context, qemuImg, base, disk string) error {
	fi, err := os.Stat(base)
	if err != nil {
		return fmt.Errorf("base disk: %w", err)
	}
	t, ok := o.current(base, fi)
	if !ok {
		o.making.Lock()
		if t, ok = o.current(base, fi); !ok { // made meanwhile?
			t, err = o.template(ctx, qemuImg, base, fi)
		}
		o.making.Unlock()
		if err != nil {
			return err
		}
	}
	if err := copyFile(t.path, disk, 0o600); err != nil {
		return fmt.Errorf("overlay: %w", err)
	}
	return nil
}

// current is base's template if it is of the base as it is now.
func (o *overlays) current(base string, fi os.FileInfo) (template, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	t, ok := o.templates[base]
	return t, ok && t.size == fi.Size() && t.mtime.Equal(fi.ModTime())
}

// template makes base's template overlay with qemu-img.
func (o *overlays) template(ctx context.Context, qemuImg, base string, fi os.FileInfo) (template, error) {
	if err := os.MkdirAll(o.dir, 0o700); err != nil {
		return template{}, err
	}
	sum := sha256.Sum256([]byte(base))
	path := filepath.Join(o.dir, "overlay-"+hex.EncodeToString(sum[:8])+".qcow2")
	tmp := path + ".new"
	_ = os.Remove(tmp)
	cmd := exec.CommandContext(ctx, qemuImg, "create", "-q", "-f", "qcow2", "-F", "raw", "-b", base, tmp)
	cmd.Env = qemuEnv()
	if out, err := cmd.CombinedOutput(); err != nil {
		return template{}, fmt.Errorf("qemu-img create overlay: %w: %s", err, strings.TrimSpace(string(out)))
	}
	if err := os.Rename(tmp, path); err != nil {
		return template{}, err
	}
	t := template{path: path, size: fi.Size(), mtime: fi.ModTime()}
	o.mu.Lock()
	if o.templates == nil {
		o.templates = map[string]template{}
	}
	o.templates[base] = t
	o.mu.Unlock()
	return t, nil
}
