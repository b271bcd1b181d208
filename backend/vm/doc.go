// Package vm runs each runner attempt in a QEMU microVM of its own: one
// QEMU process per attempt, booted from an image's kernel and initramfs on
// a throwaway qcow2 overlay of the image's read-only base disk, powered
// off and its overlay deleted when the attempt ends. It owns the launcher
// (Launcher), the image contract and its builder (Image, Build), the
// guest's init (guest/init, in the initramfs) and the KVM probe; and, as
// Kind, what the rest of the manager asks of the backend: the rules of a
// policy's rm.VMSettings (forwards by ParseForward), of the
// configuration's [vm] table, and its doctor checks.
//
// The image contract (docs/vm.md): a directory holding KernelFile,
// InitrdFile and BaseDiskFile, the base an ext4 filesystem with the
// installed runner at RunnerDir. The guest reads its configuration and
// the runner's environment (JIT configuration included) from fw_cfg,
// never from the kernel's command line, the disk or QEMU's environment;
// runs RunnerDir/bin/Runner.Listener run; reports the listener's exit code
// on its serial console and powers off.
//
// The guest's network is QEMU's user network, restricted by default to
// the host services the settings forward: a guest reaches nothing else,
// the host's loopback services included.
//
// A VM's processes are the host's QEMU process: a Process is named by
// QEMU's pid and start stamp, which the journal records to re-adopt the
// VM after a restart. QEMU runs in the attempt's cgroup where the host
// allows it, and the meters read the VM from it as a native runner from
// its own (rm.GroupMeter); elsewhere they sample QEMU's process tree.
package vm
