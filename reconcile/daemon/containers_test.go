package daemon_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform/container"
	"github.com/runner-manager/runner-manager/reconcile/daemon"
)

// The container package's settings of a container policy.
func TestContainerSettings(t *testing.T) {
	p := rm.Policy{Backend: rm.BackendContainer, MemoryLimit: 1 << 30, Container: rm.ContainerSettings{
		Image: "ghcr.io/actions/actions-runner:latest", CPUs: 1.5, Network: "bridge",
		Env: []string{"NPM_*"}, Volumes: []string{"cache:/home/runner/_work/_cache"},
	}}
	s := daemon.Settings(p)
	assert.Equal(t, container.Settings{
		Image: "ghcr.io/actions/actions-runner:latest", CPUs: 1.5, Network: "bridge", MemoryBytes: 1 << 30,
		PassEnv: []string{"NPM_*"}, Volumes: []string{"cache:/home/runner/_work/_cache"},
	}, s)
	assert.NoError(t, s.Validate())

	p.MemoryLimit = rm.MemoryLimitFromPeaks
	assert.Zero(t, daemon.Settings(p).MemoryBytes, "from peaks: set per attempt at its launch")

	p.Container.Image = "localhost/my-runner:1"
	assert.Equal(t, container.PullNever, daemon.Settings(p).Pull, "a local image is never pulled")
}
