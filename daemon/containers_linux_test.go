//go:build linux

package daemon_test

import "github.com/runner-manager/runner-manager/backend/container/containertest"

// stopEngines stops the container engine service the tests started, if
// any (see containertest). The container tests are in
// containers_e2e_linux_test.go.
func stopEngines(code int) int { return containertest.Stop(code) }
