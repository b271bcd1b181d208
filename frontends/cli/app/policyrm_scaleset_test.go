package app_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// hasScaleSet reports whether the fake GitHub holds a scale set named name.
func hasScaleSet(srv *fakegithub.Server, name string) bool {
	return slices.ContainsFunc(srv.ScaleSets(), func(r fakegithub.ScaleSetRecord) bool { return r.Name == name })
}

// TestPolicyRmDeletesTheScaleSetItCreated: with the daemon running, the
// scale set it created for a policy is deleted at GitHub when the policy
// is removed, and not created again; --keep-scale-set leaves it (and doctor
// does not count it left behind); a scale set someone else made is never
// deleted; GitHub out of reach removes the policy and says how the scale
// set is deleted later.
func TestPolicyRmDeletesTheScaleSetItCreated(t *testing.T) {
	e := newEnv(t)
	srv, runnerDir := withFakeGitHub(t, e)
	add := func(name string) {
		e.ok("policy", "add", name, "--repo", "octo/app", "--scale-set", name, "--max", "1", "--spare", "0", "--runner-dir", runnerDir,
			"--memory-estimate", "64MiB")
	}
	add("home")
	add("kept")
	add("down")

	ctx, cancel := context.WithCancel(context.Background())
	var logs lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- app.Run(ctx, []string{"--data-dir", e.dataDir, "--log-format", "json", "run", "--metrics-addr", "127.0.0.1:0"},
			app.Streams{Stdout: &logs, Stderr: &logs})
	}()
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			<-done
		}
	}
	defer stop()
	client := localapi.NewClient(e.dataDir)
	require.Eventually(t, func() bool {
		return hasScaleSet(srv, "home") && hasScaleSet(srv, "kept") && hasScaleSet(srv, "down")
	}, 30*time.Second, 20*time.Millisecond, "the daemon creates the scale sets\n%s", logs.String())
	_, err := client.Status(ctx)
	require.NoError(t, err)

	out := e.ok("policy", "rm", "home")
	assert.Contains(t, out, `deleted its scale set "home" at GitHub`)
	assert.False(t, hasScaleSet(srv, "home"))

	out = e.ok("policy", "rm", "kept", "--keep-scale-set")
	assert.Contains(t, out, `kept its scale set "kept" at GitHub (--keep-scale-set)`)
	assert.True(t, hasScaleSet(srv, "kept"))

	// GitHub refuses the delete: the policy is removed all the same.
	srv.Fault(fakegithub.RouteDeleteScaleSet, fakegithub.Fault{Status: 503, Times: 100})
	stderr := e.fails(1, "policy", "rm", "down")
	assert.Contains(t, stderr, `policy down is removed, but its scale set "down"`)
	assert.Contains(t, stderr, "doctor --fix")
	assert.NotContains(t, e.ok("policy", "list"), "down")
	srv.ClearFaults()

	stop()
	// The daemon, told of the removals, created none of them again while
	// it ran on.
	assert.False(t, hasScaleSet(srv, "home"), "not created again by the daemon")

	doc := e.run("doctor")
	assert.Contains(t, doc.stdout, "scale sets created by this host and served by no policy: 1", doc.stdout)
	assert.Contains(t, doc.stdout, `"down"`)
	assert.NotContains(t, doc.stdout, `"kept"`)
	fix := e.run("doctor", "--fix")
	assert.Contains(t, fix.stdout, "deleted 1", fix.stdout)
	assert.False(t, hasScaleSet(srv, "down"))
	assert.True(t, hasScaleSet(srv, "kept"), "a kept scale set is never deleted")
}
