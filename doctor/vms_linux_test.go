package doctor_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// startVM starts a process that looks like the QEMU of attempt id's VM in
// the data directory (its serial console is that attempt's).
func (h host) startVM(t *testing.T, id rm.AttemptID) <-chan struct{} {
	t.Helper()
	dir := filepath.Join(h.dir, "vm", id.String())
	require.NoError(t, os.MkdirAll(dir, 0o700))
	cmd := exec.Command("sh", "-c", "sleep 60", "qemu", "-serial", "file:"+filepath.Join(dir, vm.ConsoleName))
	require.NoError(t, cmd.Start())
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-done })
	return done
}

// The vm checks: a VM policy's image that is no image fails; tcg is taken
// as configured; a VM directory no live attempt owns, and its QEMU, are
// left alone without --fix and removed with it, a live one's kept.
func TestRunVMs(t *testing.T) {
	h := newHost(t)
	image := t.TempDir()
	for _, f := range []string{vm.KernelFile, vm.InitrdFile, vm.BaseDiskFile} {
		require.NoError(t, os.WriteFile(filepath.Join(image, f), nil, 0o644))
	}
	good := storetest.NewPolicy().Name("forks").Repository("octo/app").Host(h.host.ID).Autoscale("forks", 2).
		VM(rm.VMSettings{Image: image}).Build()
	gone := storetest.NewPolicy().Name("gone").Repository("octo/app").Host(h.host.ID).Autoscale("gone", 2).
		VM(rm.VMSettings{Image: filepath.Join(image, "missing")}).Build()
	for _, p := range []rm.Policy{good, gone} {
		require.NoError(t, h.st.InsertPolicy(t.Context(), p))
	}
	live := storetest.NewAttempt().Policy(good.ID).Host(h.host.ID).State(rm.StateBusy).Build()
	require.NoError(t, h.st.RecordAttempt(t.Context(), live))
	h.startVM(t, live.ID)
	orphan := rm.NewAttemptID()
	orphanDone := h.startVM(t, orphan)

	s := h.setup()
	s.Config = &configfile.File{VM: configfile.VM{Accel: "tcg"}}
	checks, err := doctor.Run(t.Context(), s)
	require.NoError(t, err)
	m := byName(checks)
	require.Len(t, m["vm-image"], 2)
	assert.Equal(t, doctor.OK, m["vm-image"][0].Status, "%s", m["vm-image"][0])
	assert.Equal(t, doctor.Fail, m["vm-image"][1].Status, "%s", m["vm-image"][1])
	assert.Contains(t, m["vm-accel"][0].Detail, "tcg")
	require.Len(t, m["vm-leftovers"], 1)
	assert.Equal(t, doctor.Warn, m["vm-leftovers"][0].Status)
	assert.Contains(t, m["vm-leftovers"][0].Detail, "1 leftover (1 with QEMU running)")

	s.Fix = true
	checks, err = doctor.Run(t.Context(), s)
	require.NoError(t, err)
	assert.Contains(t, byName(checks)["vm-leftovers"][0].Detail, "removed 1")
	select {
	case <-orphanDone:
	case <-time.After(10 * time.Second):
		t.Fatal("the leftover QEMU still runs")
	}
	assert.NoDirExists(t, filepath.Join(h.dir, "vm", orphan.String()))
	assert.DirExists(t, filepath.Join(h.dir, "vm", live.ID.String()), "a live attempt's VM stays")
}
