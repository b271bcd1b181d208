package configfile_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
)

func env(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func writeFile(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "config.toml")
	require.NoError(t, os.WriteFile(p, []byte(content), 0o600))
	return p
}

func TestPrecedence(t *testing.T) {
	file := "data_dir = \"/from/file\"\n[daemon]\nmetrics_addr = \"127.0.0.1:1111\"\n[admission]\nmemory_reserve = \"1GiB\"\n"
	tests := []struct {
		name     string
		file     bool
		env      map[string]string
		flag     string
		wantDir  string
		wantFrom configfile.OriginKind
	}{
		{name: "default", env: map[string]string{"HOME": "/home/u"}, wantDir: "/home/u/.local/state/runner-manager", wantFrom: configfile.FromDefault},
		{name: "xdg default", env: map[string]string{"HOME": "/home/u", "XDG_STATE_HOME": "/xdg"}, wantDir: "/xdg/runner-manager", wantFrom: configfile.FromDefault},
		{name: "file", file: true, env: map[string]string{"HOME": "/h"}, wantDir: "/from/file", wantFrom: configfile.FromFile},
		{name: "env over file", file: true, env: map[string]string{"RUNNER_MANAGER_DATA_DIR": "/from/env"}, wantDir: "/from/env", wantFrom: configfile.FromEnv},
		{name: "env over default", env: map[string]string{"RUNNER_MANAGER_DATA_DIR": "/from/env"}, wantDir: "/from/env", wantFrom: configfile.FromEnv},
		{name: "flag over env", file: true, env: map[string]string{"RUNNER_MANAGER_DATA_DIR": "/from/env"}, flag: "/from/flag", wantDir: "/from/flag", wantFrom: configfile.FromFlag},
		{name: "flag over file", file: true, flag: "/from/flag", wantDir: "/from/flag", wantFrom: configfile.FromFlag},
		{name: "flag over default", env: map[string]string{"HOME": "/h"}, flag: "/from/flag", wantDir: "/from/flag", wantFrom: configfile.FromFlag},
		{name: "empty env ignored", file: true, env: map[string]string{"RUNNER_MANAGER_DATA_DIR": ""}, wantDir: "/from/file", wantFrom: configfile.FromFile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := configfile.Sources{LookupEnv: env(tt.env)}
			if tt.file {
				src.Path = writeFile(t, file)
			}
			if tt.flag != "" {
				src.Flags = map[string]configfile.FlagValue{"data_dir": {Value: tt.flag, Name: "--data-dir"}}
			}
			c, err := configfile.Load(src)
			require.NoError(t, err)
			assert.Equal(t, tt.wantDir, c.DataDir)
			assert.Equal(t, tt.wantFrom, c.Origins["data_dir"].Kind)
		})
	}
}

func TestPrecedenceTypedKeys(t *testing.T) {
	p := writeFile(t, "[admission]\nmemory_reserve = \"1GiB\"\ndisk_floor = 5368709120\n[daemon]\nmetrics_addr = \":1111\"\n")
	tests := []struct {
		name        string
		env         map[string]string
		flags       map[string]configfile.FlagValue
		wantReserve configfile.Size
		wantFloor   configfile.Size
		wantMetrics string
	}{
		{name: "file", wantReserve: 1 << 30, wantFloor: 5 << 30, wantMetrics: ":1111"},
		{name: "env", env: map[string]string{"RUNNER_MANAGER_MEMORY_RESERVE": "512MiB", "RUNNER_MANAGER_METRICS_ADDR": ":2222"},
			wantReserve: 512 << 20, wantFloor: 5 << 30, wantMetrics: ":2222"},
		{name: "flag", env: map[string]string{"RUNNER_MANAGER_METRICS_ADDR": ":2222"},
			flags:       map[string]configfile.FlagValue{"daemon.metrics_addr": {Value: "127.0.0.1:3333", Name: "--metrics-addr"}},
			wantReserve: 1 << 30, wantFloor: 5 << 30, wantMetrics: "127.0.0.1:3333"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{"HOME": "/h"}
			for k, v := range tt.env {
				e[k] = v
			}
			c, err := configfile.Load(configfile.Sources{Path: p, LookupEnv: env(e), Flags: tt.flags})
			require.NoError(t, err)
			assert.Equal(t, tt.wantReserve, c.Admission.MemoryReserve)
			assert.Equal(t, tt.wantFloor, c.Admission.DiskFloor)
			assert.Equal(t, tt.wantMetrics, c.Daemon.MetricsAddr)
		})
	}
}

