package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Probe checks, once per launcher, that a guest boots under the settings'
// accelerator: under KVM a real boot of im's kernel to its first process
// (a /dev/kvm that opens may still fail every guest, nested), within
// probeTimeout. Under TCG it boots nothing. The first answer is kept:
// ErrKVMUnusable, with what QEMU said, when KVM fails.
func (l *Launcher) Probe(ctx context.Context, im Image) error {
	if l.s.Accel == AccelTCG {
		return nil
	}
	l.probeOnce.Do(func() { l.probeErr = l.probe(ctx, im) })
	return l.probeErr
}

// probeTimeout bounds a probe boot: a KVM boot takes well under a second.
const probeTimeout = 20 * time.Second

func (l *Launcher) probe(ctx context.Context, im Image) error {
	progs, err := l.programs()
	if err != nil {
		return err
	}
	s := l.s
	s.QEMU = progs.qemu
	_, err = bootProbe(ctx, s, im, l.dir.VMs())
	if err != nil {
		return fmt.Errorf("%w: %w (set [vm] accel = %q in the configuration to run QEMU's software CPU instead, about 4× slower)", ErrKVMUnusable, err, AccelTCG)
	}
	return nil
}

// bootProbe boots im's kernel and initramfs under s's accelerator, with
// no disk nor network, to the guest init's first step, and returns the
// time it took. tmp holds the console log meanwhile.
func bootProbe(ctx context.Context, s Settings, im Image, tmp string) (time.Duration, error) {
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return 0, err
	}
	dir, err := os.MkdirTemp(tmp, ".probe-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	s.MemoryMiB, s.CPUs = MinMemoryMiB, 1
	q := qemuArgs{s: s, im: im, dir: dir, console: filepath.Join(dir, ConsoleName), cmdline: probeArg, noDisk: true}
	cmd := exec.CommandContext(ctx, s.QEMU, q.argv()...)
	cmd.Env = qemuEnv()
	t0 := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(t0)
	c, _ := ReadConsole(q.console)
	if c.probed {
		return took, nil
	}
	if ctx.Err() != nil {
		return took, fmt.Errorf("the probe boot did not reach the guest's init within %s: %s", probeTimeout, lastLine(out))
	}
	if err != nil {
		return took, fmt.Errorf("QEMU: %w: %s", err, lastLine(out))
	}
	return took, fmt.Errorf("the probe boot ended before the guest's init: %s", lastLine(out))
}

// probeArg on the kernel command line makes the guest's init say "probe"
// and power off at once.
const probeArg = "runner_manager_probe"

func lastLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if s == "" {
		return "no output"
	}
	return s
}

// ProbeBoot boots im's kernel and initramfs once under s's accelerator,
// with no disk nor network, to the guest init's first step, and returns
// how long QEMU took: what Probe does before the first launch under KVM,
// for a check (doctor) to tell whether KVM runs a guest here. tmp holds
// the console meanwhile.
func ProbeBoot(ctx context.Context, s Settings, im Image, tmp string) (time.Duration, error) {
	if err := s.Validate(); err != nil {
		return 0, err
	}
	s = s.withDefaults()
	qemu, err := exec.LookPath(s.QEMU)
	if err != nil {
		return 0, fmt.Errorf("QEMU (Debian's qemu-system-x86): %w", err)
	}
	s.QEMU = qemu
	return bootProbe(ctx, s, im, tmp)
}
