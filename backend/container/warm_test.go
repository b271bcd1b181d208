//go:build linux

package container_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/container/containertest"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

func TestRunsWarm(t *testing.T) {
	e, err := container.Connect("unix://" + t.TempDir() + "/absent.sock")
	require.NoError(t, err)
	defer e.Close()
	for _, tc := range []struct {
		name    string
		volumes []string
		want    bool
	}{
		{"NoVolumes", nil, true},
		{"VolumeUnderTheWorkFolder", []string{"gocache:/home/runner/_work/_cache"}, true},
		{"VolumeOnTheWorkFolder", []string{"/srv/work:/home/runner/_work"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := container.NewLauncher(e, rm.NewHostID(), container.Settings{Image: "localhost/any:1", Volumes: tc.volumes})
			require.NoError(t, err)
			defer l.Close()
			assert.Equal(t, tc.want, l.RunsWarm())
		})
	}
	for addr, want := range map[string]bool{"unix:///run/podman/podman.sock": true, "tcp://192.0.2.1:2375": false} {
		b := container.NewBackend(container.BackendConfig{Engine: addr, Host: rm.NewHostID()})
		assert.Equal(t, want, b.RunsWarm(), "backend of %s", addr)
		require.NoError(t, b.Close())
	}
	t.Run("RemoteEngine", func(t *testing.T) {
		remote, err := container.Connect("tcp://192.0.2.1:2375")
		require.NoError(t, err)
		defer remote.Close()
		l, err := container.NewLauncher(remote, rm.NewHostID(), container.Settings{Image: "localhost/any:1"})
		require.NoError(t, err)
		defer l.Close()
		assert.False(t, l.RunsWarm(), "a slot is a folder of this host, not the engine's")
	})
}

// TestWarmSlot runs two attempts of a repository in one slot on the
// engine: the first one's files in the work folder are there for the
// second, the cache variables point into the slot (but for the one the
// operator set), another repository's slot is out of the container's
// reach, and what the jobs left stays removable by the manager.
func TestWarmSlot(t *testing.T) {
	gh := newFakeGitHub(t)
	image := containertest.RunnerShellImage(t)
	t.Setenv("GOMODCACHE", "/operator/gomod")
	volume := t.TempDir()
	wf := container.Settings{}.WorkFolder()
	l, _ := newLauncher(t, container.Settings{Image: image, PassEnv: []string{"GOMODCACHE"},
		Volumes: []string{volume + ":" + wf + "/_cache"}})

	data := t.TempDir()
	slots := filepath.Join(data, "slots")
	mine := filepath.Join(slots, "octo", "containers", "1")
	other := filepath.Join(slots, "octo", "other", "1")
	for _, d := range []string{mine, other} {
		require.NoError(t, os.MkdirAll(d, 0o700))
	}
	require.NoError(t, os.WriteFile(filepath.Join(other, "secret-of-other"), []byte("other's secret"), 0o600))

	first := `bb=/bin/busybox
echo "from the first run" >kept
echo "in the volume" >` + wf + `/_cache/v
$bb mkdir -p "$npm_config_cache" locked/deeper && echo cached >"$npm_config_cache/entry" && echo x >locked/deeper/f
$bb chmod 0400 locked/deeper/f && $bb chmod 0500 locked/deeper locked
echo "npm=$npm_config_cache gomod=$GOMODCACHE gocache=$GOCACHE maven=$MAVEN_OPTS"
for p in ` + slots + " " + other + " " + filepath.Join(other, "secret-of-other") + `; do
  $bb cat "$p" 2>/dev/null && echo "READ $p"
  $bb ls -a "$p" 2>/dev/null && echo "LISTED $p"
done
$bb find / \( -path /proc -o -path /sys -o -path /dev \) -prune -o \( -name 'secret-of-*' -o -name kept \) -print 2>/dev/null | $bb sed 's/^/FOUND /'
echo first-done`
	second := `echo "kept: $(/bin/busybox cat kept) cached: $(/bin/busybox cat "$npm_config_cache/entry")"`

	run := func(script string, fresh bool, env ...string) fakegithub.JobRecord {
		t.Helper()
		job := gh.enqueue(fakegithub.JobSpec{Duration: 100 * time.Millisecond, Script: script})
		spec, _ := gh.spec(t, env...)
		spec.Warm = &rm.WarmSlot{Repo: fakeRepo, N: 1, Dir: mine, Fresh: fresh}
		p, err := l.Launch(t.Context(), spec)
		require.NoError(t, err)
		waitDone(t, p.Done(), time.Minute, "the warm container")
		require.NoError(t, l.Cleanup(spec.Attempt, false))
		rec, ok := gh.fake.Job(job)
		require.True(t, ok)
		require.Equal(t, "completed", rec.Status, rec.Log)
		return rec
	}

	rec := run(first, true, "GOCACHE=/attempt/gocache")
	t.Logf("first run's log:\n%s", rec.Log)
	require.Contains(t, rec.Log, "first-done")
	assert.Contains(t, rec.Log, "npm="+wf+"/_caches/npm", "the cache variables point into the slot")
	assert.Contains(t, rec.Log, "maven=-Dmaven.repo.local="+wf+"/_caches/m2")
	assert.Contains(t, rec.Log, "gomod=/operator/gomod", "a variable the manager passes wins")
	assert.Contains(t, rec.Log, "gocache=/attempt/gocache", "a variable of the attempt wins")
	assert.Contains(t, rec.Log, "FOUND "+wf+"/containers/containers/kept", "the search sees the slot's own files")
	for _, leak := range []string{"READ ", "LISTED ", "secret-of-other", "other's secret"} {
		assert.NotContains(t, rec.Log, leak, "another repository's slot is out of reach")
	}
	workspace := filepath.Join(mine, "containers", "containers")
	assert.Equal(t, "from the first run\n", readFile(t, filepath.Join(workspace, "kept")), "the job wrote in the slot on the host")

	assert.Equal(t, "in the volume\n", readFile(t, filepath.Join(volume, "v")), "the policy's volume under the work folder is mounted over the slot")
	assert.NoFileExists(t, filepath.Join(mine, "_cache", "v"))

	rec = run(second, false)
	assert.Contains(t, rec.Log, "kept: from the first run cached: cached", "the second run starts where the first left off")

	var uids []uint32
	_ = filepath.WalkDir(mine, func(p string, d fs.DirEntry, err error) error {
		if fi, err := os.Lstat(p); err == nil {
			uids = append(uids, fi.Sys().(*syscall.Stat_t).Uid)
		}
		return nil
	})
	t.Logf("owners of the slot's files on the host (the manager is uid %d): %v", os.Getuid(), uids)
	require.NoError(t, os.RemoveAll(mine), "the manager removes what the jobs left in the slot")
	assert.NoDirExists(t, mine)
	assert.Equal(t, "other's secret", readFile(t, filepath.Join(other, "secret-of-other")))
}