func TestDefaults(t *testing.T) {
	c, err := configfile.Load(configfile.Sources{Path: filepath.Join(t.TempDir(), "missing.toml"), LookupEnv: env(map[string]string{"HOME": "/h"})})
	require.NoError(t, err)
	assert.Equal(t, "", c.Path)
	assert.Equal(t, "https://github.com", c.GitHub.URL)
	assert.Equal(t, "GITHUB_TOKEN", c.GitHub.TokenEnv)
	assert.Equal(t, configfile.Size(2<<30), c.Admission.MemoryReserve)
	assert.Equal(t, configfile.Size(10<<30), c.Admission.DiskFloor)
	assert.Equal(t, "text", c.Log.Format)
	assert.Equal(t, "", c.Daemon.MetricsAddr)
	assert.Equal(t, "", c.Host.Name, "the machine's hostname")
	assert.Equal(t, configfile.DefaultHeartbeat, c.Fleet.Heartbeat)
	assert.Equal(t, configfile.DefaultHungGrace, c.Daemon.HungGrace)
}

func TestHostMaxJobs(t *testing.T) {
	file := writeFile(t, "[host]\nname = \"build-1\"\nmax_jobs = 3\n")
	tests := []struct {
		name string
		path string
		env  map[string]string
		want int
		from configfile.OriginKind
	}{
		{name: "default", want: 0, from: configfile.FromDefault},
		{name: "file", path: file, want: 3, from: configfile.FromFile},
		{name: "env over file", path: file, env: map[string]string{"RUNNER_MANAGER_MAX_JOBS": "5"}, want: 5, from: configfile.FromEnv},
		{name: "zero: no bound", env: map[string]string{"RUNNER_MANAGER_MAX_JOBS": "0"}, want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{"HOME": "/h"}
			for k, v := range tt.env {
				e[k] = v
			}
			path := tt.path
			if path == "" {
				path = filepath.Join(t.TempDir(), "missing.toml")
			}
			c, err := configfile.Load(configfile.Sources{Path: path, LookupEnv: env(e)})
			require.NoError(t, err)
			assert.Equal(t, tt.want, c.Host.MaxJobs)
			if tt.from != "" {
				assert.Equal(t, tt.from, c.Origins["host.max_jobs"].Kind)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		explain []string // substrings of the message
	}{
		{name: "unknown key", file: "[github]\nurl = \"https://github.com\"\n\ntokn = \"x\"\n",
			explain: []string{"config.toml:4", "github.tokn", "unknown key", "token_env"}},
		{name: "unknown table", file: "[admission]\ndisk_floor = \"1G\"\n[adminsion]\nmemory_reserve = \"1G\"\n",
			explain: []string{"config.toml:3", "adminsion", "unknown table", "[admission]"}},
		{name: "unknown top key", file: "datadir = \"/x\"\n",
			explain: []string{"config.toml:1", "datadir", "data_dir"}},
		{name: "bad size", file: "[admission]\n\nmemory_reserve = \"two gigs\"\n",
			explain: []string{"config.toml:3", "admission.memory_reserve", "512MiB"}},
		{name: "syntax", file: "[github]\nurl = https://github.com\n",
			explain: []string{"config.toml:2"}},
		{name: "wrong type", file: "[github]\napp_id = \"abc\"\n",
			explain: []string{"config.toml:2", "github.app_id"}},
		{name: "bad url", file: "[github]\nurl = \"github.com\"\n",
			explain: []string{"config.toml:2", "github.url", "https://github.com"}},
		{name: "bad log format", file: "[log]\nformat = \"xml\"\n",
			explain: []string{"config.toml:2", "log.format", "text or json"}},
		{name: "partial app", file: "[github]\napp_id = 12\n",
			explain: []string{"config.toml:2", "installation_id", "private_key_file"}},
		{name: "bad metrics addr", file: "[daemon]\nmetrics_addr = \"9464\"\n",
			explain: []string{"config.toml:2", "daemon.metrics_addr", "127.0.0.1:9464"}},
		{name: "heartbeat too often", file: "[fleet]\nheartbeat = \"10ms\"\n",
			explain: []string{"config.toml:2", "fleet.heartbeat", "100ms"}},
		{name: "bad heartbeat", file: "[fleet]\nheartbeat = \"often\"\n",
			explain: []string{"config.toml:2", "fleet.heartbeat"}},
		{name: "hung grace too short", file: "[daemon]\nhung_grace = \"10ms\"\n",
			explain: []string{"config.toml:2", "daemon.hung_grace", "1s"}},
		{name: "bad env hung grace", file: "", env: map[string]string{"RUNNER_MANAGER_HUNG_GRACE": "soon"},
			explain: []string{"$RUNNER_MANAGER_HUNG_GRACE", "daemon.hung_grace"}},
		{name: "bad host name", file: "[host]\nname = \" padded \"\n",
			explain: []string{"config.toml:2", "host.name"}},
		{name: "negative max jobs", file: "[host]\nmax_jobs = -1\n",
			explain: []string{"config.toml:2", "host.max_jobs", "0 (no bound)"}},
		{name: "huge max jobs", file: "[host]\nmax_jobs = 1000000\n",
			explain: []string{"config.toml:2", "host.max_jobs", "100000"}},
		{name: "bad env max jobs", file: "", env: map[string]string{"RUNNER_MANAGER_MAX_JOBS": "four"},
			explain: []string{"$RUNNER_MANAGER_MAX_JOBS", "host.max_jobs"}},
		{name: "bad env heartbeat", file: "", env: map[string]string{"RUNNER_MANAGER_HEARTBEAT": "1h"},
			explain: []string{"$RUNNER_MANAGER_HEARTBEAT", "fleet.heartbeat", "10m0s"}},
		{name: "bad env", file: "", env: map[string]string{"RUNNER_MANAGER_DISK_FLOOR": "lots"},
			explain: []string{"$RUNNER_MANAGER_DISK_FLOOR", "admission.disk_floor"}},
		{name: "bad env level", file: "", env: map[string]string{"RUNNER_MANAGER_LOG_LEVEL": "loud"},
			explain: []string{"$RUNNER_MANAGER_LOG_LEVEL", "log.level"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{"HOME": "/h"}
			for k, v := range tt.env {
				e[k] = v
			}
			_, err := configfile.Load(configfile.Sources{Path: writeFile(t, tt.file), LookupEnv: env(e)})
			require.Error(t, err)
			var ce *configfile.Error
			require.True(t, errors.As(err, &ce), "%T %v", err, err)
			for _, s := range tt.explain {
				assert.Contains(t, err.Error(), s)
			}
		})
	}
}

func TestVMSection(t *testing.T) {
	file := "[vm]\naccel = \"tcg\"\nmemory = \"512MiB\"\ncpus = 1\nforward = [\"127.0.0.1:8080\"]\n"
	c, err := configfile.Load(configfile.Sources{Path: writeFile(t, file),
		LookupEnv: env(map[string]string{"HOME": "/h", "RUNNER_MANAGER_VM_FORWARD": "proxy.corp:3128, 10.1.2.3:80"})})
	require.NoError(t, err)
	assert.Equal(t, configfile.VM{Accel: "tcg", Memory: 512 << 20, CPUs: 1, Forward: []string{"proxy.corp:3128", "10.1.2.3:80"}}, c.VM,
		"the variable wins over the file")
}

func TestExplicitMissingFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.toml")
	_, err := configfile.Load(configfile.Sources{Path: p, Explicit: true, LookupEnv: env(map[string]string{"HOME": "/h"})})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "runner-manager init")
}

