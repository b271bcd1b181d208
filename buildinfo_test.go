package runnermanager_test

import (
	"runtime/debug"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

func TestBuildOf(t *testing.T) {
	stamped := &debug.BuildInfo{
		GoVersion: "go1.26.0",
		Main:      debug.Module{Path: "github.com/runner-manager/runner-manager", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"},
			{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-01-02T15:04:05Z"},
			{Key: "vcs.modified", Value: "true"},
		},
	}
	for _, tc := range []struct {
		name   string
		bi     *debug.BuildInfo
		ok     bool
		want   rm.Build
		string string
	}{
		{"NoBuildInfo", nil, false, rm.Build{Version: "dev"}, "dev"},
		{"Devel", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "(devel)"}}, true,
			rm.Build{Version: "dev", GoVersion: "go1.26.0"}, "dev (go1.26.0)"},
		{"Stamped", stamped, true, rm.Build{
			Version: "v1.2.3", Commit: "0123456789abcdef0123456789abcdef01234567",
			Time: time.Date(2026, 1, 2, 15, 4, 5, 0, time.UTC), Modified: true, GoVersion: "go1.26.0",
		}, "v1.2.3 (commit 0123456789ab, 2026-01-02T15:04:05Z, modified, go1.26.0)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := rm.BuildOf(tc.bi, tc.ok)
			assert.Equal(t, tc.want, got)
			assert.Equal(t, tc.string, got.String())
		})
	}
}

func TestReadBuild(t *testing.T) {
	b := rm.ReadBuild()
	assert.NotEmpty(t, b.Version)
	assert.NotEmpty(t, b.GoVersion, "a test binary carries its toolchain")
}
