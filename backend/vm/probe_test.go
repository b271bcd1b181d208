package vm_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
)

// fakeKVMFailure is a qemu-system-x86_64 that fails as QEMU does when
// nested KVM cannot run the guest, and counts its runs in $0.runs.
const fakeKVMFailure = `#!/bin/sh
echo run >> "$0.runs"
echo "qemu-system-x86_64: error: kvm run failed Invalid argument" >&2
echo "qemu-system-x86_64: ../../accel/kvm/kvm-all.c:1806: kvm_buf_set_msrs: Assertion failed." >&2
exit 134
`

// Without accel = "tcg", the first launch probes KVM with a real boot;
// when it fails the launch is refused with ErrKVMUnusable, QEMU's own
// words and the setting that runs QEMU's software CPU instead, before any
// attempt directory exists. The answer is kept: the next launch is
// refused without a second probe.
func TestKVMRefusedWhenTheProbeBootFails(t *testing.T) {
	bin := t.TempDir()
	qemu := filepath.Join(bin, "qemu-system-x86_64")
	require.NoError(t, os.WriteFile(qemu, []byte(fakeKVMFailure), 0o755))
	img := t.TempDir()
	for _, f := range []string{vm.KernelFile, vm.InitrdFile, vm.BaseDiskFile} {
		require.NoError(t, os.WriteFile(filepath.Join(img, f), nil, 0o600))
	}
	l, err := vm.NewLauncher(t.TempDir(), vm.Settings{Image: img, QEMU: qemu})
	require.NoError(t, err)
	require.Equal(t, vm.AccelKVM, l.Settings().Accel, "KVM unless told")

	for range 2 {
		a := rm.NewAttemptID()
		_, err := l.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: "e30="})
		require.ErrorIs(t, err, vm.ErrKVMUnusable)
		msg := err.Error()
		t.Logf("refused: %s", msg)
		require.Contains(t, msg, "KVM cannot run the guest here")
		require.Contains(t, msg, "kvm_buf_set_msrs: Assertion failed", "QEMU's own words")
		require.Contains(t, msg, `set [vm] accel = "tcg"`)
		require.Equal(t, rm.LaunchFailed, rm.LaunchFailureReason(err))
		require.NoDirExists(t, l.Dir(a), "refused before the attempt's directory")
	}
	runs, err := os.ReadFile(qemu + ".runs")
	require.NoError(t, err)
	require.Equal(t, 1, strings.Count(string(runs), "run"), "one probe boot per launcher")

	// doctor's check boots the same probe.
	im, err := vm.OpenImage(img)
	require.NoError(t, err)
	_, err = vm.ProbeBoot(context.Background(), vm.Settings{Image: img, QEMU: qemu}, im, t.TempDir())
	require.ErrorContains(t, err, "kvm_buf_set_msrs")

	// accel = "tcg" boots nothing to probe.
	tcg, err := vm.NewLauncher(t.TempDir(), vm.Settings{Image: img, QEMU: qemu, Accel: vm.AccelTCG})
	require.NoError(t, err)
	require.NoError(t, tcg.Probe(context.Background(), im))
	runs, err = os.ReadFile(qemu + ".runs")
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(runs), "run"), "only doctor's probe ran since")
}