func TestKeysHaveUniqueEnv(t *testing.T) {
	seen := map[string]string{}
	for _, k := range configfile.Keys() {
		require.NotEmpty(t, k[1], "key %s has no environment variable", k[0])
		require.True(t, strings.HasPrefix(k[1], "RUNNER_MANAGER_"), k[1])
		prev, dup := seen[k[1]]
		require.False(t, dup, "%s used by %s and %s", k[1], prev, k[0])
		seen[k[1]] = k[0]
	}
}

// The reference documents every key and its variable.
func TestDocsCoverEveryKey(t *testing.T) {
	doc, err := os.ReadFile("../docs/configuration.md")
	require.NoError(t, err)
	for _, k := range configfile.Keys() {
		name := k[0][strings.LastIndex(k[0], ".")+1:]
		assert.Contains(t, string(doc), "`"+name+"`", "docs/configuration.md misses key %s", k[0])
		assert.Contains(t, string(doc), k[1], "docs/configuration.md misses %s", k[1])
	}
}

// A token_env that is no variable name holds no token: it is refused,
// named with its value.
func TestTokenEnvName(t *testing.T) {
	for _, name := range []string{"1 BAD", "MY-TOKEN", "A=B", "TOKEN$"} {
		_, err := configfile.Load(configfile.Sources{Flags: map[string]configfile.FlagValue{"github.token_env": {Value: name, Name: "--token-env"}}, LookupEnv: env(map[string]string{"HOME": "/h"})})
		require.Error(t, err, name)
		assert.Contains(t, err.Error(), "--token-env: github.token_env: "+strconv.Quote(name)+" is not an environment variable name")
	}
	_, err := configfile.Load(configfile.Sources{Flags: map[string]configfile.FlagValue{"github.token_env": {Value: "_MY_TOKEN2", Name: "--token-env"}}, LookupEnv: env(map[string]string{"HOME": "/h"})})
	assert.NoError(t, err)
}

