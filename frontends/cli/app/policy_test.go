package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/store/storetest"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

func TestPolicyAddRefused(t *testing.T) {
	e := newEnv(t).noDataDir()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad repo", []string{"--repo", "not-a-repo", "--scale-set", "s"}, "owner/repo"},
		{"bad owner", []string{"--repo=-x/app", "--scale-set", "s"}, "owner"},
		{"no scope", []string{"--scale-set", "s"}, "--repo"},
		{"no labels", []string{"--repo", "o/r"}, "--labels"},
		{"empty label", []string{"--repo", "o/r", "--labels", "a,,b"}, "empty"},
		{"label with space", []string{"--repo", "o/r", "--labels", "a b"}, "label"},
		{"both modes", []string{"--repo", "o/r", "--labels", "a", "--scale-set", "s"}, "not both"},
		{"max below min idle", []string{"--repo", "o/r", "--scale-set", "s", "--max", "1", "--min-idle", "2"}, "below min idle"},
		{"max zero", []string{"--repo", "o/r", "--scale-set", "s", "--max", "0"}, "at least 1"},
		{"unknown runner dir", []string{"--repo", "o/r", "--scale-set", "s", "--runner-dir", "/nonexistent/runner"}, "runner install"},
		{"bad size", []string{"--repo", "o/r", "--scale-set", "s", "--memory-estimate", "lots"}, "512MiB"},
		{"container without image", []string{"--repo", "o/r", "--scale-set", "s", "--backend", "container"}, "needs an image"},
		{"image without container", []string{"--repo", "o/r", "--scale-set", "s", "--image", "runner"}, `need backend "container"`},
		{"bad backend", []string{"--repo", "o/r", "--scale-set", "s", "--backend", "wsl"}, `must be one of "native","container","vm"`},
		{"vm without image", []string{"--repo", "o/r", "--scale-set", "s", "--backend", "vm"}, `backend "vm" needs an image`},
		{"vm image missing", []string{"--repo", "o/r", "--scale-set", "s", "--backend", "vm", "--image", "/nonexistent/image"}, `vm image /nonexistent/image`},
		{"bad volume", []string{"--repo", "o/r", "--scale-set", "s", "--backend", "container", "--image", "r", "--volume", "/c"}, "want SRC:DST"},
		{"bad cpus", []string{"--repo", "o/r", "--scale-set", "s", "--backend", "container", "--image", "r", "--cpus=-2"}, "cpus -2"},
		{"vm forward without vm", []string{"--repo", "o/r", "--scale-set", "s", "--vm-forward", "cache.lan:80"}, `VM settings (forward "cache.lan:80") need backend "vm"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code := app.ExitInvalid
			if tt.name == "bad backend" {
				code = app.ExitUsage // kong's enum refuses it while parsing
			}
			stderr := e.fails(code, append([]string{"policy", "add", "p"}, tt.args...)...)
			assert.Contains(t, stderr, tt.want)
			_, err := os.Stat(e.dataDir)
			assert.ErrorIs(t, err, os.ErrNotExist, "nothing is written, not even the data dir")
		})
	}
	t.Run("bad name", func(t *testing.T) {
		stderr := e.fails(app.ExitInvalid, "policy", "add", "no spaces", "--repo", "o/r", "--scale-set", "s")
		assert.Contains(t, stderr, "policy name")
	})
}

func TestPolicyAddContainer(t *testing.T) {
	e := newEnv(t)
	out := e.ok("policy", "add", "boxed", "--repo", "octo/app", "--scale-set", "boxed", "--max", "4",
		"--backend", "container", "--image", "localhost/runner:1", "--memory-limit", "1GiB", "--cpus", "1.5",
		"--network", "bridge", "--env", "GOPROXY", "--env", "CI_*", "--volume", "gocache:/cache", "--volume", "/srv/npm:/npm:ro")
	assert.Contains(t, out, "added policy boxed")
	p, err := e.journal().PolicyByName(t.Context(), "boxed")
	require.NoError(t, err)
	assert.Equal(t, rm.BackendContainer, p.Backend)
	assert.Equal(t, uint64(1<<30), p.MemoryLimit)
	assert.Equal(t, rm.ContainerSettings{Image: "localhost/runner:1", CPUs: 1.5, Network: "bridge",
		Env: []string{"GOPROXY", "CI_*"}, Volumes: []string{"gocache:/cache", "/srv/npm:/npm:ro"}}, p.Container)
}

func TestPolicyAddVM(t *testing.T) {
	e := newEnv(t)
	image := t.TempDir()
	for _, f := range []string{vm.KernelFile, vm.InitrdFile, vm.BaseDiskFile} {
		require.NoError(t, os.WriteFile(filepath.Join(image, f), nil, 0o644))
	}
	out := e.ok("policy", "add", "forks", "--repo", "octo/app", "--scale-set", "forks", "--max", "2",
		"--backend", "vm", "--image", image, "--memory-limit", "1GiB")
	assert.Contains(t, out, "added policy forks")
	p, err := e.journal().PolicyByName(t.Context(), "forks")
	require.NoError(t, err)
	assert.Equal(t, rm.BackendVM, p.Backend)
	assert.Equal(t, rm.VMSettings{Image: image}, p.VM)
	assert.True(t, p.Container.IsZero())
	assert.Equal(t, uint64(1<<30), p.MemoryLimit)
	assert.Contains(t, e.ok("policy", "show", "forks"), "vm forward:       none (GitHub's services and the host's [vm] forward only)")

	out = e.ok("policy", "add", "cached", "--repo", "octo/app", "--scale-set", "cached", "--backend", "vm", "--image", image,
		"--vm-forward", "cache.lan:8080,127.0.0.1:9000", "--vm-forward", "registry.lan:5000")
	assert.Contains(t, out, "added policy cached")
	p, err = e.journal().PolicyByName(t.Context(), "cached")
	require.NoError(t, err)
	want := []string{"cache.lan:8080", "127.0.0.1:9000", "registry.lan:5000"}
	assert.Equal(t, rm.VMSettings{Image: image, Forward: want}, p.VM)
	assert.Contains(t, e.ok("policy", "show", "cached"),
		"vm forward:       cache.lan:8080,127.0.0.1:9000,registry.lan:5000 (beside GitHub's services and the host's [vm] forward)")
	var pj struct {
		VMForward []string `json:"vm_forward"`
	}
	show := e.ok("policy", "show", "cached", "--json")
	checkSchema(t, docSchemas(t)["policy"], show, false)
	require.NoError(t, json.Unmarshal([]byte(show), &pj))
	assert.Equal(t, want, pj.VMForward)

	stderr := e.fails(app.ExitInvalid, "policy", "add", "bad", "--repo", "octo/app", "--scale-set", "bad", "--backend", "vm", "--image", image,
		"--vm-forward", "10.0.2.2:80")
	assert.Contains(t, stderr, `policy "bad": VM forward "10.0.2.2:80": 10.0.2.0/24 is the guest's own network`)
}

func TestPolicyLifecycle(t *testing.T) {
	e := newEnv(t)
	dir := e.runnerDir()
	out := e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--max", "4", "--min-idle", "1",
		"--memory-estimate", "3GiB", "--runner-dir", dir)
	assert.Contains(t, out, "added policy home")
	e.ok("policy", "add", "gpu", "--org", "octo", "--labels", "linux,gpu", "--paused")

	t.Run("duplicate", func(t *testing.T) {
		stderr := e.fails(app.ExitInvalid, "policy", "add", "home", "--repo", "octo/app", "--scale-set", "x")
		assert.Contains(t, stderr, "exists")
	})

	t.Run("list", func(t *testing.T) {
		out := e.ok("policy", "list")
		assert.Contains(t, out, "home")
		assert.Contains(t, out, "repo:octo/app scale-set=home")
		assert.Contains(t, out, "org:octo labels=gpu,linux")
		assert.Contains(t, out, "paused")
		var list []map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "list", "--json")), &list))
		require.Len(t, list, 2)
		assert.Equal(t, "gpu", list[0]["name"])
		assert.Equal(t, "classic", list[0]["mode"])
		assert.Equal(t, "home", list[1]["name"])
		assert.Equal(t, float64(3<<30), list[1]["memory_estimate_bytes"])
		assert.Equal(t, dir, list[1]["runner_dir"])
	})

	t.Run("show", func(t *testing.T) {
		out := e.ok("policy", "show", "home")
		assert.Contains(t, out, "scale set:")
		assert.Contains(t, out, "3GiB")
		stderr := e.fails(app.ExitNotFound, "policy", "show", "nope")
		assert.Contains(t, stderr, "policy list")
	})

	t.Run("edit", func(t *testing.T) {
		out := e.ok("policy", "edit", "home", "--max", "6", "--min-idle", "0")
		assert.Contains(t, out, "max 4 → 6")
		p, err := e.journal().PolicyByName(t.Context(), "home")
		require.NoError(t, err)
		assert.Equal(t, 6, p.Max)
		assert.Equal(t, 0, p.MinIdle)
		assert.Equal(t, uint64(3<<30), p.MemoryEstimate, "untouched")

		e.fails(app.ExitInvalid, "policy", "edit", "home", "--max", "0")
		e.fails(app.ExitInvalid, "policy", "edit", "home", "--labels", "a", "--scale-set", "b")
		out = e.ok("policy", "edit", "home", "--labels", "x64,linux")
		assert.Contains(t, out, "labels=linux,x64")
		out = e.ok("policy", "edit", "home", "--max", "6")
		assert.Contains(t, out, "nothing to change")
	})

	t.Run("pause resume", func(t *testing.T) {
		e.ok("policy", "pause", "home")
		p, err := e.journal().PolicyByName(t.Context(), "home")
		require.NoError(t, err)
		assert.True(t, p.Paused)
		e.ok("policy", "resume", "home")
		p, err = e.journal().PolicyByName(t.Context(), "home")
		require.NoError(t, err)
		assert.False(t, p.Paused)
	})

	t.Run("rm", func(t *testing.T) {
		st := e.journal()
		p, err := st.PolicyByName(t.Context(), "gpu")
		require.NoError(t, err)
		live := storetest.NewAttempt().Policy(p.ID).Host(p.Host).State(rm.StateBusy).Build()
		require.NoError(t, st.RecordAttempt(t.Context(), live))
		stderr := e.fails(1, "policy", "rm", "gpu")
		assert.Contains(t, stderr, "policy pause gpu")

		ended, err := live.Conclude(rm.Outcome{Kind: rm.CompletedJob}, storetest.Now())
		require.NoError(t, err)
		require.NoError(t, st.RecordAttempt(t.Context(), ended))
		e.ok("policy", "rm", "gpu")
		_, err = st.PolicyByName(t.Context(), "gpu")
		assert.Error(t, err)
	})
}

