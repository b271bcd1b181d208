package daemon

import (
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
)

// LocalHost is this machine as a host of dataDir: the id kept in its
// state/ (datadir.Dir.LoadOrCreateHostID) and the machine's facts
// (platform.HostInfo), seen now.
func LocalHost(dataDir string) (rm.Host, error) {
	id, err := datadir.New(dataDir).LoadOrCreateHostID()
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
