package app_test

import (
	"encoding/json"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// schema is one section of docs/json.md: its key paths, those whose type
// is a map (keys of their own, not listed), and each key's type as the
// table writes it ("int", "time or null"), and those the table says may
// be absent ("absent when unknown": a key printed with omitempty).
type schema struct {
	keys     map[string]bool
	maps     map[string]bool
	types    map[string]string
	optional map[string]bool
}

// docSchemas reads the tables of docs/json.md, by section ("## status").
func docSchemas(t *testing.T) map[string]schema {
	t.Helper()
	raw, err := os.ReadFile("../../../docs/json.md")
	require.NoError(t, err)
	row := regexp.MustCompile("^\\| `([^`]+)` \\| ([^|]+) \\|(.*)$")
	out := map[string]schema{}
	var cur string
	for _, line := range strings.Split(string(raw), "\n") {
		if name, ok := strings.CutPrefix(line, "## "); ok {
			cur = strings.TrimSpace(name)
			out[cur] = schema{keys: map[string]bool{}, maps: map[string]bool{}, types: map[string]string{}, optional: map[string]bool{}}
			continue
		}
		if m := row.FindStringSubmatch(line); m != nil && cur != "" {
			out[cur].keys[m[1]] = true
			out[cur].types[m[1]] = strings.TrimSpace(m[2])
			out[cur].optional[m[1]] = strings.Contains(m[3], "absent")
			if strings.HasPrefix(strings.TrimSpace(m[2]), "map") {
				out[cur].maps[m[1]] = true
			}
		}
	}
	return out
}

// jsonPaths walks a decoded document: every key path with the values
// found there, and the paths that hold an object (not null), whose
// documented keys must then all be there.
func jsonPaths(v any, path string, maps map[string]bool, keys map[string][]any, objects map[string]bool) {
	switch v := v.(type) {
	case map[string]any:
		objects[path] = true
		for k, child := range v {
			p := k
			if path != "" {
				p = path + "." + k
			}
			keys[p] = append(keys[p], child)
			if !maps[p] {
				jsonPaths(child, p, maps, keys, objects)
			}
		}
	case []any:
		for _, e := range v {
			jsonPaths(e, path+"[]", maps, keys, objects)
		}
	}
}

// typeOK reports whether v, decoded with UseNumber, is of the documented
// type: string, int, number, bool, object, map, list or time (RFC 3339 in
// UTC), each perhaps "or null".
func typeOK(t *testing.T, typ string, v any) bool {
	base, nullable := strings.CutSuffix(typ, " or null")
	if v == nil {
		return nullable
	}
	switch base {
	case "string":
		_, ok := v.(string)
		return ok
	case "time":
		s, ok := v.(string)
		if !ok || !strings.HasSuffix(s, "Z") {
			return false
		}
		_, err := time.Parse(time.RFC3339Nano, s)
		return err == nil
	case "int":
		n, ok := v.(json.Number)
		_, err := n.Int64()
		return ok && err == nil
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "bool":
		_, ok := v.(bool)
		return ok
	case "object", "map":
		_, ok := v.(map[string]any)
		return ok
	case "list":
		_, ok := v.([]any)
		return ok
	}
	t.Errorf("docs/json.md names type %q: not one of string, int, number, bool, object, map, list, time (… or null)", typ)
	return false
}

// parentPath is the object a key path belongs to: "" for a top-level key.
func parentPath(p string) string {
	if i := strings.LastIndex(p, "."); i >= 0 {
		return p[:i]
	}
	return ""
}

// checkSchema fails unless doc's keys are all documented in s, and every
// documented key of an object present in doc is there.
func checkSchema(t *testing.T, s schema, doc string, list bool) {
	t.Helper()
	var v any
	dec := json.NewDecoder(strings.NewReader(doc))
	dec.UseNumber() // an int and a number told apart
	require.NoError(t, dec.Decode(&v), doc)
	keys, objects := map[string][]any{}, map[string]bool{}
	if list {
		items, ok := v.([]any)
		require.True(t, ok, "a list: %s", doc)
		require.NotEmpty(t, items, "the test needs an element to check")
		for _, e := range items {
			jsonPaths(e, "", s.maps, keys, objects)
		}
	} else {
		jsonPaths(v, "", s.maps, keys, objects)
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !assert.True(t, s.keys[k], "key %q is not in docs/json.md", k) {
			continue
		}
		for _, val := range keys[k] {
			assert.True(t, typeOK(t, s.types[k], val), "key %q is documented as %s, printed as %#v", k, s.types[k], val)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.keys)) {
		if objects[parentPath(k)] && !s.optional[k] {
			_, ok := keys[k]
			assert.True(t, ok, "documented key %q is missing", k)
		}
	}
}

func TestJSONSchemas(t *testing.T) {
	schemas := docSchemas(t)
	e := newEnv(t)
	srv, runnerDir := withFakeGitHub(t, e)
	_ = srv
	_, _, list := seed(t, e)
	e.ok("policy", "add", "classic", "--repo", "octo/app", "--labels", "a,b", "--runner-dir", runnerDir)

	doctorOut := e.run("doctor", "--json")
	for _, tc := range []struct {
		name, section string
		list          bool
		out           string
	}{
		{"StatusWithoutDaemon", "status", false, e.ok("status", "--json")},
		{"Doctor", "doctor", false, doctorOut.stdout},
		{"PolicyList", "policy", true, e.ok("policy", "list", "--json")},
		{"PolicyShow", "policy", false, e.ok("policy", "show", "home", "--json")},
		{"Attempts", "attempt", true, e.ok("attempts", "--json")},
		{"AttemptShowEnded", "attempt", false, e.ok("attempt", "show", list[0].ID.String(), "--json")},
		{"AttemptShowLive", "attempt", false, e.ok("attempt", "show", list[3].ID.String(), "--json")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := schemas[tc.section]
			require.True(t, ok, "docs/json.md has no section %q", tc.section)
			checkSchema(t, s, tc.out, tc.list)
		})
	}

	t.Run("StatusFromDaemon", func(t *testing.T) {
		pid := rm.NewPolicyID()
		now := time.Now().UTC() // as the daemon gives its times
		cpu, days, ends := 12.5, 40, now.Add(40*24*time.Hour)
		maxSpares := 8
		serveDaemon(t, e.dataDir, &fixedDaemon{refreshed: make(chan struct{}, 1), st: status.Status{
			At:             now,
			HostCPUPercent: &cpu,
			Memory:         status.Memory{TotalBytes: 16 << 30, MaxSpares: &maxSpares},
			Manager:        &status.Manager{PID: 4242, Since: now.Add(-time.Hour), Version: "v1.2.3", DataDir: e.dataDir},
			Runner: &status.Runner{Version: "2.330.0", AutoUpdate: true, Latest: "2.331.0", Trial: "2.331.0", TrialAttempt: rm.NewAttemptID(),
				Bad:         &status.RunnerUpdateFailure{Version: "2.329.0", At: now, Reason: "checksum mismatch", RetryAt: now.Add(6 * time.Hour)},
				RuntimeEnds: &ends, RegistrationEnds: &ends, DaysLeft: &days, ScheduleFrom: "github"},
			Host:     rm.Host{ID: rm.NewHostID(), Name: "box", CPUs: 8, OS: "linux", Arch: "amd64"},
			Policies: []status.Policy{{ID: pid, Name: "home", Mode: "scale-set", Max: 4}},
			Attempts: []status.Attempt{{ID: rm.NewAttemptID(), Policy: pid, State: rm.StateBusy, CreatedAt: now, Job: &rm.Job{ID: "j1", Name: "build"}}},
			Jobs: []status.Job{{ID: "j1", State: status.JobRunning, Policy: pid, PolicyName: "home", Attempt: rm.NewAttemptID()},
				{ID: "j2", State: status.JobQueued, Labels: []string{"home"}, Policy: pid, PolicyName: "home", WaitReason: "at max 4"}},
			Budget:   rm.Budget{Limit: 5000, Remaining: 4321, Reset: now.Add(time.Hour), SeenAt: now},
			Refusals: map[string]int{"memory": 3},
		}})
		out := e.ok("status", "--json")
		checkSchema(t, schemas["status"], out, false)
		checkSchema(t, schemas["jobs"], e.ok("jobs", "--json"), false)
		var got map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &got))
		assert.Equal(t, true, got["daemon"])
		assert.Equal(t, 12.5, got["host_cpu_percent"], "the fixture's every section is checked")
		assert.Equal(t, float64(40), got["runner"].(map[string]any)["days_left"])
		assert.Equal(t, float64(4242), got["manager"].(map[string]any)["pid"])
		assert.Equal(t, map[string]any{"memory": float64(3)}, got["refusals"])
	})
}

