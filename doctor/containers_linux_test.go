//go:build linux

package doctor_test

import (
	"context"
	"github.com/runner-manager/runner-manager/internal/tmptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/container/containertest"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/store/storetest"
)

func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(containertest.Stop(m.Run())))
}

// boxPolicy adds a container policy of h's host running image.
func (h host) boxPolicy(t *testing.T, name, image string) rm.Policy {
	t.Helper()
	scope, err := rm.Repository("octo/app")
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", name)
	require.NoError(t, err)
	p := h.policy
	p.ID, p.Name, p.Target, p.RunnerDir = rm.NewPolicyID(), name, target, ""
	p.Backend, p.Container = rm.BackendContainer, rm.ContainerSettings{Image: image, Network: "none"}
	require.NoError(t, p.Validate())
	require.NoError(t, h.st.InsertPolicy(t.Context(), p))
	return p
}

// TestContainers: the engine, each container policy's image and the
// runner containers no live attempt owns, found and (with --fix) removed.
func TestContainers(t *testing.T) {
	e, engine := containertest.Engine(t)
	image := containertest.RunnerImage(t)
	h := newHost(t)
	p := h.boxPolicy(t, "boxed", image)
	h.boxPolicy(t, "local", "localhost/runner-manager-doctor-absent:none")
	h.boxPolicy(t, "remote", "registry.invalid/runner-manager/absent:1")

	// Two containers of this host: a live attempt's and a leftover. Their
	// runners get no usable JIT configuration: they exit at once, and
	// their containers stay until removed.
	l, err := container.NewLauncher(e, h.host.ID, container.Settings{Image: image, Network: "none"})
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	live := storetest.NewAttempt().Policy(p.ID).Host(h.host.ID).State(rm.StateBusy).Build()
	require.NoError(t, h.st.RecordAttempt(t.Context(), live))
	gone := rm.NewAttemptID()
	for _, a := range []rm.AttemptID{live.ID, gone} {
		proc, err := l.Launch(t.Context(), rm.LaunchSpec{Attempt: a, JITConfig: "bm90LWEtY29uZmln"})
		require.NoError(t, err)
		select {
		case <-proc.Done():
		case <-time.After(30 * time.Second):
			t.Fatal("the runner without a configuration did not exit")
		}
		t.Cleanup(func() { _ = l.Cleanup(a, false) })
	}

	s := h.setup()
	s.Config = &configfile.File{Container: configfile.Container{Host: engine}}
	checks, err := doctor.Run(t.Context(), s)
	require.NoError(t, err)
	m := byName(checks)
	require.Len(t, m["container-engine"], 1)
	assert.Equal(t, doctor.OK, m["container-engine"][0].Status, "%s", m["container-engine"][0])
	assert.Contains(t, m["container-engine"][0].Detail, "API ")
	imgs := m["container-image"]
	require.Len(t, imgs, 3)
	assert.Equal(t, doctor.OK, imgs[0].Status, "%s", imgs[0])
	assert.Contains(t, imgs[0].Detail, "policy boxed")
	assert.Equal(t, doctor.Fail, imgs[1].Status, "a local image is never pulled: %s", imgs[1])
	assert.Contains(t, imgs[1].Hint, "podman build")
	assert.Equal(t, doctor.Warn, imgs[2].Status, "a registry's image is pulled at the first launch: %s", imgs[2])
	assert.Contains(t, imgs[2].Hint, "pull")
	left := m["container-leftovers"]
	require.Len(t, left, 1)
	assert.Equal(t, doctor.Warn, left[0].Status)
	assert.Contains(t, left[0].Detail, "2 of this host, 1 that no live attempt owns")
	assert.Contains(t, left[0].Detail, container.ContainerName(gone))
	assert.Contains(t, left[0].Hint, "doctor --fix")
	for _, c := range checks {
		t.Logf("%s", c)
	}

	t.Run("DaemonRunning", func(t *testing.T) {
		s := s
		s.Fix = true
		s.DaemonRunning = func(context.Context) (bool, error) { return true, nil }
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		assert.Contains(t, byName(checks)["container-leftovers"][0].Hint, "stop it")
		list, err := e.Containers(t.Context(), h.host.ID)
		require.NoError(t, err)
		assert.Len(t, list, 2, "nothing removed while a daemon runs")
	})
	t.Run("Fix", func(t *testing.T) {
		s := s
		s.Fix = true
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		c := byName(checks)["container-leftovers"][0]
		assert.Equal(t, doctor.OK, c.Status, "%s", c)
		assert.Contains(t, c.Detail, "removed 1")
		list, err := e.Containers(t.Context(), h.host.ID)
		require.NoError(t, err)
		require.Len(t, list, 1)
		assert.Equal(t, live.ID, list[0].Attempt, "the live attempt's container stays")
	})
}

// TestContainerEngineDown: a container policy and no engine answering is
// a failed check that says how to start one; without a container policy
// the engine is not looked for.
func TestContainerEngineDown(t *testing.T) {
	h := newHost(t)
	s := h.setup()
	s.Config = &configfile.File{Container: configfile.Container{Host: "unix://" + filepath.Join(t.TempDir(), "podman.sock")}}
	checks, err := doctor.Run(t.Context(), s)
	require.NoError(t, err)
	assert.Empty(t, byName(checks)["container-engine"], "no container policy: no engine needed")

	h.boxPolicy(t, "boxed", "ghcr.io/actions/actions-runner:latest")
	checks, err = doctor.Run(t.Context(), s)
	require.NoError(t, err)
	c := byName(checks)["container-engine"]
	require.Len(t, c, 1)
	assert.Equal(t, doctor.Fail, c[0].Status)
	assert.Contains(t, c[0].Detail, "does not answer")
	assert.Contains(t, c[0].Hint, "systemctl enable --now podman.socket")
	assert.Empty(t, byName(checks)["container-image"], "no image checked without an engine")
}
