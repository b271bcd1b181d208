package daemon

import (
	"context"
	"fmt"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/store"
)

// VMConfig is how the default launcher of the vm backend runs its VMs (the
// [vm] section of the configuration); each policy names its image and
// may open more services to its own guests (rm.VMSettings).
type VMConfig struct {
	// Accel is vm.AccelKVM when empty: KVM, checked by a real boot at the
	// first launch, else every launch is refused; vm.AccelTCG runs
	// QEMU's software CPU (about 4× slower) where KVM does not work.
	Accel vm.Accel
	// MemoryMiB is a guest's memory where its policy sets no memory
	// limit (vm.DefaultMemoryMiB when 0).
	MemoryMiB int
	// CPUs is a guest's CPUs (vm.DefaultCPUs when 0).
	CPUs int
	// Network is vm.NetworkRestricted when empty: a guest reaches its
	// runner's services and GitHub's API, and Forward, nothing else.
	Network vm.Network
	// Forward are more host services every guest reaches ("host:port");
	// a policy's rm.VMSettings.Forward are its own guests' only.
	Forward []string
	// SlotDiskBytes is the size of a new warm slot's disk
	// (vm.DefaultSlotDiskBytes when 0).
	SlotDiskBytes uint64
}

// vmLauncher is the default launcher of the vm backend: one vm.Launcher
// for every VM policy of the host, its attempts under DataDir/vm. Its
// guests reach GitHub's web and API hosts besides their runner's own
// services. It checks its programs and KVM only when a VM policy first
// launches, so a host without QEMU runs its other backends.
func (d *Daemon) vmLauncher() (rm.Launcher, error) {
	c := d.cfg.VM
	s := vm.Settings{MemoryMiB: c.MemoryMiB, CPUs: c.CPUs, Accel: c.Accel, Network: c.Network,
		Forward: append(githubHosts(d.cfg.GitHub), c.Forward...), SlotDiskBytes: c.SlotDiskBytes}
	l, err := vm.NewLauncher(d.cfg.DataDir, s, vm.WithLogger(d.log))
	if err != nil {
		return nil, fmt.Errorf("%w: daemon: [vm]: %v", rm.ErrInvalid, err)
	}
	d.closers = append(d.closers, l.Close)
	return l, nil
}

// githubHosts are GitHub's web and API hosts as "host:port" (github.com's
// when the configuration names none): what a job's actions call.
func githubHosts(gc github.Config) []string {
	web, api := gc.WebURL, gc.APIURL
	if web == "" {
		web = "https://github.com"
	}
	if api == "" && web == "https://github.com" {
		api = "https://api.github.com"
	}
	var out []string
	for _, u := range []string{web, api} {
		if hp := vm.HostPortOf(u); hp != "" {
			out = append(out, hp)
		}
	}
	return out
}

// vmFloorRefresh is how often vmFloor reads the policies again.
const vmFloorRefresh = 10 * time.Second

// vmFloor puts a floor under what admission expects an attempt of a VM
// policy to peak at: its guest's size plus QEMU's own (vm.QEMUOverheadMiB),
// what QEMU's RSS can reach whatever the job, so that a host never admits
// more VMs than it can hold at their full size. A guest's size is its
// policy's fixed memory limit, else [vm] memory; a policy limited from its
// peaks sizes its guests from the expected peak itself, and gets no floor.
// Other backends' policies are answered by the wrapped meters alone.
type vmFloor struct {
	rm.Meters
	st         store.Store
	defaultMiB int

	mu     sync.Mutex
	floors map[rm.PolicyID]uint64
	read   time.Time
}

func (d *Daemon) withVMFloor(m rm.Meters) rm.Meters {
	mib := d.cfg.VM.MemoryMiB
	if mib == 0 {
		mib = vm.DefaultMemoryMiB
	}
	return &vmFloor{Meters: m, st: d.st, defaultMiB: mib}
}

// ExpectedPeak is the wrapped meters' answer, at least the policy's floor.
func (f *vmFloor) ExpectedPeak(p rm.PolicyID, estimate uint64) uint64 {
	return max(f.Meters.ExpectedPeak(p, estimate), f.floor(p))
}

// floor is policy p's floor, from policies read at most vmFloorRefresh
// ago (again at once for a policy not known then, at most every second).
func (f *vmFloor) floor(p rm.PolicyID) uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	v, known := f.floors[p]
	age := time.Since(f.read)
	if (known && age < vmFloorRefresh) || (!known && age < time.Second) {
		return v
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	ps, err := f.st.Policies(ctx)
	if err != nil {
		return v // the last answer; the next call tries again
	}
	f.read = time.Now()
	f.floors = make(map[rm.PolicyID]uint64, len(ps))
	for _, pol := range ps {
		f.floors[pol.ID] = vm.PeakFloor(pol, f.defaultMiB)
	}
	return f.floors[p]
}
