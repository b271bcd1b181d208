package daemon

import (
	"fmt"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform/vm"
	"github.com/runner-manager/runner-manager/reconcile"
)

// VMConfig is how the default launcher of rm.BackendVM runs its VMs (the
// [vm] section of the configuration); each policy names its image
// (rm.VMSettings).
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
	// Forward are more host services a guest reaches ("host:port").
	Forward []string
}

// vmLauncher is the default launcher of rm.BackendVM: one vm.Launcher
// for every VM policy of the host, its attempts under DataDir/vm. Its
// guests reach GitHub's web and API hosts besides their runner's own
// services. It checks its programs and KVM only when a VM policy first
// launches, so a host without QEMU runs its other backends.
func (d *Daemon) vmLauncher() (reconcile.Launcher, error) {
	c := d.cfg.VM
	s := vm.Settings{MemoryMiB: c.MemoryMiB, CPUs: c.CPUs, Accel: c.Accel, Network: c.Network,
		Forward: append(githubHosts(d.cfg.GitHub), c.Forward...)}
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
