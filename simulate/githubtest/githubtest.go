// Package githubtest holds the testing.TB helpers over the fake GitHub
// (package fakegithub): a server closed when the test ends, and the fake
// runner built once per test process. The fake itself is an ordinary
// package the demo ships; this one is for tests only.
package githubtest

import (
	"testing"
	"time"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// NewTestServer starts a fake GitHub for a test with quick timeouts (100 ms
// polls, runners offline after 2 s and lost after 5 s; sessions never lapse,
// as on GitHub), then opts, and closes it when the test ends.
func NewTestServer(tb testing.TB, opts ...fakegithub.Option) *fakegithub.Server {
	tb.Helper()
	base := []fakegithub.Option{
		fakegithub.WithPollTimeout(100 * time.Millisecond),
		fakegithub.WithOfflineAfter(2 * time.Second),
		fakegithub.WithRunnerLostAfter(5 * time.Second),
		// Tests want runners at once; those about boots pass
		// fakegithub.WithRunnerBootDelay after.
		fakegithub.WithRunnerBootDelay(0),
	}
	s := fakegithub.NewServer(append(base, opts...)...)
	tb.Cleanup(s.Close)
	return s
}

// BuildFakeRunner builds the fake runner once per test process and returns
// its install directory (fakegithub.BuildRunner), failing the test if the
// build fails.
func BuildFakeRunner(tb testing.TB) string {
	tb.Helper()
	dir, err := fakegithub.BuildRunner()
	if err != nil {
		tb.Fatal(err)
	}
	return dir
}
