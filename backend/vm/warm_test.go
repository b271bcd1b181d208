//go:build linux

package vm_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// Two attempts of a repository in one slot, each in a VM of its own: the
// first one's files in the work folder are on the slot's disk for the
// second; what is the job's only (the runner's _temp and _actions,
// checkout's token in .git/config and a submodule's config) is not; the cache variables point into the slot; the
// guest sees block devices, not the host's slots.
func TestWarmSlotDisk(t *testing.T) {
	im := vmtest.FakeRunnerImage(t)
	l, err := vm.NewLauncher(t.TempDir(), vm.Settings{
		Image: im.Dir, MemoryMiB: 256, CPUs: 1, Accel: vm.AccelTCG, SlotDiskBytes: 1 << 30,
	})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, l.Close()) })
	require.True(t, l.RunsWarm())

	slots := filepath.Join(t.TempDir(), "slots")
	mine := filepath.Join(slots, "octo-org", "app", "1")
	other := filepath.Join(slots, "octo-org", "other", "1")
	for _, d := range []string{mine, other} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(other, "secret-of-other"), []byte("other's secret"), 0o600))

	first := `echo "from the first run" >kept
busybox mkdir -p .git && printf '[core]\n\tbare = false\n[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic c2VjcmV0\n' >.git/config
busybox mkdir -p .git/modules/sub && printf '[http "https://github.com/"]\n\textraheader = AUTHORIZATION: basic c3Vi\n[core]\n\tsub = kept\n' >.git/modules/sub/config
echo leftover >"$RUNNER_TEMP/leftover"
busybox mkdir -p /runner/_work/_actions && echo leftover >/runner/_work/_actions/leftover
echo "npm=$npm_config_cache gocache=$GOCACHE pwd=$(pwd)"
busybox ls /sys/block | busybox tr '\n' ' ' | busybox sed 's/^/disks: /'; echo
for p in ` + slots + " " + other + " " + filepath.Join(other, "secret-of-other") + `; do
  busybox cat "$p" 2>/dev/null && echo "READ $p"
  busybox ls "$p" >/dev/null 2>&1 && echo "LISTED $p"
done
busybox find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o \( -name 'secret-of-*' -o -name kept \) -print 2>/dev/null | busybox sed 's/^/FOUND /'
echo first-done`
	second := `echo "kept: $(busybox cat kept)"
busybox sed 's/^/gitconfig: /' .git/config .git/modules/sub/config
busybox ls "$RUNNER_TEMP/leftover" >/dev/null 2>&1 && echo "temp-kept" || echo "temp-gone"
busybox ls /runner/_work/_actions/leftover >/dev/null 2>&1 && echo "actions-kept" || echo "actions-gone"`

	s := newFake(t)
	run := func(script string, fresh bool) string {
		t.Helper()
		job, jit := enqueue(t, s, fakegithub.JobSpec{Duration: 100 * time.Millisecond, Script: script})
		a := rm.NewAttemptID()
		p, err := l.Launch(context.Background(), rm.LaunchSpec{Attempt: a, JITConfig: jit, Env: []string{"GOCACHE=/mine"},
			Warm: &rm.WarmSlot{Repo: "octo-org/app", N: 1, Dir: mine, Fresh: fresh}})
		require.NoError(t, err)
		t.Cleanup(func() { _ = l.Cleanup(a, false) })
		select {
		case <-p.Done():
		case <-time.After(2 * time.Minute):
			console, _ := os.ReadFile(filepath.Join(l.Dir(a), vm.ConsoleName))
			_ = p.Stop(context.Background(), time.Second)
			t.Fatalf("the VM did not end within 2 minutes; console:\n%s", console)
		}
		console, err := os.ReadFile(filepath.Join(l.Dir(a), vm.ConsoleName))
		require.NoError(t, err)
		c, err := p.(*vm.Process).Console()
		require.NoError(t, err)
		require.Equal(t, 0, p.ExitCode(), "console:\n%s", console)
		rec, ok := s.Job(job)
		require.True(t, ok)
		require.Equal(t, "completed", rec.Status)
		t.Logf("boot phases: %+v", c.Phases)
		require.NoError(t, l.Cleanup(a, false))
		return string(console)
	}

	console := run(first, true)
	require.Contains(t, console, "first-done", console)
	assert.Contains(t, console, "npm=/runner/_work/_caches/npm gocache=/mine pwd=/runner/_work/app/app")
	assert.Contains(t, console, "disks: vda vdb ", "the guest sees its two disks")
	assert.Contains(t, console, "FOUND /runner/_work/app/app/kept", "the search sees the slot's own files")
	for _, leak := range []string{"READ ", "LISTED ", "secret-of-other"} {
		assert.NotContains(t, console, leak, "the host's slots are out of the guest's reach")
	}
	assert.Contains(t, console, "runner-manager-guest: phase scrubbed")

	disk := filepath.Join(mine, vm.SlotDiskName)
	fi, err := os.Stat(disk)
	require.NoError(t, err)
	used := fi.Sys().(*syscall.Stat_t).Blocks * 512
	t.Logf("slot disk after the first job: %d MiB allocated of %d MiB", used>>20, fi.Size()>>20)
	assert.Equal(t, int64(1<<30), fi.Size())
	assert.Less(t, used, int64(64<<20), "sparse: the host holds what the guest wrote")

	console = run(second, false)
	assert.Contains(t, console, "kept: from the first run", "the second run starts where the first left off")
	assert.Contains(t, console, "gitconfig: \tbare = false")
	assert.Contains(t, console, "gitconfig: \tsub = kept")
	assert.NotContains(t, console, "extraheader", "checkout's token goes with its job")
	assert.Contains(t, console, "temp-gone")
	assert.Contains(t, console, "actions-gone")
}
