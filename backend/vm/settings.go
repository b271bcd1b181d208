package vm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// Accel is how QEMU runs the guest's CPU.
type Accel string

const (
	// AccelKVM runs the guest on the host's CPU through /dev/kvm. The
	// launcher checks that it works by booting the kernel once (Probe):
	// /dev/kvm may open where KVM cannot run a guest (nested
	// virtualization).
	AccelKVM Accel = "kvm"
	// AccelTCG runs the guest on QEMU's software CPU: about a quarter of
	// native speed, but everywhere. Only when asked for.
	AccelTCG Accel = "tcg"
)

// Network says what a guest may reach.
type Network string

const (
	// NetworkRestricted (the default): the guest reaches the host services
	// of Settings.Forward, its policy's (rm.VMSettings.Forward) and its
	// runner's, and nothing else, not even the host's loopback.
	NetworkRestricted Network = "restricted"
	// NetworkOpen: the guest reaches whatever the host's user can
	// (QEMU's user networking without restriction), the host's loopback
	// through 10.0.2.2 included.
	NetworkOpen Network = "open"
)

// Defaults of Settings.
const (
	DefaultMemoryMiB = 2048
	DefaultCPUs      = 2
	// MinMemoryMiB is the smallest guest accepted: the kernel and the
	// guest's init need about 100 MiB before any runner.
	MinMemoryMiB = 128
)

// QEMUOverheadMiB is what QEMU itself takes beyond its guest's memory
// (measured: its RSS is the guest's pages touched plus about this much),
// so that admission counts a VM as MemoryMiB plus this.
const QEMUOverheadMiB = 50

// Settings are how a launcher's VMs run.
type Settings struct {
	// Image is the image directory (see OpenImage) of the attempts whose
	// policy names none (rm.VMSettings.Image).
	Image string
	// MemoryMiB is the guest's memory (QEMU's -m): DefaultMemoryMiB when 0.
	MemoryMiB int
	// CPUs is the guest's CPUs: DefaultCPUs when 0.
	CPUs int
	// Accel is AccelKVM when empty.
	Accel Accel
	// Network is NetworkRestricted when empty.
	Network Network
	// Forward are the host services every guest reaches besides its
	// policy's (rm.VMSettings.Forward) and its runner's own
	// (RunnerServices: the services its JIT configuration names, always
	// reached), as "host:port"
	// (IPv4 address or name). An address the guest dials as it is (the
	// host's 127.0.0.1:8080 is the guest's 127.0.0.1:8080: a relay in the
	// guest forwards it); a name resolves in the guest (/etc/hosts) to an
	// address QEMU connects to that name on the host's side.
	Forward []string
	// QEMU is the qemu-system-x86_64 program; found on PATH when empty.
	QEMU string
	// QEMUImg is the qemu-img program; found on PATH when empty.
	QEMUImg string
	// SlotDiskBytes is the size of a new warm slot's disk
	// (DefaultSlotDiskBytes when 0, at least MinSlotDiskBytes): the most
	// a repository's work folder and caches take in a VM. Sparse: the
	// host gives it what the guest writes.
	SlotDiskBytes uint64
	// MkfsExt4 is the mkfs.ext4 program that makes slot disks; found on
	// PATH when empty. Without it the launcher runs cold (RunsWarm).
	MkfsExt4 string
}

// withDefaults fills the empty fields with their defaults.
func (s Settings) withDefaults() Settings {
	if s.MemoryMiB == 0 {
		s.MemoryMiB = DefaultMemoryMiB
	}
	if s.CPUs == 0 {
		s.CPUs = DefaultCPUs
	}
	if s.Accel == "" {
		s.Accel = AccelKVM
	}
	if s.Network == "" {
		s.Network = NetworkRestricted
	}
	if s.QEMU == "" {
		s.QEMU = "qemu-system-x86_64"
	}
	if s.QEMUImg == "" {
		s.QEMUImg = "qemu-img"
	}
	if s.SlotDiskBytes == 0 {
		s.SlotDiskBytes = DefaultSlotDiskBytes
	}
	if s.MkfsExt4 == "" {
		s.MkfsExt4 = "mkfs.ext4"
	}
	return s
}

// Validate checks every field and says what is wrong with the first bad
// one.
func (s Settings) Validate() error {
	if s.MemoryMiB != 0 && s.MemoryMiB < MinMemoryMiB {
		return fmt.Errorf("memory %d MiB: at least %d MiB", s.MemoryMiB, MinMemoryMiB)
	}
	if s.CPUs < 0 || s.CPUs > 64 {
		return fmt.Errorf("cpus %d: between 1 and 64", s.CPUs)
	}
	switch s.Accel {
	case "", AccelKVM, AccelTCG:
	default:
		return fmt.Errorf("accel %q: want %q or %q", s.Accel, AccelKVM, AccelTCG)
	}
	switch s.Network {
	case "", NetworkRestricted, NetworkOpen:
	default:
		return fmt.Errorf("network %q: want %q or %q", s.Network, NetworkRestricted, NetworkOpen)
	}
	if s.SlotDiskBytes != 0 && (s.SlotDiskBytes < MinSlotDiskBytes || s.SlotDiskBytes > 1<<50) {
		return fmt.Errorf("slot disk %d bytes: between %d (256 MiB) and 1 PiB", s.SlotDiskBytes, uint64(MinSlotDiskBytes))
	}
	_, err := parseForwards(s.Forward)
	return err
}

// forward is one host service a guest reaches.
type forward struct {
	host string // an IPv4 address or a name
	port int
	ip   bool
}

// guestForwards are the services an attempt's guest reaches: the host's
// (Settings.Forward), its policy's (rm.VMSettings.Forward) and its
// runner's (RunnerServices); nothing else, so a policy opens a service to
// its own guests only.
func guestForwards(host []string, spec rm.LaunchSpec) ([]forward, error) {
	all := slices.Concat(host, spec.Policy.VM.Forward, RunnerServices(spec.JITConfig))
	fws, err := parseForwards(all)
	if err != nil && len(spec.Policy.VM.Forward) > 0 {
		return nil, fmt.Errorf("policy %q: %w", spec.Policy.Name, err)
	}
	return fws, err
}

// parseForwards parses Settings.Forward (each by ParseForward), a
// service named twice once.
func parseForwards(list []string) ([]forward, error) {
	var out []forward
	seen := map[string]bool{}
	for _, f := range list {
		host, port, ip, err := ParseForward(f)
		if err != nil {
			return nil, err
		}
		key := strings.ToLower(host) + ":" + strconv.Itoa(port)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, forward{host: host, port: port, ip: ip})
	}
	return out, nil
}