// Without a daemon, status says so, and what only a daemon knows is null.
func TestStatusJSONWithoutDaemon(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("status", "--json")), &got))
	assert.Equal(t, false, got["daemon"])
	assert.Contains(t, got, "budget")
	assert.Nil(t, got["budget"])
	assert.Contains(t, got, "refusals")
	assert.Nil(t, got["refusals"])
	assert.Equal(t, []any{}, got["attempts"])
}

// The type check refuses what the doc's type does not allow.
func TestJSONTypeCheck(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		v    any
		want bool
	}{
		{"int", json.Number("3"), true},
		{"int", json.Number("0.35"), false},
		{"int", "3", false},
		{"int", nil, false},
		{"int or null", nil, true},
		{"number", json.Number("0.35"), true},
		{"string", "x", true},
		{"string", json.Number("1"), false},
		{"time", "2026-12-07T04:00:00.5Z", true},
		{"time", "2026-12-07T05:00:00+01:00", false},
		{"time", "yesterday", false},
		{"time or null", nil, true},
		{"bool", false, true},
		{"bool", "false", false},
		{"object", map[string]any{}, true},
		{"object", []any{}, false},
		{"object or null", nil, true},
		{"map or null", map[string]any{"memory": json.Number("3")}, true},
		{"list", []any{}, true},
		{"list", nil, false},
		{"list or null", nil, true},
	} {
		assert.Equal(t, tc.want, typeOK(t, tc.typ, tc.v), "%s %#v", tc.typ, tc.v)
	}
}
