package app_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// A policy's cold switch: set by add --cold, edit --cold/--warm and a
// policies file's cold = true; show, list and JSON say warm or cold, and
// why cold.
func TestPolicyColdSwitch(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	e.ok("policy", "add", "boxed", "--repo", "octo/app", "--scale-set", "boxed", "--cold")
	e.ok("policy", "add", "wide", "--org", "octo", "--scale-set", "wide")

	assert.Contains(t, e.ok("policy", "show", "home"), "workspace:        warm: jobs run in workspace slots of octo/app")
	assert.Contains(t, e.ok("policy", "show", "boxed"), "cold: the policy's own switch")
	assert.Contains(t, e.ok("policy", "show", "wide"), "cold: an organization's policy: its jobs' repository is known only once a job runs")
	list := e.ok("policy", "list")
	assert.Regexp(t, `(?m)^home .*\swarm\s+active$`, list)
	assert.Regexp(t, `(?m)^boxed .*\scold\s+active$`, list)

	show := func(name string) map[string]any {
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "show", name, "--json")), &got))
		return got
	}
	assert.Equal(t, map[string]any{"cold": false, "warm": true, "cold_why": ""}, pick(show("home"), "cold", "warm", "cold_why"))
	assert.Equal(t, true, show("boxed")["cold"])
	assert.Equal(t, false, show("wide")["cold"], "an organization's policy is cold by its scope, not its switch")
	assert.Equal(t, false, show("wide")["warm"])

	assert.Contains(t, e.ok("policy", "edit", "home", "--cold"), "workspace warm → cold")
	assert.Equal(t, true, show("home")["cold"])
	assert.Contains(t, e.ok("policy", "edit", "home", "--warm"), "workspace cold → warm")
	assert.Contains(t, e.ok("policy", "edit", "home", "--warm"), "nothing to change")
	assert.Contains(t, e.fails(app.ExitInvalid, "policy", "edit", "home", "--warm", "--cold"), "not both")

	// [warm] enabled = false turns every policy cold, and says so.
	cfg := filepath.Join(e.home, "config.toml")
	require.NoError(t, os.WriteFile(cfg, []byte("[warm]\nenabled = false\n"), 0o600))
	assert.Contains(t, e.ok("--config", cfg, "policy", "show", "home"), "cold: warm jobs are off on this host ([warm] enabled = false)")
}

func TestPolicyApplyCold(t *testing.T) {
	e := newEnv(t)
	file := filepath.Join(e.home, "policies.toml")
	write := func(cold bool) {
		s := "[[policy]]\nname = \"a\"\nrepo = \"octo/app\"\nscale_set = \"a\"\n"
		if cold {
			s += "cold = true\n"
		}
		require.NoError(t, os.WriteFile(file, []byte(s), 0o644))
	}
	write(true)
	e.ok("policy", "apply", file)
	p, err := e.journal().PolicyByName(t.Context(), "a")
	require.NoError(t, err)
	assert.True(t, p.Cold)
	write(false)
	assert.Contains(t, e.ok("policy", "apply", file), "workspace cold → warm", "a change of the switch alone is a change")
	p, err = e.journal().PolicyByName(t.Context(), "a")
	require.NoError(t, err)
	assert.False(t, p.Cold)
}

func pick(m map[string]any, keys ...string) map[string]any {
	out := map[string]any{}
	for _, k := range keys {
		out[k] = m[k]
	}
	return out
}
