package daemon

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// LoadOrCreateHostID reads <dataDir>/state/host-id, writing a new ID there
// (0600) the first time, so restarts keep the host's identity.
func LoadOrCreateHostID(dataDir string) (rm.HostID, error) {
	path := filepath.Join(dataDir, StateDir, HostIDName)
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

// LocalHost is this machine as a host of dataDir: the id kept in
// <dataDir>/state/host-id (LoadOrCreateHostID) and the machine's facts
// (platform.HostInfo), seen now.
func LocalHost(dataDir string) (rm.Host, error) {
	id, err := LoadOrCreateHostID(dataDir)
	if err != nil {
		return rm.Host{}, err
	}
	h, err := platform.HostInfo()
	if err != nil {
		return rm.Host{}, err
	}
	h.ID = id
	h.SeenAt = time.Now().UTC()
	return h, nil
}

// NamedLocalHost is LocalHost under name, when it is not "" (config's
// [host] name): the name the fleet knows this host by.
func NamedLocalHost(dataDir, name string) (rm.Host, error) {
	h, err := LocalHost(dataDir)
	if err == nil && name != "" {
		h.Name = name
	}
	return h, err
}
