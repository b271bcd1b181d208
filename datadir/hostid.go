package datadir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// LoadOrCreateHostID reads the host's id (HostIDFile), writing a new one
// there (0600) the first time, so restarts keep the host's identity.
func (d Dir) LoadOrCreateHostID() (rm.HostID, error) {
	path := d.HostIDFile()
	id, err := readHostID(path)
	if !errors.Is(err, fs.ErrNotExist) {
		return id, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return rm.HostID{}, fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	err = createOnce(path, []byte(rm.NewHostID().String()+"\n"))
	if err != nil && !errors.Is(err, fs.ErrExist) {
		return rm.HostID{}, fmt.Errorf("write the host id: %w", err)
	}
	// Ours, or the one another process wrote first.
	return readHostID(path)
}

func readHostID(path string) (rm.HostID, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return rm.HostID{}, err
	}
	if err != nil {
		return rm.HostID{}, fmt.Errorf("read the host id: %w", err)
	}
	id, err := rm.ParseHostID(strings.TrimSpace(string(b)))
	if err != nil || id.IsZero() {
		return rm.HostID{}, fmt.Errorf("%s does not hold a host id (%v): remove it only if no runner of this host is registered", path, err)
	}
	return id, nil
}

// createOnce writes path (0600) whole or not at all, and only if it does
// not exist yet (an error wrapping fs.ErrExist then): a synced temporary
// file beside it, hard-linked into place.
func createOnce(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Link(tmp, path)
}