// TestWarmSlotOtherUser runs a warm attempt as a user other than root: the
// slot is opened to it, its files are its own on the host (rootful
// engine: the container's uids are the host's) and the manager, root
// here, removes them.
func TestWarmSlotOtherUser(t *testing.T) {
	gh := newFakeGitHub(t)
	l, _ := newLauncher(t, container.Settings{Image: containertest.RunnerShellImage(t), User: containertest.ShellImageUser})
	slot := filepath.Join(t.TempDir(), "slots", "octo", "containers", "1")
	require.NoError(t, os.MkdirAll(slot, 0o700))
	job := gh.enqueue(fakegithub.JobSpec{Duration: 100 * time.Millisecond, Script: `echo mine >kept`})
	spec, _ := gh.spec(t)
	spec.Warm = &rm.WarmSlot{Repo: fakeRepo, N: 1, Dir: slot, Fresh: true}
	p, err := l.Launch(t.Context(), spec)
	require.NoError(t, err)
	waitDone(t, p.Done(), time.Minute, "the warm container")
	require.NoError(t, l.Cleanup(spec.Attempt, false))
	rec, _ := gh.fake.Job(job)
	require.Equal(t, "completed", rec.Status, rec.Log)
	kept := filepath.Join(slot, "containers", "containers", "kept")
	fi, err := os.Stat(kept)
	require.NoError(t, err, rec.Log)
	t.Logf("the job's file on the host: owner %d, mode %v", fi.Sys().(*syscall.Stat_t).Uid, fi.Mode())
	assert.Equal(t, uint32(1001), fi.Sys().(*syscall.Stat_t).Uid)
	if os.Getuid() == 0 {
		require.NoError(t, os.RemoveAll(slot))
	}
}

// The backend a daemon registers runs a policy's attempt in its slot, and
// one whose policy mounts its own volume on the work folder cold (the
// operator's volume wins), rather than failing it.
func TestBackendWarm(t *testing.T) {
	gh := newFakeGitHub(t)
	_, engine := containertest.Engine(t)
	b := container.NewBackend(container.BackendConfig{Engine: engine, Host: rm.NewHostID()})
	t.Cleanup(func() { _ = b.Close() })
	require.True(t, b.RunsWarm())
	own := t.TempDir()
	wf := container.Settings{}.WorkFolder()
	for _, tc := range []struct {
		name    string
		volumes []string
		want    func(slot string) string // the source mounted at the work folder
	}{
		{"Warm", nil, func(slot string) string { return slot }},
		{"OwnVolume", []string{own + ":" + wf}, func(string) string { return own }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slot := filepath.Join(t.TempDir(), "slots", "1")
			require.NoError(t, os.MkdirAll(slot, 0o700))
			spec, _ := gh.spec(t)
			spec.Policy = rm.Policy{ID: rm.NewPolicyID(), Name: tc.name, Backend: rm.BackendContainer,
				Container: rm.ContainerSettings{Image: runnerImage(t), Network: "host", Volumes: tc.volumes}}
			spec.Warm = &rm.WarmSlot{Repo: fakeRepo, N: 1, Dir: slot, Fresh: true}
			p, err := b.Launch(t.Context(), spec)
			require.NoError(t, err)
			c, err := inspect(t, container.ContainerName(spec.Attempt))
			require.NoError(t, err)
			var src []string
			for _, m := range c.Mounts {
				if m.Destination == wf {
					src = append(src, m.Source)
				}
			}
			assert.Equal(t, []string{tc.want(slot)}, src, "mounted at the work folder")
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			require.NoError(t, p.Stop(ctx, 5*time.Second))
			require.NoError(t, b.Cleanup(spec.Attempt, false))
		})
	}
}