func TestPolicyApply(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.home, "policies.toml")
	write := func(s string) {
		require.NoError(t, os.WriteFile(file, []byte(s), 0o644))
	}
	names := func() map[string]rm.Policy {
		ps, err := e.journal().Policies(t.Context())
		require.NoError(t, err)
		m := map[string]rm.Policy{}
		for _, p := range ps {
			m[p.Name] = p
		}
		return m
	}

	write(`
[[policy]]
name = "a"
repo = "octo/app"
scale_set = "a"
max = 2

[[policy]]
name = "b"
org = "octo"
labels = ["linux", "big"]
max = 3
min_idle = 1
memory_estimate = "4GiB"
`)
	out := e.ok("policy", "apply", file)
	assert.Contains(t, out, "+ add a")
	assert.Contains(t, out, "+ add b")
	ps := names()
	require.Len(t, ps, 2)
	assert.Equal(t, uint64(4<<30), ps["b"].MemoryEstimate)
	idA := ps["a"].ID

	out = e.ok("policy", "apply", file)
	assert.Contains(t, out, "nothing to do")

	t.Run("change and remove", func(t *testing.T) {
		write(`
[[policy]]
name = "a"
repo = "octo/app"
scale_set = "a"
max = 5

[[policy]]
name = "c"
enterprise = "acme"
scale_set = "c"
max = 1
`)
		out := e.ok("policy", "apply", file, "--dry-run")
		assert.Contains(t, out, "~ change a: max 2 → 5")
		assert.Contains(t, out, "- remove b")
		assert.Contains(t, out, "+ add c")
		assert.Len(t, names(), 2, "a dry run writes nothing")
		assert.Equal(t, 2, names()["a"].Max)

		e.ok("policy", "apply", file)
		ps := names()
		require.Len(t, ps, 2)
		assert.Equal(t, 5, ps["a"].Max)
		assert.Equal(t, idA, ps["a"].ID, "a changed policy keeps its id")
		assert.Contains(t, ps, "c")
	})

	t.Run("invalid writes nothing", func(t *testing.T) {
		before := names()
		write(`
[[policy]]
name = "a"
repo = "octo/app"
scale_set = "a"
max = 9

[[policy]]
name = "d"
repo = "octo/app"
max = 1
`)
		stderr := e.fails(app.ExitInvalid, "policy", "apply", file)
		assert.Contains(t, stderr, "no labels and no scale set")
		assert.Equal(t, before, names())
	})

	t.Run("unknown key", func(t *testing.T) {
		write("[[policy]]\nname = \"a\"\nrepo = \"octo/app\"\nscaleset = \"a\"\nmax = 1\n")
		stderr := e.fails(app.ExitInvalid, "policy", "apply", file)
		assert.Contains(t, stderr, "policies.toml:4")
		assert.Contains(t, stderr, "scale_set")
	})

	t.Run("live runner blocks removal", func(t *testing.T) {
		st := e.journal()
		c := names()["c"]
		live := storetest.NewAttempt().Policy(c.ID).Host(c.Host).State(rm.StateIdle).Build()
		require.NoError(t, st.RecordAttempt(t.Context(), live))
		write("[[policy]]\nname = \"a\"\nrepo = \"octo/app\"\nscale_set = \"a\"\nmax = 7\n")
		stderr := e.fails(1, "policy", "apply", file)
		assert.Contains(t, stderr, "policy pause c")
		assert.Equal(t, 5, names()["a"].Max, "nothing was changed")
	})
}
