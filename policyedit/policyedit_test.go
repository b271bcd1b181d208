package policyedit_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestSpecBuild(t *testing.T) {
	host := rm.NewHostID()
	p, err := policyedit.Spec{Name: "home", Repo: "octo/app", ScaleSet: "home", Max: 2}.Build(host, backend.All())
	require.NoError(t, err)
	assert.Equal(t, host, p.Host)
	assert.Equal(t, "repo:octo/app scale-set=home", policyedit.ShortTarget(p.Target))
	assert.Equal(t, rm.BackendNative, p.Backend)

	for name, tt := range map[string]struct {
		spec policyedit.Spec
		want string
	}{
		"NoScope":     {policyedit.Spec{Name: "p", ScaleSet: "s", Max: 1}, "names no scope"},
		"TwoScopes":   {policyedit.Spec{Name: "p", Repo: "o/r", Org: "o", ScaleSet: "s", Max: 1}, "more than one scope"},
		"BothModes":   {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s", Labels: []string{"a"}, Max: 1}, "not both"},
		"NoMode":      {policyedit.Spec{Name: "p", Repo: "o/r", Max: 1}, "no labels and no scale set"},
		"EmptyLabel":  {policyedit.Spec{Name: "p", Repo: "o/r", Labels: []string{"a", " "}, Max: 1}, "a label is empty"},
		"NoRunner":    {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s", Max: 1, RunnerDir: t.TempDir()}, "holds no installed runner"},
		"Max":         {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s"}, "at least 1"},
		"NoImage":     {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s", Max: 1, Backend: "container"}, "needs an image"},
		"ImageNative": {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s", Max: 1, Image: "runner"}, `need backend "container"`},
		"Backend":     {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s", Max: 1, Backend: "wsl"}, `backend "wsl" is not supported`},
		"VMNoImage":   {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s", Max: 1, Backend: "vm"}, `backend "vm" needs an image`},
		"VMNotImage":  {policyedit.Spec{Name: "p", Repo: "o/r", ScaleSet: "s", Max: 1, Backend: "vm", Image: "/"}, `vm image /: stat /vmlinuz`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := tt.spec.Build(host, backend.All())
			require.ErrorIs(t, err, rm.ErrInvalid)
			assert.Contains(t, err.Error(), tt.want)
		})
	}
}

func TestSpecBuildContainer(t *testing.T) {
	p, err := policyedit.Spec{Name: "box", Repo: "octo/app", ScaleSet: "box", Max: 4, Backend: "container",
		Image: "localhost/runner:1", CPUs: 2, Network: "bridge", Env: []string{"GOPROXY"}, Volumes: []string{"gocache:/cache"},
		MemoryLimit: 1 << 30}.Build(rm.NewHostID(), backend.All())
	require.NoError(t, err)
	assert.Equal(t, rm.BackendContainer, p.Backend)
	assert.Equal(t, rm.ContainerSettings{Image: "localhost/runner:1", CPUs: 2, Network: "bridge",
		Env: []string{"GOPROXY"}, Volumes: []string{"gocache:/cache"}}, p.Container)
	assert.Equal(t, uint64(1<<30), p.MemoryLimit)
}

func ptr[T any](v T) *T { return &v }

func TestEdit(t *testing.T) {
	p := storetest.NewPolicy().Name("home").Repository("octo/app").Autoscale("home", 2).Build()
	got, err := policyedit.Edit{Max: ptr(5), Labels: []string{"linux", "x64"}, Rename: ptr("build")}.Apply(p)
	require.NoError(t, err)
	assert.Equal(t, []string{"name home → build", "target repo:octo/app scale-set=home → repo:octo/app labels=linux,x64", "max 2 → 5"},
		policyedit.Changes(p, got))
	assert.Equal(t, p.ID, got.ID)

	same, err := policyedit.Edit{}.Apply(p)
	require.NoError(t, err)
	assert.Empty(t, policyedit.Changes(p, same))

	_, err = policyedit.Edit{Max: ptr(0)}.Apply(p)
	require.ErrorIs(t, err, rm.ErrInvalid)
	_, err = policyedit.Edit{ScaleSet: ptr("a"), Labels: []string{"b"}}.Apply(p)
	require.ErrorIs(t, err, rm.ErrInvalid)
}

// journal is a real journal with this host's policies a (max 2) and b, and
// another host's policy "theirs".
func journal(t *testing.T) (*sqlite.Store, rm.HostID, map[string]rm.Policy) {
	t.Helper()
	st := sqlitetest.MustOpen(t)
	host, other := rm.NewHostID(), rm.NewHostID()
	ps := map[string]rm.Policy{}
	for _, p := range []rm.Policy{
		storetest.NewPolicy().Name("a").Repository("octo/app").Host(host).Autoscale("a", 2).Spare(rm.DefaultSpare).Build(),
		storetest.NewPolicy().Name("b").Repository("octo/app").Host(host).Autoscale("b", 1).Build(),
		storetest.NewPolicy().Name("theirs").Repository("octo/app").Host(other).Autoscale("t", 1).Build(),
	} {
		require.NoError(t, st.InsertPolicy(t.Context(), p))
		ps[p.Name] = p
	}
	return st, host, ps
}

func names(t *testing.T, st store.Store) map[string]rm.Policy {
	t.Helper()
	ps, err := st.Policies(t.Context())
	require.NoError(t, err)
	m := map[string]rm.Policy{}
	for _, p := range ps {
		m[p.Name] = p
	}
	return m
}

func file(specs ...policyedit.Spec) policyedit.File {
	return policyedit.File{Path: "policies.toml", Policy: specs, Backends: backend.All()}
}

func TestPlan(t *testing.T) {
	st, host, ps := journal(t)
	f := file(
		policyedit.Spec{Name: "a", Repo: "octo/app", ScaleSet: "a", Max: 5},
		policyedit.Spec{Name: "c", Org: "octo", Labels: []string{"gpu"}, Max: 1},
	)
	plan, err := policyedit.Make(t.Context(), st, host, f)
	require.NoError(t, err)
	require.Len(t, plan, 3)
	assert.Equal(t, policyedit.Change, plan[0].Op)
	assert.Equal(t, []string{"max 2 → 5"}, plan[0].Changes)
	assert.Equal(t, policyedit.Add, plan[1].Op)
	assert.Equal(t, policyedit.Remove, plan[2].Op)
	assert.Equal(t, "b", plan[2].Policy.Name, "another host's policy is not this host's to remove")

	require.NoError(t, plan.Apply(t.Context(), st, time.Now()))
	got := names(t, st)
	assert.Len(t, got, 3)
	assert.Equal(t, 5, got["a"].Max)
	assert.Equal(t, ps["a"].ID, got["a"].ID, "a changed policy keeps its id")
	assert.Contains(t, got, "c")
	assert.Contains(t, got, "theirs")

	again, err := policyedit.Make(t.Context(), st, host, f)
	require.NoError(t, err)
	assert.Empty(t, again, "the journal matches the file")

	_, err = policyedit.Make(t.Context(), st, host, file(policyedit.Spec{Name: "theirs", Repo: "octo/app", ScaleSet: "t", Max: 1}))
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "belongs to another host")
}

func TestPlanRefusesRemovingLiveRunners(t *testing.T) {
	st, host, ps := journal(t)
	require.NoError(t, st.RecordAttempt(t.Context(), storetest.NewAttempt().Policy(ps["b"].ID).Host(host).State(rm.StateIdle).Build()))
	_, err := policyedit.Make(t.Context(), st, host, file(policyedit.Spec{Name: "a", Repo: "octo/app", ScaleSet: "a", Max: 5}))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "policy pause b")
}

// A plan whose third change is refused when it is applied (a runner of the
// policy it removes started since the plan was made) applies nothing: not
// the two changes before it.
func TestPlanApplyAllOrNothing(t *testing.T) {
	st, host, ps := journal(t)
	plan, err := policyedit.Make(t.Context(), st, host, file(
		policyedit.Spec{Name: "a", Repo: "octo/app", ScaleSet: "a", Max: 5},
		policyedit.Spec{Name: "c", Repo: "octo/app", ScaleSet: "c", Max: 1},
	))
	require.NoError(t, err)
	require.Len(t, plan, 3)
	require.Equal(t, policyedit.Remove, plan[2].Op)
	require.NoError(t, st.RecordAttempt(t.Context(), storetest.NewAttempt().Policy(ps["b"].ID).Host(host).State(rm.StateStarting).Build()))

	before := names(t, st)
	err = plan.Apply(t.Context(), st, time.Now())
	require.ErrorIs(t, err, store.ErrConflict)
	assert.Contains(t, err.Error(), "nothing was changed")
	assert.Equal(t, before, names(t, st))

	t.Run("NameTaken", func(t *testing.T) {
		plan, err := policyedit.Make(t.Context(), st, host, file(
			policyedit.Spec{Name: "a", Repo: "octo/app", ScaleSet: "a", Max: 7},
			policyedit.Spec{Name: "b", Repo: "octo/app", ScaleSet: "b", Max: 3},
			policyedit.Spec{Name: "d", Repo: "octo/app", ScaleSet: "d", Max: 1},
		))
		require.NoError(t, err)
		require.Len(t, plan, 3)
		// Meanwhile another program adds a policy named d.
		require.NoError(t, st.InsertPolicy(t.Context(), storetest.NewPolicy().Name("d").Repository("octo/app").Host(host).Autoscale("d", 1).Build()))
		before := names(t, st)
		require.ErrorIs(t, plan.Apply(t.Context(), st, time.Now()), store.ErrConflict)
		assert.Equal(t, before, names(t, st))
	})
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "policies.toml")
		require.NoError(t, os.WriteFile(p, []byte(text), 0o600))
		return p
	}
	f, err := policyedit.ReadFile(write("[[policy]]\nname = \"a\"\nrepo = \"octo/app\"\nscale_set = \"a\"\nmax = 2\nmemory_estimate = \"3GiB\"\n"), backend.All())
	require.NoError(t, err)
	require.Len(t, f.Policy, 1)
	assert.Equal(t, uint64(3<<30), f.Policy[0].MemoryEstimate.Bytes())

	_, err = policyedit.ReadFile(write("[[policy]]\nname = \"a\"\nrepo = \"octo/app\"\nscaleset = \"a\"\nmax = 1\n"), backend.All())
	require.Error(t, err)
	assert.Contains(t, err.Error(), "policies.toml:4")

	_, err = policyedit.ReadFile(write("[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"a\"\nmax = 1\n[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"b\"\nmax = 1\n"), backend.All())
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "listed twice")

	_, err = policyedit.ReadFile(filepath.Join(dir, "missing.toml"), backend.All())
	require.ErrorIs(t, err, rm.ErrInvalid)
}

func TestEditWrite(t *testing.T) {
	st, _, ps := journal(t)
	a := ps["a"]
	got, changes, err := policyedit.Edit{Max: ptr(4), Paused: ptr(true)}.Write(t.Context(), st, a)
	require.NoError(t, err)
	assert.Equal(t, []string{"max 2 → 4", "state active → paused"}, changes)
	stored := names(t, st)["a"]
	assert.Equal(t, 4, stored.Max)
	assert.True(t, stored.Paused)
	assert.Equal(t, got.ID, stored.ID)

	same, changes, err := policyedit.Edit{Paused: ptr(true)}.Write(t.Context(), st, stored)
	require.NoError(t, err)
	assert.Empty(t, changes)
	assert.Equal(t, stored, same)
	assert.Equal(t, stored.UpdatedAt, names(t, st)["a"].UpdatedAt, "nothing to change, nothing written")

	_, _, err = policyedit.Edit{Rename: ptr("b")}.Write(t.Context(), st, stored)
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "exists")
}

