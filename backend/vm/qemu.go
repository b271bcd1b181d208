package vm

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	rm "github.com/runner-manager/runner-manager"
)

// fw_cfg entries the guest reads (under /sys/firmware/qemu_fw_cfg/by_name).
const (
	fwConfig = "opt/runner-manager/config"
	fwEnv    = "opt/runner-manager/env"
)

// envFD is the descriptor QEMU reads the runner's environment from: its
// first extra file (stdin, stdout, stderr come before).
const envFD = 3

// AttemptEnv names the attempt in the runner's environment, as the
// native launcher does.
const AttemptEnv = "RUNNER_MANAGER_ATTEMPT"

// guestPath is the PATH of the runner in the guest.
const guestPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// ownEnv are the variables the launcher sets itself; a spec's Env never
// overrides them.
var ownEnv = map[string]bool{
	"ACTIONS_RUNNER_INPUT_JITCONFIG":                     true,
	"ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE": true,
	"RUNNER_ALLOW_RUNASROOT":                             true,
	AttemptEnv:                                           true,
}

var shellName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// shellQuote quotes s for a POSIX shell: in single quotes, each ' as '\”.
func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// guestEnv is the runner's environment in the guest, as shell
// assignments: a base (PATH, HOME, USER, LANG), spec.Env, then what the
// runner needs, JIT configuration included. Nothing of the manager's own
// environment: the guest is another machine. Entries of spec.Env whose
// names are no shell names are left out and returned.
//
// A warm attempt's runner gets the cache variables too (slotEnv), under
// spec.Env: the operator's wins.
func guestEnv(spec rm.LaunchSpec) (script []byte, dropped []string) {
	vars := [][2]string{{"PATH", guestPath}, {"HOME", "/root"}, {"USER", "root"}, {"LANG", "C.UTF-8"}}
	at := map[string]int{}
	for i, kv := range vars {
		at[kv[0]] = i
	}
	set := func(name, value string) {
		if i, ok := at[name]; ok {
			vars[i][1] = value
			return
		}
		at[name] = len(vars)
		vars = append(vars, [2]string{name, value})
	}
	var warmEnv []string
	if spec.Warm != nil {
		warmEnv = slotEnv(spec)
	}
	for _, kv := range warmEnv {
		name, value, _ := strings.Cut(kv, "=")
		set(name, value)
	}
	for _, kv := range spec.Env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || !shellName.MatchString(name) {
			dropped = append(dropped, name)
			continue
		}
		if !ownEnv[name] {
			set(name, value)
		}
	}
	set("ACTIONS_RUNNER_INPUT_JITCONFIG", spec.JITConfig)
	set("ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE", "1")
	set("RUNNER_ALLOW_RUNASROOT", "1") // the guest runs it as root: the VM is the boundary
	set(AttemptEnv, spec.Attempt.String())
	var b strings.Builder
	for _, kv := range vars {
		b.WriteString(kv[0] + "=" + shellQuote(kv[1]) + "\n")
	}
	return []byte(b.String()), dropped
}

// guestNet is the guest's side of Settings.Forward: QEMU's guestfwd rules
// and the guest's relays and host names.
type guestNet struct {
	guestfwd []guestfwd
	relays   []string // "IP PORT GUESTIP": the guest's IP:PORT relayed to GUESTIP:PORT
	hosts    []string // "GUESTIP NAME"
}

// guestfwd is one of QEMU's guestfwd rules: a connection of the guest to
// guest:port is a connection of the host to host:port.
type guestfwd struct {
	guest, host string
	port        int
}

// rule is the rule as QEMU takes it, relayed on the host by nc (a
// "busybox nc" command line): QEMU runs it for each connection. (A
// guestfwd to a chardev, "tcp:HOST:PORT", is one connection made when
// QEMU starts, which the guest's first connection takes: a second one at
// the same time gets no answer, and none after the first ends.)
func (g guestfwd) rule(nc string) string {
	return fmt.Sprintf("tcp:%s:%d-cmd:%s %s %d", g.guest, g.port, nc, g.host, g.port)
}

// firstForwardIP is the last octet of the first guest address given to a
// forwarded host (10.0.2.100); QEMU's own are .2 (gateway), .3 (DNS), .15
// (the guest).
const firstForwardIP = 100

func planNet(fws []forward) (guestNet, error) {
	var n guestNet
	addr := map[string]string{}
	relayed := map[int]string{} // port → IP: a guest relay listens on every address
	for _, f := range fws {
		if f.ip {
			if other, ok := relayed[f.port]; ok && other != f.host {
				return guestNet{}, fmt.Errorf("forwards %s:%d and %s:%d: the guest relays a port on all its addresses, so one port serves one IP", other, f.port, f.host, f.port)
			}
			relayed[f.port] = f.host
		}
		key := strings.ToLower(f.host)
		ga, ok := addr[key]
		if !ok {
			if len(addr) >= 255-firstForwardIP {
				return guestNet{}, fmt.Errorf("more than %d forwarded hosts", 255-firstForwardIP)
			}
			ga = fmt.Sprintf("10.0.2.%d", firstForwardIP+len(addr))
			addr[key] = ga
			if !f.ip {
				n.hosts = append(n.hosts, ga+" "+f.host)
			}
		}
		n.guestfwd = append(n.guestfwd, guestfwd{guest: ga, host: f.host, port: f.port})
		if f.ip {
			n.relays = append(n.relays, fmt.Sprintf("%s %d %s", f.host, f.port, ga))
		}
	}
	return n, nil
}

