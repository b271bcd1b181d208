package configfile_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/configfile"
)

// A value of the wrong type is named with its key, what the key wants and
// what the file gave, in the file's words.
func TestWrongTypeSaysWhatTheKeyWants(t *testing.T) {
	tests := []struct {
		name, file, want string
	}{
		{"token_env integer", "[github]\ntoken_env = 5\n",
			`config.toml:2: github.token_env: must be a string (an environment variable name), got integer 5`},
		{"app_id string", "[github]\n\napp_id = \"abc\"\n",
			`config.toml:3: github.app_id: must be a whole number (the GitHub App's id), got string "abc"`},
		{"data_dir boolean", "data_dir = true\n",
			`config.toml:1: data_dir: must be a string (a directory), got boolean true`},
		{"level array", "[log]\nlevel = [\"info\"]\n",
			`config.toml:2: log.level: must be a string ("debug", "info", "warn" or "error"), got an array`},
		{"url float", "[github]\nurl = 1.5\n",
			`config.toml:2: github.url: must be a string (a URL such as "https://github.com"), got float 1.5`},
		{"table for a string", "[daemon]\nmetrics_addr = { host = \"x\" }\n",
			`config.toml:2: daemon.metrics_addr: must be a string (an address such as "127.0.0.1:9090"), got a table`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := configfile.Load(configfile.Sources{Path: writeFile(t, tt.file), LookupEnv: env(map[string]string{"HOME": "/h"})})
			require.Error(t, err)
			var ce *configfile.Error
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			assert.Equal(t, tt.want, strings.TrimPrefix(err.Error(), filepath.Dir(ce.Where)+string(filepath.Separator)))
		})
	}
}

// In an array of tables (a policy file), the value named is the entry's
// that is wrong.
func TestWrongTypeInArrayOfTables(t *testing.T) {
	type spec struct {
		Name   string   `toml:"name"`
		Max    int      `toml:"max"`
		Labels []string `toml:"labels"`
		Memory configfile.Size
	}
	var f struct {
		Policy []spec `toml:"policy"`
	}
	data := "[[policy]]\nname = \"a\"\nmax = 2\n\n[[policy]]\nname = \"b\"\nmax = \"four\"\n"
	_, _, err := configfile.DecodeStrict("policies.toml", []byte(data), &f)
	require.Error(t, err)
	assert.Equal(t, `policies.toml:7: policy.max: must be a whole number, got string "four"`, err.Error())

	_, _, err = configfile.DecodeStrict("policies.toml", []byte("[[policy]]\nname = \"a\"\nlabels = \"linux\"\n"), &f)
	require.Error(t, err)
	assert.Equal(t, `policies.toml:3: policy.labels: must be a list of strings (labels such as ["linux", "x64"]), got string "linux"`, err.Error())
}
