package container_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend/container"
)

func TestSettingsValidate(t *testing.T) {
	ok := container.Settings{Image: "ghcr.io/actions/actions-runner:2.330.0"}
	require.NoError(t, ok.Validate())
	full := container.Settings{
		Image: "localhost/runner:1", RunnerDir: "/opt/runner", User: "1001:1001",
		MemoryBytes: 4 << 30, CPUs: 2.5, Network: "host",
		Volumes: []string{"/var/cache/go:/home/runner/_work/.cache/go:rw", "npm-cache:/cache/npm", "/srv/ro:/srv/ro:ro"},
		PassEnv: []string{"SCCACHE_*", "TZ"}, Init: true, Pull: container.PullNever,
	}
	require.NoError(t, full.Validate())

	for _, tc := range []struct {
		name string
		edit func(*container.Settings)
		want string
	}{
		{"NoImage", func(s *container.Settings) { s.Image = "" }, "no image"},
		{"BadImage", func(s *container.Settings) { s.Image = "UPPER/Case::x" }, "not an image reference"},
		{"RelativeRunnerDir", func(s *container.Settings) { s.RunnerDir = "runner" }, "absolute path"},
		{"RootRunnerDir", func(s *container.Settings) { s.RunnerDir = "/" }, "other than /"},
		{"BadUser", func(s *container.Settings) { s.User = "a b" }, "user"},
		{"TinyMemory", func(s *container.Settings) { s.MemoryBytes = 1 << 20 }, "below the engines' floor"},
		{"HugeMemory", func(s *container.Settings) { s.MemoryBytes = math.MaxUint64 }, "too large"},
		{"NegativeCPUs", func(s *container.Settings) { s.CPUs = -1 }, "cpus"},
		{"NaNCPUs", func(s *container.Settings) { s.CPUs = math.NaN() }, "cpus"},
		{"TinyCPUs", func(s *container.Settings) { s.CPUs = 0.001 }, "cpus"},
		{"BadNetwork", func(s *container.Settings) { s.Network = "host;rm" }, "network"},
		{"VolumeNoTarget", func(s *container.Settings) { s.Volumes = []string{"/cache"} }, "source:target"},
		{"VolumeRelativeTarget", func(s *container.Settings) { s.Volumes = []string{"/cache:cache"} }, "target"},
		{"VolumeUncleanSource", func(s *container.Settings) { s.Volumes = []string{"/a/../etc:/x"} }, "clean absolute path"},
		{"VolumeBadName", func(s *container.Settings) { s.Volumes = []string{"../x:/x"} }, "neither"},
		{"VolumeBadMode", func(s *container.Settings) { s.Volumes = []string{"/a:/b:z"} }, "mode"},
		{"VolumeHidesRunner", func(s *container.Settings) { s.Volumes = []string{"/tmp/x:/home"} }, "would hide the runner"},
		{"VolumeOnRunner", func(s *container.Settings) { s.Volumes = []string{"/tmp/x:" + container.DefaultRunnerDir} }, "would hide the runner"},
		{"BadEnvName", func(s *container.Settings) { s.PassEnv = []string{"A-B"} }, "environment name"},
		{"OwnEnvName", func(s *container.Settings) { s.PassEnv = []string{"ACTIONS_RUNNER_INPUT_JITCONFIG"} }, "launcher's own"},
		{"BadPull", func(s *container.Settings) { s.Pull = "sometimes" }, "pull policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			err := s.Validate()
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}