func TestTemplateLoads(t *testing.T) {
	for _, d := range []configfile.TemplateData{
		{},
		{GitHubURL: "https://ghes.example.com", TokenEnv: "MY_TOKEN", DataDir: "/srv/rm"},
		{TokenFile: "/etc/runner-manager/token"},
		{GitHubURL: "https://ghes.example.com/@@TOKEN_FILE@@", TokenEnv: "MY_TOKEN_2", DataDir: `/srv/"rm" @@URL@@`},
	} {
		p := writeFile(t, configfile.Template(d))
		c, err := configfile.Load(configfile.Sources{Path: p, Explicit: true, LookupEnv: env(map[string]string{"HOME": "/h"})})
		require.NoError(t, err, configfile.Template(d))
		if d.GitHubURL != "" {
			assert.Equal(t, d.GitHubURL, c.GitHub.URL)
			assert.Equal(t, d.TokenEnv, c.GitHub.TokenEnv)
			assert.Equal(t, d.DataDir, c.DataDir)
		}
		if d.TokenFile != "" {
			assert.Equal(t, d.TokenFile, c.GitHub.TokenFile)
		}
	}
}

func TestMetricsListenAddr(t *testing.T) {
	for in, want := range map[string]string{
		":9464":          "127.0.0.1:9464",
		"0.0.0.0:9464":   "0.0.0.0:9464",
		"[::1]:9464":     "[::1]:9464",
		"localhost:9000": "localhost:9000",
	} {
		assert.Equal(t, want, configfile.Daemon{MetricsAddr: in}.MetricsListenAddr(), in)
	}
}

