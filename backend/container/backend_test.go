package container_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/container"
)

// The launcher settings of a container policy.
func TestSettingsOf(t *testing.T) {
	p := rm.Policy{Backend: rm.BackendContainer, MemoryLimit: 1 << 30, Container: rm.ContainerSettings{
		Image: "ghcr.io/actions/actions-runner:latest", CPUs: 1.5, Network: "bridge",
		Env: []string{"NPM_*"}, Volumes: []string{"cache:/home/runner/_work/_cache"},
	}}
	s := container.SettingsOf(p)
	assert.Equal(t, container.Settings{
		Image: "ghcr.io/actions/actions-runner:latest", CPUs: 1.5, Network: "bridge", MemoryBytes: 1 << 30,
		PassEnv: []string{"NPM_*"}, Volumes: []string{"cache:/home/runner/_work/_cache"},
	}, s)
	assert.NoError(t, s.Validate())

	p.MemoryLimit = rm.MemoryLimitFromPeaks
	assert.Zero(t, container.SettingsOf(p).MemoryBytes, "from peaks: set per attempt at its launch")

	p.Container.Image = "localhost/my-runner:1"
	assert.Equal(t, container.PullNever, container.SettingsOf(p).Pull, "a local image is never pulled")
}

// A backend whose engine does not answer fails each call that needs it
// with the engine's reason, and knows nothing of attempts it never ran.
func TestBackendEngineDown(t *testing.T) {
	b := container.NewBackend(container.BackendConfig{
		Engine: "unix://" + filepath.Join(t.TempDir(), "no-engine.sock"), Host: rm.NewHostID()})
	t.Cleanup(func() { assert.NoError(t, b.Close()) })
	b.SetExpectedPeak(func(rm.Policy) uint64 { return 1 << 30 })
	a := rm.NewAttemptID()
	require.NoError(t, b.SetMemoryLimit(a, 512<<20))

	p := rm.Policy{ID: rm.NewPolicyID(), Name: "boxed", Backend: rm.BackendContainer,
		Container: rm.ContainerSettings{Image: "localhost/runner:1"}}
	_, err := b.Launch(t.Context(), rm.LaunchSpec{Attempt: a, Policy: p, JITConfig: "jit"})
	require.ErrorIs(t, err, container.ErrEngineDown)
	assert.Equal(t, rm.BackendUnavailable, rm.LaunchFailureReason(err), "the attempt ends with the engine's reason")

	_, err = b.Adopt(a, 4242, 1)
	assert.Error(t, err)
	assert.False(t, b.RanJob(a))
	_, ok := b.GroupMemory(a)
	assert.False(t, ok, "no container, no word on its memory")
	assert.ErrorIs(t, b.RemoveLeftovers(t.Context(), func(rm.AttemptID) bool { return false }), container.ErrEngineDown)
}
