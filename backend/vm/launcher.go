package vm

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
)

// File names in an attempt's directory, <data>/vm/<attempt>/.
const (
	// DiskName is the attempt's qcow2 overlay of the image's base disk.
	DiskName = "disk.qcow2"
	// ConsoleName is the guest's serial console, as QEMU writes it.
	ConsoleName = "console.log"
	// QEMULogName is QEMU's own stdout and stderr.
	QEMULogName = "qemu.log"
	configName  = "config"
	envName     = "env"
)

// DefaultKeepFailed is how long a failed attempt's console and QEMU logs
// are kept.
const DefaultKeepFailed = 24 * time.Hour

// ErrKVMUnusable: KVM was asked for (the default) and a probe boot under
// it failed; the settings may ask for AccelTCG instead.
var ErrKVMUnusable = rm.NewReasonError(rm.LaunchFailed, "KVM cannot run the guest here")

// The launcher contract and its capabilities, as the root states them.
var (
	_ rm.Launcher        = (*Launcher)(nil)
	_ rm.MemoryContainer = (*Launcher)(nil)
	_ rm.GroupMeter      = (*Launcher)(nil)
	_ rm.RootLister      = (*Launcher)(nil)
)

// Launcher runs each attempt in a QEMU microVM of its own, booted from
// the image's kernel and initramfs on a throwaway qcow2 overlay of its
// read-only base disk, in <data>/vm/<attempt>/. The runner's environment,
// JIT configuration included, reaches the guest through fw_cfg from a
// descriptor QEMU inherits (its file, 0600 in the attempt's directory, is
// removed before QEMU starts): never QEMU's command line or environment.
// The guest's init reports the listener's exit code and whether it ran a
// job on the serial console, which QEMU writes to console.log.
//
// It implements the launcher contract: Launch, Adopt (by QEMU's pid and
// start stamp), RanJob (from the console) and Cleanup; and the optional
// capabilities MemoryContainer (the guest's size), GroupMeter (QEMU's
// cgroup) and RootLister (the VM directories, swept by the supervisor).
type Launcher struct {
	dir        datadir.Dir
	s          Settings
	log        *slog.Logger
	keepFailed time.Duration

	probeOnce sync.Once
	probeErr  error

	mu       sync.Mutex
	procs    map[rm.AttemptID]*Process
	progs    programs
	overlays overlays

	cgOnce sync.Once
	cg     *platform.Cgroups // nil: VMs run outside cgroups
	// limits are the memory limits set for attempts about to launch
	// (SetMemoryLimit): their guests' sizes.
	limits map[rm.AttemptID]uint64
}

// Option configures a Launcher.
type Option func(*Launcher)

// WithLogger sets where the launcher says what it could not do.
func WithLogger(log *slog.Logger) Option { return func(l *Launcher) { l.log = log } }

// WithKeepFailed sets how long a failed attempt's logs are kept; 0
// removes them with the attempt.
func WithKeepFailed(d time.Duration) Option {
	return func(l *Launcher) { l.keepFailed = max(d, 0) }
}

// NewLauncher returns a launcher whose VMs run as s says, their attempts'
// directories under dataDir/vm. The image is checked at each launch (it
// may be rebuilt meanwhile); the programs (QEMU, qemu-img, busybox) and
// KVM (Probe) at the first.
func NewLauncher(dataDir string, s Settings, opts ...Option) (*Launcher, error) {
	if runtime.GOOS != "linux" {
		return nil, errors.New("vm launcher: QEMU's microvm machine runs on Linux only")
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("vm launcher: %w", err)
	}
	l := &Launcher{dir: datadir.New(dataDir), s: s.withDefaults(), log: slog.Default(),
		keepFailed: DefaultKeepFailed, procs: map[rm.AttemptID]*Process{}, limits: map[rm.AttemptID]uint64{}}
	for _, o := range opts {
		o(l)
	}
	l.overlays.dir = l.dir.VMOverlays()
	return l, nil
}