func TestCredentials(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(good, []byte("ghp_secret123\n"), 0o600))
	open := filepath.Join(dir, "open-token")
	require.NoError(t, os.WriteFile(open, []byte("ghp_secret123\n"), 0o644))
	require.NoError(t, os.Chmod(open, 0o644))

	t.Run("env", func(t *testing.T) {
		c, err := configfile.GitHub{TokenEnv: "TOK"}.Credentials(env(map[string]string{"TOK": " ghp_x "}))
		require.NoError(t, err)
		assert.Equal(t, "ghp_x", c.Token)
		assert.NotContains(t, c.String(), "ghp_x")
	})
	t.Run("file", func(t *testing.T) {
		c, err := configfile.GitHub{TokenEnv: "TOK", TokenFile: good}.Credentials(env(nil))
		require.NoError(t, err)
		assert.Equal(t, "ghp_secret123", c.Token)
	})
	t.Run("open file refused", func(t *testing.T) {
		_, err := configfile.GitHub{TokenEnv: "TOK", TokenFile: open}.Credentials(env(nil))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "chmod 600")
		assert.NotContains(t, err.Error(), "ghp_secret123")
	})
	t.Run("none", func(t *testing.T) {
		_, err := configfile.GitHub{TokenEnv: "TOK"}.Credentials(env(nil))
		require.ErrorIs(t, err, configfile.ErrNoCredentials)
		assert.Contains(t, err.Error(), "$TOK")
	})
	t.Run("app", func(t *testing.T) {
		c, err := configfile.GitHub{TokenEnv: "TOK", AppID: 1, InstallationID: 2, PrivateKeyFile: good}.Credentials(env(map[string]string{"TOK": "x"}))
		require.NoError(t, err)
		assert.Empty(t, c.Token)
		assert.Equal(t, int64(2), c.InstallationID)
		assert.NotEmpty(t, c.PrivateKeyPEM)
	})
}

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want configfile.Size
	}{
		{"2GiB", 2 << 30}, {"512MiB", 512 << 20}, {"1.5G", 3 << 29}, {"10GB", 10e9}, {"4096B", 4096},
		{"1k", 1024}, {"1 KiB", 1024}, {"3Mi", 3 << 20}, {"1TiB", 1 << 40}, {"2gib", 2 << 30}, {"0", 0},
	}
	for _, tt := range tests {
		got, err := configfile.ParseSize(tt.in)
		require.NoError(t, err, tt.in)
		assert.Equal(t, tt.want, got, tt.in)
	}
	for _, bad := range []string{"", "GiB", "2 gigs", "-1G", "-5G", "1.2.3G", "1e99T", "1.5", "4096", "2"} {
		_, err := configfile.ParseSize(bad)
		require.Error(t, err, bad)
		require.ErrorIs(t, err, rm.ErrInvalid, bad)
	}
}

func TestSizeString(t *testing.T) {
	for in, want := range map[configfile.Size]string{2 << 30: "2GiB", 3 << 29: "1.5GiB", 512 << 20: "512MiB", 100: "100B", 1 << 40: "1TiB"} {
		assert.Equal(t, want, in.String())
		b, err := in.MarshalText()
		require.NoError(t, err)
		back, err := configfile.ParseSize(string(b))
		require.NoError(t, err)
		assert.Equal(t, in, back)
	}
	odd := configfile.Size(1234567)
	b, _ := odd.MarshalText()
	assert.Equal(t, "1234567B", string(b))
}

// A memory reserve not less than the host's memory is refused, naming the
// key, the value and the host's memory: no runner could ever start.
func TestCheckMemoryReserve(t *testing.T) {
	c, err := configfile.Load(configfile.Sources{LookupEnv: env(map[string]string{"HOME": "/h", "RUNNER_MANAGER_MEMORY_RESERVE": "100TiB"})})
	require.NoError(t, err)
	err = c.CheckMemoryReserve(23 << 30)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "$RUNNER_MANAGER_MEMORY_RESERVE: admission.memory_reserve: 100TiB is not less than this host's memory (23GiB): no runner could ever start")
	assert.NoError(t, c.CheckMemoryReserve(200<<40))
	d := configfile.Defaults()
	assert.NoError(t, d.CheckMemoryReserve(23<<30))
}
