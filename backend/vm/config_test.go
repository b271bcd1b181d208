package vm_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/configfile"
)

// The [vm] table's values are this backend's to check, located as the
// file's own errors are; a file the backend is not asked about loads.
func TestCheckConfig(t *testing.T) {
	load := func(t *testing.T, file string, sections ...configfile.BackendSection) error {
		t.Helper()
		path := filepath.Join(t.TempDir(), "config.toml")
		require.NoError(t, os.WriteFile(path, []byte(file), 0o600))
		lookup := func(k string) (string, bool) { return map[string]string{"HOME": "/h"}[k], k == "HOME" }
		_, err := configfile.Load(configfile.Sources{Path: path, LookupEnv: lookup, Backends: sections})
		return err
	}
	for _, tt := range []struct {
		name, file string
		explain    []string
	}{
		{"bad vm accel", "[vm]\naccel = \"hvf\"\n", []string{"config.toml:2", "vm.accel", "kvm or tcg"}},
		{"bad vm network", "[vm]\nnetwork = \"bridge\"\n", []string{"config.toml:2", "vm.network", "restricted or open"}},
		{"small vm", "[vm]\nmemory = \"64MiB\"\n", []string{"config.toml:2", "vm.memory", "128MiB"}},
		{"bad vm cpus", "[vm]\ncpus = 65\n", []string{"config.toml:2", "vm.cpus", "between 1 and 64"}},
		{"small slot disk", "[vm]\nslot_disk = \"64MiB\"\n", []string{"config.toml:2", "vm.slot_disk", "256MiB"}},
		{"bad vm forward", "[vm]\nforward = [\"proxy\"]\n", []string{"config.toml:2", "vm.forward", "HOST:PORT"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := load(t, tt.file, vm.Kind{})
			var ce *configfile.Error
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			for _, s := range tt.explain {
				assert.Contains(t, err.Error(), s)
			}
			require.NoError(t, load(t, tt.file), "without the backend its table is not checked")
		})
	}
	require.NoError(t, load(t, "[vm]\naccel = \"tcg\"\nmemory = \"512MiB\"\ncpus = 1\nnetwork = \"open\"\nforward = [\"127.0.0.1:8080\"]\nslot_disk = \"40GiB\"\n", vm.Kind{}))
}
