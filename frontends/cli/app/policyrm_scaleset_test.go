package app_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
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
	stderr := e.fails(app.ExitUnavailable, "policy", "rm", "down")
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

// GitHub unreachable while policy rm deletes the scale set it created:
// one line, naming GitHub unreachable once (its URL once), and what to do.
func TestPolicyRmGitHubUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	e := newEnv(t)
	cfg := filepath.Join(e.home, "rm.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[github]\nurl = \""+url+"\"\n"), 0o600))
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	e.ok("--config", cfg, "policy", "add", "down", "--repo", "octo/app", "--scale-set", "down", "--offline")
	require.NoError(t, e.journal().RecordScaleSet(t.Context(), rm.ScaleSetRecord{ScaleSetID: 7, Name: "down", Scope: "repo:octo/app", CreatedAt: time.Now()}))

	stderr := e.fails(app.ExitUnavailable, "--config", cfg, "policy", "rm", "down")
	assert.Equal(t, 2, strings.Count(strings.TrimSpace(stderr), "\n")+1, "one line and the next step: %q", stderr)
	assert.True(t, strings.HasSuffix(stderr, "\ntry: runner-manager --config "+cfg+" --data-dir "+e.dataDir+" doctor --fix\n"), stderr)
	assert.Contains(t, stderr, `policy down is removed, but its scale set "down" (id 7) is left at GitHub: GitHub is unreachable at `+url)
	assert.Contains(t, stderr, "doctor --fix")
	assert.Equal(t, 1, strings.Count(stderr, l.Addr().String()), "the URL once: %q", stderr)
	assert.NotContains(t, stderr, "retrying")
	assert.Less(t, len(stderr), 480, stderr)
}

// A one-shot command logs GitHub retries at debug: its person reads the
// error it ends with, not every try before; --log-level debug shows them.
func TestOneShotRetriesAtDebug(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())

	e := newEnv(t)
	cfg := filepath.Join(e.home, "rm.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[github]\nurl = \""+url+"\"\n"), 0o600))
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	add := []string{"--config", cfg, "policy", "add", "p", "--repo", "octo/app", "--scale-set", "p"}
	stderr := e.fails(app.ExitUnavailable, add...)
	assert.NotContains(t, stderr, "retrying")
	assert.NotContains(t, stderr, "level=")
	assert.Contains(t, stderr, "connection refused")

	stderr = e.fails(app.ExitUnavailable, append([]string{"--log-level", "debug"}, add...)...)
	assert.Contains(t, stderr, "level=DEBUG msg=\"GitHub request failed, retrying\"")
}
