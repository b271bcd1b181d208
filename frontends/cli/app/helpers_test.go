package app_test

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/store/sqlite"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden")

// env is a test's home: a private HOME, XDG directories and data dir.
type env struct {
	t       *testing.T
	home    string
	dataDir string
}

// newEnv gives the test a home of its own and clears the variables the
// program reads, so the machine running the tests changes nothing.
func newEnv(t *testing.T) *env {
	t.Helper()
	home := t.TempDir()
	for _, k := range []string{
		"RUNNER_MANAGER_CONFIG", "RUNNER_MANAGER_DATA_DIR", "RUNNER_MANAGER_LOG_FORMAT", "RUNNER_MANAGER_LOG_LEVEL",
		"RUNNER_MANAGER_METRICS_ADDR", "GITHUB_TOKEN", "XDG_STATE_HOME",
		"RUNNER_MANAGER_STORE", "RUNNER_MANAGER_STORE_PASSWORD", "RUNNER_MANAGER_STORE_PASSWORD_FILE", "PGPASSWORD",
	} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	t.Setenv("HOME", home)
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(home, "config"))
	t.Setenv("COLUMNS", "80")
	// The data directory exists, as after init: the commands that write
	// refuse a missing one (tests of that remove it).
	dataDir := filepath.Join(home, "data")
	require.NoError(t, os.Mkdir(dataDir, 0o700))
	// No service manager runs where the tests do: one whose service runs.
	t.Cleanup(app.SetRunCommand(runningService))
	return &env{t: t, home: home, dataDir: dataDir}
}

// runningService answers service commands as a service manager whose
// service was started and runs as pid 4242.
func runningService(ctx context.Context, argv []string) (string, error) {
	switch argv[0] {
	case "systemctl":
		return "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\nMainPID=4242\n", nil
	case "launchctl":
		return "system/io.github.runner-manager = {\n\tstate = running\n\tpid = 4242\n}\n", nil
	}
	return "", nil
}

type result struct {
	stdout, stderr string
	code           int
}

// run runs the program with args through its kong parser, with --data-dir
// set to the env's data dir.
func (e *env) run(args ...string) result {
	e.t.Helper()
	return e.runRaw(append([]string{"--data-dir", e.dataDir}, args...)...)
}

func (e *env) runRaw(args ...string) result {
	e.t.Helper()
	return e.runIn(context.Background(), "", args...)
}

func (e *env) runIn(ctx context.Context, stdin string, args ...string) result {
	e.t.Helper()
	var out, errb bytes.Buffer
	code := app.Run(ctx, args, app.Streams{Stdin: strings.NewReader(stdin), Stdout: &out, Stderr: &errb})
	return result{stdout: out.String(), stderr: errb.String(), code: code}
}

// noDataDir removes the env's data directory: for the tests of what is
// done, or not, where none exists.
func (e *env) noDataDir() *env {
	e.t.Helper()
	require.NoError(e.t, os.Remove(e.dataDir))
	return e
}

// ok runs args and requires exit status 0.
func (e *env) ok(args ...string) string {
	e.t.Helper()
	r := e.run(args...)
	require.Equal(e.t, 0, r.code, "runner-manager %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stdout
}

// fails runs args and requires exit status code, returning stderr.
func (e *env) fails(code int, args ...string) string {
	e.t.Helper()
	r := e.run(args...)
	require.Equal(e.t, code, r.code, "runner-manager %s\nstdout: %s\nstderr: %s", strings.Join(args, " "), r.stdout, r.stderr)
	return r.stderr
}

// journal opens the env's journal beside the program (WAL allows it).
func (e *env) journal() *sqlite.Store {
	e.t.Helper()
	st, err := sqlite.Open(filepath.Join(e.dataDir, "journal.db"))
	require.NoError(e.t, err)
	e.t.Cleanup(func() { st.Close() })
	return st
}

// runnerDir makes a directory that looks like an installed runner.
func (e *env) runnerDir() string {
	e.t.Helper()
	dir := filepath.Join(e.home, "actions-runner")
	require.NoError(e.t, os.MkdirAll(filepath.Join(dir, "bin"), 0o755))
	require.NoError(e.t, os.WriteFile(filepath.Join(dir, "bin", "Runner.Listener"), []byte("#!/bin/sh\n"), 0o755))
	return dir
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	p := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(p, []byte(got), 0o644))
	}
	want, err := os.ReadFile(p)
	require.NoError(t, err, "run go test -update to create %s", p)
	require.Equal(t, string(want), got, "%s differs: run go test -update if the change is meant", p)
}