// programs are the host programs a launch runs, found on PATH at the
// first launch (a host without QEMU still runs its other backends).
type programs struct {
	qemu, qemuImg string
	nc            string // "BUSYBOX nc": the host's side of each forward
}

// programs finds QEMU, qemu-img and busybox once they are all there.
func (l *Launcher) programs() (programs, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.progs.qemu != "" {
		return l.progs, nil
	}
	var p programs
	var err error
	if p.qemu, err = exec.LookPath(l.s.QEMU); err != nil {
		return programs{}, fmt.Errorf("QEMU (Debian's qemu-system-x86): %w", err)
	}
	if p.qemuImg, err = exec.LookPath(l.s.QEMUImg); err != nil {
		return programs{}, fmt.Errorf("qemu-img (Debian's qemu-utils): %w", err)
	}
	bb, err := exec.LookPath("busybox")
	if err != nil {
		return programs{}, fmt.Errorf("busybox (the host's side of the guest's forwards): %w", err)
	}
	if strings.ContainsAny(bb, " ,") {
		return programs{}, fmt.Errorf("busybox at %q: QEMU's forward rules cannot name a path with spaces or commas", bb)
	}
	p.nc = bb + " nc"
	l.progs = p
	return p, nil
}

// Settings are the launcher's settings, defaults filled in.
func (l *Launcher) Settings() Settings { return l.s }

// Dir is the attempt's directory (it may not exist).
func (l *Launcher) Dir(a rm.AttemptID) string {
	return l.dir.VM(a)
}

// Launch creates the attempt's overlay and starts its VM. ctx bounds the
// preparation only: the VM outlives it. On error the attempt's directory
// may exist; Cleanup removes it.
func (l *Launcher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	if spec.Attempt.IsZero() {
		return nil, errors.New("launch: the spec names no attempt")
	}
	if spec.JITConfig == "" {
		return nil, fmt.Errorf("launch attempt %s: no JIT configuration to start the runner with", spec.Attempt)
	}
	image := spec.Policy.VM.Image
	if image == "" {
		image = l.s.Image
	}
	if image == "" {
		return nil, fmt.Errorf("launch attempt %s: policy %q names no VM image", spec.Attempt, spec.Policy.Name)
	}
	im, err := OpenImage(image)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	progs, err := l.programs()
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	if err := l.Probe(ctx, im); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	fws, err := guestForwards(l.s.Forward, spec)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	gnet, err := planNet(fws)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	dir := l.Dir(spec.Attempt)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("launch attempt %s: its directory %s exists already: each attempt is launched once", spec.Attempt, dir)
		}
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	s := l.s
	var limited bool
	s.MemoryMiB, limited = l.memoryMiB(spec.Attempt)
	q := qemuArgs{s: s, im: im, dir: dir, net: gnet, nc: progs.nc,
		disk:    filepath.Join(dir, DiskName),
		config:  filepath.Join(dir, configName),
		console: filepath.Join(dir, ConsoleName)}
	if err := l.overlays.create(ctx, progs.qemuImg, im.BaseDisk, q.disk); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	if spec.Warm != nil {
		if q.slot, err = l.slotDisk(ctx, spec.Warm); err != nil {
			return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
		}
	}
	if err := os.WriteFile(q.config, guestConfig(spec.Attempt, gnet, q.slot != ""), 0o600); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	env, dropped := guestEnv(spec)
	if len(dropped) > 0 {
		l.log.Warn("variables left out of the guest runner's environment: their names are no shell names",
			"attempt", spec.Attempt.String(), "names", strings.Join(dropped, ","))
	}
	envFile, err := secretFile(filepath.Join(dir, envName), env)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: runner environment: %w", spec.Attempt, err)
	}
	defer envFile.Close()
	qlog, err := os.OpenFile(filepath.Join(dir, QEMULogName), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	defer qlog.Close()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	cmd := &exec.Cmd{
		Path:        progs.qemu,
		Args:        append([]string{progs.qemu}, q.argv()...),
		Dir:         dir,
		Env:         qemuEnv(),
		Stdout:      qlog,
		Stderr:      qlog,
		ExtraFiles:  []*os.File{envFile}, // descriptor envFD
		SysProcAttr: ownGroup(),
	}
	g, err := l.startContained(spec.Attempt, cmd, s.MemoryMiB, limited)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: start %s: %w", spec.Attempt, progs.qemu, err)
	}
	p := newProcess(cmd.Process.Pid, q.console)
	p.cmd = cmd
	p.memoryMiB = s.MemoryMiB
	p.group = g
	// Read before anything reaps it: an exited child stays in the process
	// table until Wait.
	if p.start, err = platform.StartTime(p.pid); err != nil {
		l.log.Warn("QEMU's start time not read: its VM cannot be adopted after a restart",
			"attempt", spec.Attempt.String(), "pid", p.pid, "err", err)
	}
	go p.wait()
	l.remember(spec.Attempt, p)
	return p, nil
}