func TestSpecInsert(t *testing.T) {
	st, host, _ := journal(t)
	p, err := policyedit.Spec{Name: "new", Repo: "octo/app", ScaleSet: "new", Max: 1}.Insert(t.Context(), st, host, backend.All())
	require.NoError(t, err)
	assert.False(t, p.ID.IsZero())
	assert.Equal(t, p.ID, names(t, st)["new"].ID)
	_, err = policyedit.Spec{Name: "a", Repo: "octo/app", ScaleSet: "x", Max: 1}.Insert(t.Context(), st, host, backend.All())
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), "policy edit a")
}

// A file's vm_forward is a VM policy's forwards: added, changed in place
// and, once the journal matches, no change.
func TestPlanVMForward(t *testing.T) {
	st, host, _ := journal(t)
	image := t.TempDir()
	for _, f := range []string{vm.KernelFile, vm.InitrdFile, vm.BaseDiskFile} {
		require.NoError(t, os.WriteFile(filepath.Join(image, f), nil, 0o644))
	}
	path := filepath.Join(t.TempDir(), "policies.toml")
	read := func(fwd string) (policyedit.File, error) {
		text := "[[policy]]\nname = \"forks\"\nrepo = \"octo/app\"\nscale_set = \"forks\"\nmax = 1\n" +
			"backend = \"vm\"\nimage = \"" + image + "\"\nvm_forward = [" + fwd + "]\n"
		require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
		return policyedit.ReadFile(path, backend.All())
	}
	write := func(fwd string) policyedit.File {
		f, err := read(fwd)
		require.NoError(t, err)
		return f
	}
	apply := func(f policyedit.File) policyedit.Plan {
		plan, err := policyedit.Make(t.Context(), st, host, f)
		require.NoError(t, err)
		require.NoError(t, plan.Apply(t.Context(), st, time.Now()))
		return plan
	}

	plan := apply(write(`"cache.lan:8080"`))
	require.Equal(t, policyedit.Add, plan[0].Op)
	assert.Equal(t, []string{"cache.lan:8080"}, names(t, st)["forks"].VM.Forward)

	plan = apply(write(`"cache.lan:8080", "127.0.0.1:9000"`))
	require.Equal(t, policyedit.Change, plan[0].Op)
	assert.Equal(t, []string{"vm {" + image + " [cache.lan:8080]} → {" + image + " [cache.lan:8080 127.0.0.1:9000]}"}, plan[0].Changes)
	assert.Equal(t, []string{"cache.lan:8080", "127.0.0.1:9000"}, names(t, st)["forks"].VM.Forward)

	again, err := policyedit.Make(t.Context(), st, host, write(`"cache.lan:8080", "127.0.0.1:9000"`))
	require.NoError(t, err)
	assert.Empty(t, again, "the journal matches the file")

	_, err = read(`"cache.lan"`)
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), `policy "forks": VM forward "cache.lan": want host:port`)
}