// guestConfig is the guest's fw_cfg configuration (not secret): shell
// assignments the init reads.
//
// With slot, the guest mounts the disk whose serial is RM_SLOT at RM_WORK
// (the runner's work folder) before the runner starts, and scrubs it
// before it powers off.
func guestConfig(a rm.AttemptID, n guestNet, slot bool) []byte {
	var b strings.Builder
	if slot {
		fmt.Fprintf(&b, "RM_SLOT=%s\n", shellQuote(slotSerial))
		fmt.Fprintf(&b, "RM_WORK=%s\n", shellQuote(workFolder))
	}
	fmt.Fprintf(&b, "RM_RUNNER_DIR=%s\n", shellQuote(RunnerDir))
	fmt.Fprintf(&b, "RM_HOSTNAME=%s\n", shellQuote(guestHostname(a)))
	fmt.Fprintf(&b, "RM_FORWARDS=%s\n", shellQuote(strings.Join(n.relays, "\n")))
	fmt.Fprintf(&b, "RM_HOSTS=%s\n", shellQuote(strings.Join(n.hosts, "\n")))
	return []byte(b.String())
}

// guestHostname is the guest's host name: the attempt's, within the 64
// characters a host name may have.
func guestHostname(a rm.AttemptID) string {
	h := "rm-" + strings.ToLower(a.String())
	h = regexp.MustCompile(`[^a-z0-9-]`).ReplaceAllString(h, "-")
	if len(h) > 63 {
		h = h[:63]
	}
	return strings.TrimRight(h, "-")
}

// qemuArgs is QEMU's command line for one attempt: no secret in it (the
// runner's environment comes through fw_cfg from descriptor envFD).
type qemuArgs struct {
	s       Settings
	im      Image
	dir     string // the attempt's directory
	disk    string
	slot    string // the warm slot's disk; "" for none
	config  string
	console string
	net     guestNet
	cmdline string // kernel command line extras
	noDisk  bool   // the probe boots without disk, network or fw_cfg
	nc      string // the host's relay command ("/usr/bin/busybox nc")
}

func (q qemuArgs) argv() []string {
	s := q.s
	args := []string{
		"-name", "runner-manager-" + filepath.Base(q.dir),
		"-M", "microvm,pic=off,pit=off,rtc=on",
		"-accel", string(s.Accel),
		"-cpu", cpuModel(s.Accel),
		"-m", strconv.Itoa(s.MemoryMiB),
		"-smp", strconv.Itoa(s.CPUs),
		"-nodefaults", "-no-user-config", "-display", "none", "-no-reboot",
		"-serial", "file:" + q.console,
		"-kernel", q.im.Kernel,
		"-initrd", q.im.Initrd,
		"-append", kernelCmdline(q.cmdline),
	}
	if q.noDisk {
		return args
	}
	netdev := "user,id=n0"
	if s.Network != NetworkOpen {
		netdev += ",restrict=on"
	}
	for _, g := range q.net.guestfwd {
		netdev += ",guestfwd=" + g.rule(q.nc)
	}
	args = append(args,
		"-netdev", netdev,
		"-device", "virtio-net-device,netdev=n0",
		"-drive", "id=d0,file="+q.disk+",format=qcow2,if=none,discard=unmap",
		"-device", "virtio-blk-device,drive=d0",
	)
	if q.slot != "" {
		// Raw: the file is the disk, sparse, its size the cap; discard
		// gives the host back what the guest frees.
		args = append(args,
			"-drive", "id=d1,file="+q.slot+",format=raw,if=none,discard=unmap",
			"-device", "virtio-blk-device,drive=d1,serial="+slotSerial,
		)
	}
	args = append(args,
		"-fw_cfg", "name="+fwConfig+",file="+q.config,
		"-fw_cfg", fmt.Sprintf("name=%s,file=/dev/fd/%d", fwEnv, envFD),
	)
	return args
}

// cpuModel is the guest's CPU: the host's under KVM; under TCG the
// richest QEMU emulates, so that programs built for x86-64-v2 and later
// run.
func cpuModel(a Accel) string {
	if a == AccelKVM {
		return "host"
	}
	return "max"
}

// kernelCmdline is the guest kernel's command line. tsc_early_khz with
// tsc=reliable and no_timer_check keep the guest from hanging while it
// calibrates its clock on microvm (seen under TCG); pci=off: microvm has
// no PCI.
func kernelCmdline(extra string) string {
	c := "console=ttyS0 quiet panic=-1 pci=off tsc=reliable no_timer_check"
	if khz := hostKHz(); khz > 0 {
		c += " tsc_early_khz=" + strconv.Itoa(khz)
	}
	if extra != "" {
		c += " " + extra
	}
	return c
}

var hostKHz = sync.OnceValue(func() int {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "cpu MHz" {
			mhz, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err == nil && mhz > 0 {
				return int(mhz * 1000)
			}
		}
	}
	return 0
})

// qemuEnv is QEMU's environment: PATH alone, so that no variable of the
// manager (a token, a secret of the policy) reaches it.
func qemuEnv() []string { return []string{"PATH=" + os.Getenv("PATH")} }