// secretFile writes body to a new file at path, 0600, opens it for
// reading and removes its name: the descriptor returned is the only way
// left to it, given to QEMU and closed after its start.
func secretFile(path string, body []byte) (*os.File, error) {
	if err := os.WriteFile(path, body, 0o600); err != nil {
		_ = os.Remove(path)
		return nil, err
	}
	f, err := os.Open(path)
	rmErr := os.Remove(path)
	if err != nil {
		return nil, err
	}
	if rmErr != nil {
		_ = f.Close()
		return nil, rmErr
	}
	return f, nil
}

func (l *Launcher) remember(a rm.AttemptID, p *Process) {
	l.mu.Lock()
	l.procs[a] = p
	l.mu.Unlock()
}

// SetMemoryLimit sets the memory of the attempt's guest, before its
// launch: the policy's memory limit is the VM's size (QEMU's -m, at least
// MinMemoryMiB), so that a job over it meets the guest's own OOM killer
// and the host keeps the rest. The guest's kernel and init take about
// 60 MiB of it.
func (l *Launcher) SetMemoryLimit(a rm.AttemptID, bytes uint64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.limits[a] = bytes
	return nil
}

// memoryMiB is the size of the attempt's guest: its limit (limited),
// else the settings'.
func (l *Launcher) memoryMiB(a rm.AttemptID) (mib int, limited bool) {
	l.mu.Lock()
	limit := l.limits[a]
	l.mu.Unlock()
	if limit == 0 {
		return l.s.MemoryMiB, false
	}
	return int(max(min(limit>>20, 1<<20), MinMemoryMiB)), true
}

// GroupMemory is the word on an ended VM's memory: its guest's size as
// the limit; the processes the guest kernel's OOM killer ended (from the
// console) and those the host's killed in the attempt's cgroup (QEMU over
// its cgroup's limit), which make the attempt end Failed(OOMKilled); the
// cgroup's peak where the kernel keeps one. false while the VM runs, or
// for an attempt not this launcher's.
func (l *Launcher) GroupMemory(a rm.AttemptID) (rm.GroupMemory, bool) {
	l.mu.Lock()
	p := l.procs[a]
	l.mu.Unlock()
	if p == nil {
		return rm.GroupMemory{}, false
	}
	c, err := p.Console()
	if err != nil {
		return rm.GroupMemory{}, false
	}
	m := rm.GroupMemory{LimitBytes: uint64(p.memoryMiB) << 20, OOMKills: uint64(c.OOMKills)}
	if host, ok := p.hostMemory(); ok {
		m.PeakBytes = host.PeakBytes
		m.OOMKills += host.OOMKills
	}
	return m, true
}

