package platform

import (
	"fmt"
	"os"
	"runtime"

	"github.com/shirou/gopsutil/v4/disk"
	"github.com/shirou/gopsutil/v4/mem"

	rm "github.com/runner-manager/runner-manager"
)

// HostMemory returns the host's total memory and the memory available to new
// work without swapping (Linux MemAvailable, or the system's equivalent), in
// bytes. Admission weighs new runners against these.
func HostMemory() (total, available uint64, err error) {
	v, err := mem.VirtualMemory()
	if err != nil {
		return 0, 0, fmt.Errorf("read host memory: %w", err)
	}
	return v.Total, v.Available, nil
}

// DiskFree returns the bytes an unprivileged user can still write on the
// filesystem holding path. Admission refuses new runners below a floor, since
// every attempt fills its own work directory.
func DiskFree(path string) (uint64, error) {
	u, err := disk.Usage(path)
	if err != nil {
		return 0, fmt.Errorf("read free disk space at %s: %w", path, err)
	}
	return u.Free, nil
}

// HostInfo describes this machine as a Host: name, total memory, CPUs, OS and
// architecture. The caller sets ID and SeenAt.
func HostInfo() (rm.Host, error) {
	name, err := os.Hostname()
	if err != nil {
		return rm.Host{}, fmt.Errorf("read host name: %w", err)
	}
	total, _, err := HostMemory()
	if err != nil {
		return rm.Host{}, err
	}
	return rm.Host{
		Name:        name,
		MemoryBytes: total,
		CPUs:        runtime.NumCPU(),
		OS:          runtime.GOOS,
		Arch:        runtime.GOARCH,
	}, nil
}
