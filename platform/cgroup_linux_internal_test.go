//go:build linux

package platform

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
)

// A hybrid host's mountinfo, as on the CI machines: v1 controllers under
// /sys/fs/cgroup/<name>, cpu and cpuacct co-mounted, cgroup2 at unified.
const hybridMountinfo = `25 30 0:23 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw
26 25 0:24 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:8 - tmpfs tmpfs ro,mode=755
27 26 0:25 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate
28 26 0:26 / /sys/fs/cgroup/systemd rw,nosuid,nodev,noexec,relatime shared:10 - cgroup cgroup rw,xattr,name=systemd
31 26 0:29 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:13 - cgroup cgroup rw,cpu,cpuacct
32 26 0:30 / /sys/fs/cgroup/memory rw,nosuid,nodev,noexec,relatime shared:14 - cgroup cgroup rw,memory
33 26 0:31 /docker/abc /sys/fs/cgroup/pids\040x rw,nosuid,nodev,noexec,relatime shared:15 - cgroup cgroup rw,pids
`

func TestCgroupMounts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "mountinfo")
	require.NoError(t, os.WriteFile(path, []byte(hybridMountinfo), 0o644))
	got, err := cgroupMounts(path)
	require.NoError(t, err)
	want := []cgroupMount{
		{point: "/sys/fs/cgroup/unified", root: "/", v2: true},
		{point: "/sys/fs/cgroup/cpu,cpuacct", root: "/", controllers: []string{"cpu", "cpuacct"}},
		{point: "/sys/fs/cgroup/memory", root: "/", controllers: []string{"memory"}},
		{point: "/sys/fs/cgroup/pids x", root: "/docker/abc", controllers: []string{"pids"}},
	}
	assert.Equal(t, want, got, "named hierarchies and other filesystems are left out; escapes undone")

	dir, ok := inMount(got[3], "/docker/abc/job")
	assert.True(t, ok)
	assert.Equal(t, "/sys/fs/cgroup/pids x/job", dir)
	_, ok = inMount(got[3], "/docker/abcdef")
	assert.False(t, ok, "a path outside the mount's root is not in it")
}

func TestOwnPathFor(t *testing.T) {
	own := map[string]string{"": "/", "cpu,cpuacct": "/a", "memory": "/b", "name=systemd": "/c"}
	p, ok := ownPathFor(own, []string{"cpuacct", "cpu"})
	assert.True(t, ok)
	assert.Equal(t, "/a", p)
	_, ok = ownPathFor(own, []string{"cpu"})
	assert.False(t, ok, "the controllers must match exactly")
}

func TestStatValue(t *testing.T) {
	stat := []byte("cache 10\nrss 20\ntotal_inactive_file 4096\ninactive_file 7\n")
	v, ok := statValue(stat, []byte("inactive_file "))
	assert.True(t, ok)
	assert.Equal(t, uint64(7), v, "a key matches at a line's start only")
	v, _ = statValue(stat, []byte("total_inactive_file "))
	assert.Equal(t, uint64(4096), v)
	_, ok = statValue(stat, []byte("oom_kill "))
	assert.False(t, ok)
}

// TestCgroupStartPlacesOnlyTheChild starts processes in a group and checks
// that each is in the attempt's group of every hierarchy, and that no
// thread of this process stayed there.
func TestCgroupStartPlacesOnlyTheChild(t *testing.T) {
	c, err := OpenCgroups(CgroupScope(t.TempDir()))
	if err != nil {
		t.Skipf("no cgroups here: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	for range 20 { // the launching thread must come back every time
		a := rm.NewAttemptID()
		g, err := c.Create(a)
		require.NoError(t, err)
		cmd := exec.Command("sleep", "30")
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		require.NoError(t, g.Start(cmd))
		cg, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/cgroup")
		require.NoError(t, err)
		n := strings.Count(string(cg), "/"+a.String()+"\n")
		assert.Equal(t, len(g.dirs), n, "in the attempt's group of every hierarchy:\n%s", cg)

		tasks, err := os.ReadDir("/proc/self/task")
		require.NoError(t, err)
		for _, task := range tasks {
			b, err := os.ReadFile("/proc/self/task/" + task.Name() + "/cgroup")
			if err != nil {
				continue // exited
			}
			assert.NotContains(t, string(b), a.String(), "thread %s of the manager is in the attempt's group", task.Name())
		}
		left, err := g.Empty(0)
		require.NoError(t, err)
		assert.Len(t, left, 1)
		_ = cmd.Wait()
		require.NoError(t, g.Remove())
	}
	ids, err := c.List()
	require.NoError(t, err)
	assert.Empty(t, ids)
}