// Adopt watches a VM started before a restart if (pid, start) is still
// its QEMU (the process whose command line names the attempt's
// directory). Its exit code comes from the console, as a launched one's.
// rm.ErrProcessGone when it is gone or another process now.
func (l *Launcher) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	if pid <= 0 || start == 0 {
		return nil, fmt.Errorf("adopt attempt %s: pid %d, start %d: %w", a, pid, start, rm.ErrProcessGone)
	}
	dir := l.Dir(a)
	if !namesDir(pid, dir) {
		return nil, fmt.Errorf("adopt attempt %s: pid %d is not its QEMU: %w", a, pid, rm.ErrProcessGone)
	}
	done, err := watchExit(pid, start)
	if err != nil {
		return nil, fmt.Errorf("adopt attempt %s (pid %d): %w", a, pid, err)
	}
	p := newProcess(pid, filepath.Join(dir, ConsoleName))
	p.start = start
	if c := l.cgroups(); c != nil {
		if g, ok := c.Find(a); ok {
			p.group = g
		}
	}
	go func() {
		<-done
		p.finish()
	}()
	l.remember(a, p)
	return p, nil
}

// namesDir reports whether process pid's command line is a QEMU of the
// attempt directory dir (its serial console is dir's).
func namesDir(pid int, dir string) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	for _, arg := range strings.Split(string(b), "\x00") {
		if arg == "file:"+filepath.Join(dir, ConsoleName) {
			return true
		}
	}
	return false
}

// RanJob reports whether the attempt's runner ran a job: its guest's init
// says so on the console when the listener exits and a Worker log is in
// the runner's _diag/. False before the VM ended, or after Cleanup.
func (l *Launcher) RanJob(a rm.AttemptID) bool {
	if a.IsZero() {
		return false
	}
	c, err := ReadConsole(filepath.Join(l.Dir(a), ConsoleName))
	return err == nil && c.RanJob
}

// Cleanup stops the attempt's VM if it still runs (launched, adopted, or
// left running by a manager killed before the journal had its pid) and
// removes its directory, overlay and all; a failed attempt's console and QEMU logs are
// kept in <data>/vm/.failed/<attempt>/ for KeepFailed. Every call prunes
// kept logs older than that. A missing directory is not an error.
func (l *Launcher) Cleanup(a rm.AttemptID, failed bool) error {
	if a.IsZero() {
		return errors.New("cleanup: no attempt named")
	}
	l.mu.Lock()
	p := l.procs[a]
	delete(l.procs, a)
	delete(l.limits, a)
	l.mu.Unlock()
	var errs []error
	dir := l.Dir(a)
	if p != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		errs = append(errs, p.Stop(ctx, 2*time.Second))
		cancel()
	} else {
		// A VM no process of this launcher watches: one launched by a
		// manager killed before the journal had its QEMU's pid.
		errs = append(errs, killOrphan(dir, 5*time.Second))
	}
	errs = append(errs, l.emptyGroup(a))
	if failed && l.keepFailed > 0 {
		errs = append(errs, l.keepLogs(a, dir))
	}
	if err := os.RemoveAll(dir); err != nil {
		errs = append(errs, fmt.Errorf("cleanup attempt %s: %w", a, err))
	}
	errs = append(errs, l.pruneFailed())
	return errors.Join(errs...)
}

func (l *Launcher) keepLogs(a rm.AttemptID, dir string) error {
	kept := l.dir.FailedVM(a)
	if err := os.MkdirAll(kept, 0o700); err != nil {
		return fmt.Errorf("cleanup attempt %s: %w", a, err)
	}
	for _, f := range []string{ConsoleName, QEMULogName} {
		err := os.Rename(filepath.Join(dir, f), filepath.Join(kept, f))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("cleanup attempt %s: keep %s: %w", a, f, err)
		}
	}
	return nil
}

func (l *Launcher) pruneFailed() error {
	dir := l.dir.FailedVMs()
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return err
	}
	var errs []error
	for _, e := range ents {
		fi, err := e.Info()
		if err == nil && time.Since(fi.ModTime()) > l.keepFailed {
			errs = append(errs, os.RemoveAll(filepath.Join(dir, e.Name())))
		}
	}
	return errors.Join(errs...)
}
