package app_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

func TestHelpGolden(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{},
		{"init"},
		{"policy"},
		{"policy", "add"},
		{"policy", "apply"},
		{"policy", "edit"},
		{"run"},
		{"status"},
		{"attempts"},
		{"logs"},
		{"runner", "install"},
		{"doctor"},
		{"service", "install"},
		{"demo"},
	} {
		name := "help-" + strings.Join(append([]string{"root"}, args...), "-")
		t.Run(name, func(t *testing.T) {
			r := e.runRaw(append(args, "--help")...)
			require.Equal(t, 0, r.code, r.stderr)
			golden(t, name, r.stdout)
		})
	}
}

func TestVersion(t *testing.T) {
	e := newEnv(t)
	r := e.runRaw("--version")
	require.Equal(t, 0, r.code)
	// A test binary is a work-tree build: version "dev", no VCS stamp,
	// and its toolchain (the stamped form is rm.BuildOf's test).
	assert.Equal(t, "runner-manager "+rm.ReadBuild().String()+"\n", r.stdout)
	assert.True(t, strings.HasPrefix(r.stdout, "runner-manager dev (go"), r.stdout)
}

func TestUsageErrors(t *testing.T) {
	e := newEnv(t)
	for _, args := range [][]string{
		{},
		{"frobnicate"},
		{"policy", "add"},
		{"attempts", "--limit", "many"},
	} {
		r := e.runRaw(args...)
		assert.Equal(t, app.ExitUsage, r.code, "%v: %s", args, r.stderr)
		assert.Contains(t, r.stderr, "runner-manager:", args)
		assert.Regexp(t, `\ntry: runner-manager( [a-z]+)* --help\n$`, r.stderr, args)
	}
	// Flags the grammar takes, refused together by the policy's checks.
	r := e.runRaw("policy", "add", "x", "--repo", "a/b", "--org", "c")
	assert.Equal(t, app.ExitInvalid, r.code, r.stderr)
	assert.True(t, strings.HasSuffix(r.stderr, "\ntry: runner-manager policy add --help\n"), r.stderr)
}

// docs/cli.md covers every command the program has.
func TestDocsCoverEveryCommand(t *testing.T) {
	e := newEnv(t)
	doc, err := os.ReadFile("../../../docs/cli.md")
	require.NoError(t, err)
	r := e.runRaw("--help")
	require.Equal(t, 0, r.code)
	cmds := regexp.MustCompile(`(?m)^  ([a-z]+(?: [a-z]+)?)\b(?: \([a-z]+\))?\s{2,}`).FindAllStringSubmatch(r.stdout, -1)
	require.Greater(t, len(cmds), 15, r.stdout)
	for _, m := range cmds {
		name := m[1]
		if strings.HasPrefix(name, "policy ") && name != "policy add" && name != "policy apply" {
			name = strings.TrimPrefix(name, "policy ") // listed together
		}
		assert.Contains(t, string(doc), name, "docs/cli.md does not mention %q", m[1])
	}
}
