//go:build linux

package container_test

import (
	"github.com/runner-manager/runner-manager/internal/tmptest"
	"os"
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/backend/container"
	"github.com/runner-manager/runner-manager/backend/container/containertest"
)

// The engine and image of this test process: containertest's (DOCKER_HOST,
// else a Podman service it starts; the FROM scratch image with the fake
// runner).

func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(containertest.Stop(m.Run())))
}

// testEngine returns the tests' engine, skipping the test (failing it
// under RUNNER_MANAGER_REQUIRE_PODMAN=1) when there is none.
func testEngine(t testing.TB) *container.Engine {
	t.Helper()
	e, _ := containertest.Engine(t)
	return e
}

// engineHost is the tests' engine address.
func engineHost(t testing.TB) string {
	t.Helper()
	_, host := containertest.Engine(t)
	return host
}

// runnerImage is containertest.RunnerImage.
func runnerImage(t testing.TB) string { return containertest.RunnerImage(t) }

// waitDone waits for p's exit.
func waitDone(t testing.TB, done <-chan struct{}, within time.Duration, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(within):
		t.Fatalf("%s did not end within %v", what, within)
	}
}
