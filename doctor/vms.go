package doctor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
)

// vms checks the vm backend, when a policy of this host uses it or VM
// directories are left: its programs are there ("vm-programs"), each VM
// policy's image holds an image ("vm-image", one per image), the
// accelerator runs a guest ("vm-accel": under KVM a real boot of the first
// image's kernel; tcg is taken as configured), and no VM directory or QEMU
// is left that no live attempt owns ("vm-leftovers"; Fix kills and removes
// them, not while a daemon runs).
func (r *run) vms(ctx context.Context, mine []rm.Policy, lo leftovers) []Check {
	machines := slices.DeleteFunc(slices.Clone(mine), func(p rm.Policy) bool { return p.Backend != rm.BackendVM })
	left, err := vm.Leftovers(r.DataDir)
	if err != nil {
		return []Check{warn("vm-leftovers", "VM directories", err.Error())}
	}
	if len(machines) == 0 && len(left) == 0 {
		return nil
	}
	var out []Check
	if len(machines) > 0 {
		out = append(out, vmPrograms())
		var first *vm.Image
		seen := map[string]bool{}
		for _, p := range machines {
			if seen[p.VM.Image] {
				continue
			}
			seen[p.VM.Image] = true
			im, err := vm.OpenImage(p.VM.Image)
			if err != nil {
				out = append(out, fail("vm-image", fmt.Sprintf("VM image of policy %s", p.Name), err.Error()))
				continue
			}
			out = append(out, ok("vm-image", fmt.Sprintf("VM image %s (policy %s)", im.Dir, p.Name)))
			if first == nil {
				first = &im
			}
		}
		if first != nil {
			out = append(out, r.vmAccel(ctx, *first))
		}
	}
	return append(out, lo.vms(left))
}

func vmPrograms() Check {
	var missing []string
	for _, p := range []struct{ prog, pkg string }{
		{"qemu-system-x86_64", "qemu-system-x86"}, {"qemu-img", "qemu-utils"}, {"busybox", "busybox-static"}} {
		if _, err := exec.LookPath(p.prog); err != nil {
			missing = append(missing, fmt.Sprintf("%s (Debian's %s)", p.prog, p.pkg))
		}
	}
	if len(missing) > 0 {
		return fail("vm-programs", "VM programs: missing "+strings.Join(missing, ", "), "install them: every VM launch fails without")
	}
	return ok("vm-programs", "VM programs: qemu-system-x86_64, qemu-img, busybox")
}

// vmAccel checks the configured accelerator: KVM by a real boot.
func (r *run) vmAccel(ctx context.Context, im vm.Image) Check {
	const name = "vm-accel"
	if r.VMAccel == string(vm.AccelTCG) {
		return ok(name, "VM accelerator: QEMU's software CPU (tcg), as [vm] accel says")
	}
	tmp, err := os.MkdirTemp("", "doctor-vm-")
	if err != nil {
		return warn(name, "VM accelerator", err.Error())
	}
	defer os.RemoveAll(tmp)
	took, err := vm.ProbeBoot(ctx, vm.Settings{Accel: vm.AccelKVM}, im, tmp)
	if err != nil {
		return fail(name, "VM accelerator: KVM cannot run a guest here",
			err.Error()+"\nset [vm] accel = \"tcg\" for QEMU's software CPU (about 4× slower), or run on a host with KVM")
	}
	return ok(name, fmt.Sprintf("VM accelerator: KVM (a probe boot to the guest's init took %v)", took.Round(1e6)))
}

// vms finds VM directories and QEMU processes no live attempt owns.
func (lo leftovers) vms(all []vm.Leftover) Check {
	const name = "vm-leftovers"
	var left []vm.Leftover
	running := 0
	for _, l := range all {
		if !lo.ids[l.Attempt] {
			left = append(left, l)
			if l.QEMU > 0 {
				running++
			}
		}
	}
	what := fmt.Sprintf("VM directories: %d leftover (%d with QEMU running)", len(left), running)
	switch {
	case len(left) == 0:
		return ok(name, what)
	case lo.daemonUp:
		return ok(name, what+" (the running daemon may be using them)")
	case !lo.fix:
		return warn(name, what, "remove them with doctor --fix (their QEMU is killed)")
	}
	removed := 0
	for _, l := range left {
		if vm.RemoveLeftover(l) == nil {
			removed++
		}
	}
	if removed < len(left) {
		return warn(name, fmt.Sprintf("%s: removed %d", what, removed), "")
	}
	return ok(name, fmt.Sprintf("%s: removed %d", what, removed))
}
