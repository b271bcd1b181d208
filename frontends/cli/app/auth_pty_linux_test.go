package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// openPTY opens a pseudo-terminal: its controlling side and the terminal
// a program reads.
func openPTY(t *testing.T) (ptmx, tty *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	require.NoError(t, unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	require.NoError(t, err)
	tty, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	require.NoError(t, err)
	t.Cleanup(func() { tty.Close() })
	return ptmx, tty
}

// On a terminal auth login asks for the token with echo off: it is typed
// only once the terminal stopped echoing, so it is never shown; it is
// kept, and echo is back on afterwards.
func TestAuthLoginPromptHidesTheToken(t *testing.T) {
	ptmx, tty := openPTY(t)
	e := newEnv(t)
	withAuthConfig(t, e, "https://github.com", "https://api.github.com")

	type outcome struct {
		code           int
		stdout, stderr string
	}
	done := make(chan outcome, 1)
	go func() {
		var out, errb lockedBuffer
		code := app.Run(context.Background(), []string{"--data-dir", e.dataDir, "auth", "login", "--no-check"},
			app.Streams{Stdin: tty, Stdout: &out, Stderr: &errb})
		done <- outcome{code, out.String(), errb.String()}
	}()
	// Type only once the terminal stopped echoing (the prompt's doing).
	deadline := time.Now().Add(10 * time.Second)
	for {
		tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
		require.NoError(t, err)
		if tio.Lflag&unix.ECHO == 0 {
			break
		}
		require.True(t, time.Now().Before(deadline), "the prompt never turned echo off")
		time.Sleep(5 * time.Millisecond)
	}
	_, err := ptmx.WriteString(authToken + "\n")
	require.NoError(t, err)

	var r outcome
	select {
	case r = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("auth login did not return")
	}
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "GitHub token (input hidden): ")
	assert.Contains(t, r.stdout, "Kept a token ending in …abcd")

	noSecret(t, r.stdout+r.stderr, authToken)

	tio, err := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	require.NoError(t, err)
	assert.NotZero(t, tio.Lflag&unix.ECHO, "echo is back on")
	_, err = os.Stat(filepath.Join(e.dataDir, "credentials", "github"))
	require.NoError(t, err)
}
