package vm

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/doctor/check"
)

// Doctor checks the vm backend, when a policy of this host uses it or VM
// directories are left: its programs are there ("vm-programs"), each VM
// policy's image holds an image ("vm-image", one per image), the
// accelerator ([vm] accel) runs a guest ("vm-accel": under KVM a real boot
// of the first image's kernel; tcg is taken as configured), and no VM
// directory or QEMU is left that no live attempt owns ("vm-leftovers";
// Fix kills and removes them).
func (Kind) Doctor(ctx context.Context, env check.Env) []check.Check {
	machines := slices.DeleteFunc(slices.Clone(env.Policies), func(p rm.Policy) bool { return p.Backend != rm.BackendVM })
	left, err := Leftovers(env.DataDir)
	if err != nil {
		return []check.Check{check.Warning("vm-leftovers", "VM directories", err.Error())}
	}
	if len(machines) == 0 && len(left) == 0 {
		return nil
	}
	var out []check.Check
	if len(machines) > 0 {
		out = append(out, doctorPrograms())
		var first *Image
		seen := map[string]bool{}
		for _, p := range machines {
			if seen[p.VM.Image] {
				continue
			}
			seen[p.VM.Image] = true
			im, err := OpenImage(p.VM.Image)
			if err != nil {
				out = append(out, check.Failure("vm-image", fmt.Sprintf("VM image of policy %s", p.Name), err.Error()))
				continue
			}
			out = append(out, check.Ok("vm-image", fmt.Sprintf("VM image %s (policy %s)", im.Dir, p.Name)))
			if first == nil {
				first = &im
			}
		}
		if first != nil {
			accel := ""
			if env.Config != nil {
				accel = env.Config.VM.Accel
			}
			out = append(out, doctorAccel(ctx, Accel(accel), *first))
		}
	}
	return append(out, doctorLeftovers(left, env))
}

// doctorPrograms checks the programs every VM launch needs.
func doctorPrograms() check.Check {
	var missing []string
	for _, p := range []struct{ prog, pkg string }{
		{"qemu-system-x86_64", "qemu-system-x86"}, {"qemu-img", "qemu-utils"}, {"busybox", "busybox-static"}} {
		if _, err := exec.LookPath(p.prog); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian's %s)", p.prog, p.pkg))
		}
	}
	if len(missing) > 0 {
		return check.Failure("vm-programs", "VM programs: missing "+strings.Join(missing, ", "), "install them: every VM launch fails without")
	}
	return check.Ok("vm-programs", "VM programs: qemu-system-x86_64, qemu-img, busybox")
}

// doctorAccel checks the configured accelerator: KVM by a real boot.
func doctorAccel(ctx context.Context, accel Accel, im Image) check.Check {
	const name = "vm-accel"
	if accel == AccelTCG {
		return check.Ok(name, "VM accelerator: QEMU's software CPU (tcg), as [vm] accel says")
	}
	tmp, err := os.MkdirTemp("", "doctor-vm-")
	if err != nil {
		return check.Warning(name, "VM accelerator", err.Error())
	}
	defer os.RemoveAll(tmp)
	took, err := ProbeBoot(ctx, Settings{Accel: AccelKVM}, im, tmp)
	if err != nil {
		return check.Failure(name, "VM accelerator: KVM cannot run a guest here",
			err.Error()+"\nset [vm] accel = \"tcg\" for QEMU's software CPU (about 4× slower), or run on a host with KVM")
	}
	return check.Ok(name, fmt.Sprintf("VM accelerator: KVM (a probe boot to the guest's init took %v)", took.Round(1e6)))
}

// doctorLeftovers finds VM directories and QEMU processes no live attempt
// owns; env.Fix removes them.
func doctorLeftovers(all []Leftover, env check.Env) check.Check {
	const name = "vm-leftovers"
	var left []Leftover
	running := 0
	for _, l := range all {
		if !env.Live(l.Attempt) {
			left = append(left, l)
			if l.QEMU > 0 {
				running++
			}
		}
	}
	what := fmt.Sprintf("VM directories: %d leftover (%d with QEMU running)", len(left), running)
	switch {
	case len(left) == 0:
		return check.Ok(name, what)
	case env.DaemonUp:
		return check.Ok(name, what+" (the running daemon may be using them)")
	case !env.Fix:
		return check.Warning(name, what, "remove them with doctor --fix (their QEMU is killed)")
	}
	removed := 0
	for _, l := range left {
		if RemoveLeftover(l) == nil {
			removed++
		}
	}
	if removed < len(left) {
		return check.Warning(name, fmt.Sprintf("%s: removed %d", what, removed), "")
	}
	return check.Ok(name, fmt.Sprintf("%s: removed %d", what, removed))
}
