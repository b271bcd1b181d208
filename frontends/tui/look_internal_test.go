package tui

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// TERM=dumb, which tcell has no entry for, still gets a screen (driven as
// a VT100); it is not initialized here, so no terminal is needed.
func TestNewScreenDumb(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the console needs no terminfo")
	}
	s, err := newScreen(func(k string) string { return map[string]string{"TERM": "dumb"}[k] })
	require.NoError(t, err)
	require.NotNil(t, s)
}
