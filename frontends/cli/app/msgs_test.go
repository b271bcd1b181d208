package app_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// doubled tells whether a line says a prefix twice ("attempts: attempts:").
func doubled(msg string) bool {
	for _, line := range strings.Split(msg, "\n") {
		parts := strings.Split(line, ": ")
		for i := 1; i < len(parts)-1; i++ {
			if parts[i] == parts[i-1] {
				return true
			}
		}
	}
	return false
}

// Each message says what is wrong in plain words, once, and a hint it gives
// is a form that works.
func TestMessages(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "p", "--repo", "o/r", "--scale-set", "s")
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"LogsUnknownID", []string{"logs", "nope"}, `"nope" is not an attempt id (26 letters and digits)`},
		{"LogsZeroID", []string{"logs", "00000000000000000000000001"}, `is not an attempt id (all zeros means none)`},
		{"SinceNegative", []string{"attempts", "--since", "-5h"}, `--since "-5h": give how long ago without a sign (--since 5h)`},
		{"SinceNegativeEq", []string{"attempts", "--since=-5h"}, `(--since 5h)`},
		{"SpareNegativeEdit", []string{"policy", "edit", "p", "--spare", "-1"}, `--spare: "-1" is neither auto (spares sized by the day, the default) nor a number of warm spares from 0 (none) to 64`},
		{"SpareNegativeAdd", []string{"policy", "add", "q", "--repo", "o/r", "--scale-set", "q", "--spare", "-1"}, `--spare: "-1" is neither auto`},
		{"SpareWord", []string{"policy", "add", "q", "--repo", "o/r", "--scale-set", "q", "--spare", "many"}, `--spare: "many" is neither auto`},
		{"AttemptsLimit", []string{"attempts", "--limit", "-1"}, "runner-manager: attempts: --limit -1: give a number of attempts"},
		{"LogsLines", []string{"logs", "x", "-n", "-3"}, "runner-manager: logs: -n -3: give a number of lines"},
		{"WeightsLimit", []string{"weights", "--limit", "-1"}, "runner-manager: weights: --limit -1: give a number of jobs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.run(tc.args...)
			assert.Equal(t, app.ExitInvalid, r.code, r.stderr)
			assert.Contains(t, r.stderr, tc.want)
			assert.NotContains(t, r.stderr, "mean ?")
			assert.NotContains(t, r.stderr, " a attempt")
			assert.NotContains(t, r.stderr, "perhaps try", "kong's hint fails again")
			assert.False(t, doubled(r.stderr), "a prefix said twice: %s", r.stderr)
		})
	}
	// The hints given work.
	e.ok("attempts", "--since", "5h")
	e.ok("policy", "edit", "p", "--spare", "0")
	e.ok("policy", "edit", "p", "--spare", "auto")
}

// A data directory that is a file is named as such, by every command,
// rather than as a socket or journal error inside it.
func TestDataDirIsAFile(t *testing.T) {
	e := newEnv(t).noDataDir()
	file := filepath.Join(e.home, "data")
	require.NoError(t, os.WriteFile(file, []byte("x"), 0o600))
	for _, args := range [][]string{
		{"status"}, {"status", "--json"}, {"attempts"}, {"policy", "list"}, {"logs", "0123456789abcdefghjkmnpqrr"},
		{"policy", "add", "p", "--repo", "o/r", "--scale-set", "s"},
	} {
		t.Run(strings.Join(args, "_"), func(t *testing.T) {
			r := e.run(args...)
			assert.Equal(t, app.ExitLocalState, r.code, r.stderr)
			assert.Contains(t, r.stderr, "data dir "+file+" is a file, not a directory: give a directory with --data-dir")
			assert.NotContains(t, r.stderr, "sock")
			assert.NotContains(t, r.stderr, "journal.db")
		})
	}
	r := e.runRaw("--data-dir", filepath.Join(file, "sub"), "status")
	assert.Equal(t, app.ExitLocalState, r.code, r.stderr)
	assert.Contains(t, r.stderr, "a part of its path is a file, not a directory")

	r = e.run("doctor")
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stdout, "it is a file, not a directory: give a directory with --data-dir")
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	assert.Equal(t, "x", string(got), "the file is left as it was")
}

// runAsProgram makes this test binary the program (TestMain).
const runAsProgram = "RM_APP_TEST_RUN_PROGRAM"

// A data directory this user may not enter is named as such, not as the
// daemon's socket ("dial unix …: permission denied"). Root enters any
// directory, so as root the program runs as nobody.
func TestDataDirUnreadable(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "p", "--repo", "o/r", "--scale-set", "s")
	require.NoError(t, os.Chmod(e.dataDir, 0o700))
	want := "data dir " + e.dataDir + " cannot be read by this user (permission denied): run as its owner, or give another with --data-dir"
	if os.Geteuid() != 0 {
		require.NoError(t, os.Chmod(e.dataDir, 0))
		t.Cleanup(func() { os.Chmod(e.dataDir, 0o700) })
		for _, args := range [][]string{{"status"}, {"attempts"}, {"policy", "list"}} {
			r := e.run(args...)
			assert.Equal(t, 2, r.code, r.stderr)
			assert.Contains(t, r.stderr, want)
			assert.NotContains(t, r.stderr, "sock")
		}
		return
	}
	// The test binary where nobody may run it, beside a copy of the data
	// directory that only root may enter (t.TempDir's are 0700: nobody
	// would not reach the data directory at all).
	base, err := os.MkdirTemp("", "runner-manager-msgs-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(base) })
	require.NoError(t, os.Chmod(base, 0o755))
	bin := filepath.Join(base, "runner-manager")
	self, err := os.Executable()
	require.NoError(t, err)
	b, err := os.ReadFile(self)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(bin, b, 0o755))
	data := filepath.Join(base, "data")
	require.NoError(t, os.Rename(e.dataDir, data))
	want = strings.ReplaceAll(want, e.dataDir, data)
	for _, args := range [][]string{{"status"}, {"attempts"}, {"policy", "list"}} {
		cmd := exec.Command(bin, append([]string{"--data-dir", data}, args...)...)
		cmd.Env = append(os.Environ(), runAsProgram+"=1", "HOME="+base, "XDG_CONFIG_HOME="+filepath.Join(base, "config"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		err := cmd.Run()
		var exit *exec.ExitError
		require.ErrorAs(t, err, &exit, "%v: %s", args, stderr.String())
		assert.Equal(t, app.ExitLocalState, exit.ExitCode(), stderr.String())
		assert.Contains(t, stderr.String(), want)
		assert.NotContains(t, stderr.String(), "sock")
	}
}

// A memory reserve the host cannot hold is refused when the daemon is
// built: run --once would exit 0 with nothing ever started.
func TestRunRefusesReserveAboveMemory(t *testing.T) {
	e := newEnv(t)
	t.Setenv("GITHUB_TOKEN", "ghp_test")
	t.Setenv("RUNNER_MANAGER_MEMORY_RESERVE", "100TiB")
	stderr := e.fails(app.ExitInvalid, "run", "--once")
	assert.Contains(t, stderr, "$RUNNER_MANAGER_MEMORY_RESERVE: admission.memory_reserve: 100TiB is not less than this host's memory (")
	assert.Contains(t, stderr, "no runner could ever start")
}
