package fakerunner_test

import (
	"bytes"
	"context"
	"os"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/runner-manager/runner-manager/simulate/fakerunner"
)

func TestMainArguments(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"NoCommand", nil, fakerunner.ExitTerminated},
		{"Help", []string{"--help"}, fakerunner.ExitSuccess},
		{"UnknownCommand", []string{"configure"}, fakerunner.ExitTerminated},
		{"ProgramPathSkipped", []string{"/opt/runner/bin/Runner.Listener", "--help"}, fakerunner.ExitSuccess},
		{"JITConfigInArgv", []string{"run", "--jitconfig", "c2VjcmV0"}, fakerunner.ExitTerminated},
		{"JITConfigInArgvEquals", []string{"run", "--jitconfig=c2VjcmV0"}, fakerunner.ExitTerminated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, fakerunner.Main(tc.args))
		})
	}
}

func TestRunRefusesABadConfig(t *testing.T) {
	for _, tc := range []struct{ name, jit string }{
		{"Empty", ""},
		{"NotBase64", "%%%"},
		{"NotAMapOfFiles", "WzEsMiwzXQ=="},               // [1,2,3]
		{"MissingFiles", "eyIucnVubmVyIjogImUzMD0ifQ=="}, // {".runner": "e30="}
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			var out bytes.Buffer
			code := fakerunner.Run(context.Background(), fakerunner.Config{Root: root, JITConfig: tc.jit, Stdout: &out})
			assert.Equal(t, fakerunner.ExitTerminated, code)
			entries, err := os.ReadDir(root)
			assert.NoError(t, err)
			assert.Empty(t, entries, "nothing is written for a refused config")
			if tc.jit != "" {
				assert.NotContains(t, out.String(), tc.jit, "the config is never printed")
			}
		})
	}
}
