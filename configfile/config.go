// Package configfile owns the runner-manager program's configuration: the TOML
// file (with file:line errors and unknown keys refused), the environment
// variables that override it (RUNNER_MANAGER_…), the flags that override
// both, the XDG default paths, sizes such as "2GiB", and reading secrets
// from the environment or from a file only its owner can read.
//
// Precedence, highest first: flag, environment, file, default.
package configfile

import (
	"errors"
	"net"
	"os"
	"reflect"
	"slices"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// File is the resolved configuration. Each field's toml tag is its key in
// the file and its env tag the variable that overrides it.
type File struct {
	// DataDir holds the journal, the installed runners and the attempts'
	// directories. Default: $XDG_STATE_HOME/runner-manager.
	DataDir   string    `toml:"data_dir" env:"RUNNER_MANAGER_DATA_DIR" path:"true"`
	Log       Log       `toml:"log"`
	GitHub    GitHub    `toml:"github"`
	Admission Admission `toml:"admission"`
	Webhook   Webhook   `toml:"webhook"`
	Daemon    Daemon    `toml:"daemon"`
	Container Container `toml:"container"`
	VM        VM        `toml:"vm"`
	Store     Store     `toml:"store"`
	Logs      Logs      `toml:"logs"`
	Host      Host      `toml:"host"`
	Fleet     Fleet     `toml:"fleet"`
	Runner    Runner    `toml:"runner"`
	Warm      Warm      `toml:"warm"`

	// Path is the file that was read; "" when there was none.
	Path string `toml:"-"`
	// Origins says where each key's value came from, by key ("github.url").
	Origins map[string]Origin `toml:"-"`
}

// Log says how the program logs (to standard error).
type Log struct {
	// Format is "text" or "json".
	Format string `toml:"format" env:"RUNNER_MANAGER_LOG_FORMAT"`
	// Level is "debug", "info", "warn" or "error".
	Level string `toml:"level" env:"RUNNER_MANAGER_LOG_LEVEL"`
}

// GitHub says which GitHub to talk to and how to authenticate. Secrets are
// never in this file: the token comes from the variable TokenEnv names or
// from TokenFile; an App's key from PrivateKeyFile.
type GitHub struct {
	// URL is the web URL: https://github.com or a GitHub Enterprise Server.
	URL string `toml:"url" env:"RUNNER_MANAGER_GITHUB_URL"`
	// APIURL is the REST base; "" derives it from URL
	// (https://api.github.com, or https://HOST/api/v3 for a server).
	APIURL string `toml:"api_url" env:"RUNNER_MANAGER_GITHUB_API_URL"`
	// TokenEnv names the environment variable holding a token.
	TokenEnv string `toml:"token_env" env:"RUNNER_MANAGER_GITHUB_TOKEN_ENV"`
	// TokenFile is a file holding a token, readable by its owner only.
	TokenFile string `toml:"token_file" env:"RUNNER_MANAGER_GITHUB_TOKEN_FILE" path:"true"`
	// AppID or ClientID, InstallationID and PrivateKeyFile select GitHub
	// App authentication instead of a token.
	AppID          int64  `toml:"app_id" env:"RUNNER_MANAGER_GITHUB_APP_ID"`
	ClientID       string `toml:"client_id" env:"RUNNER_MANAGER_GITHUB_CLIENT_ID"`
	InstallationID int64  `toml:"installation_id" env:"RUNNER_MANAGER_GITHUB_INSTALLATION_ID"`
	PrivateKeyFile string `toml:"private_key_file" env:"RUNNER_MANAGER_GITHUB_PRIVATE_KEY_FILE" path:"true"`
}

// UsesApp reports whether GitHub App authentication is configured.
func (g GitHub) UsesApp() bool {
	return g.AppID != 0 || g.ClientID != "" || g.InstallationID != 0 || g.PrivateKeyFile != ""
}

// Admission bounds what the host gives to runners.
type Admission struct {
	// MemoryReserve is kept free for the host itself.
	MemoryReserve Size `toml:"memory_reserve" env:"RUNNER_MANAGER_MEMORY_RESERVE"`
	// DiskFloor: no runner is started while the data directory's
	// filesystem has less free space.
	DiskFloor Size `toml:"disk_floor" env:"RUNNER_MANAGER_DISK_FLOOR"`
	// MaxSpares bounds the host's warm spares, all policies together (0:
	// the default, 8; -1: none).
	MaxSpares int `toml:"max_spares" env:"RUNNER_MANAGER_MAX_SPARES"`
}

// Webhook configures the optional workflow_job receiver (classic mode with
// a public URL).
type Webhook struct {
	// Listen is the address to serve webhooks on; "" turns them off.
	Listen string `toml:"listen" env:"RUNNER_MANAGER_WEBHOOK_LISTEN"`
	// SecretEnv names the environment variable holding the webhook secret.
	SecretEnv string `toml:"secret_env" env:"RUNNER_MANAGER_WEBHOOK_SECRET_ENV"`
	// MaxBody is the largest delivery read (0: 1 MiB; at most GitHub's
	// 25 MB cap); a larger one is refused with 413.
	MaxBody Size `toml:"max_body" env:"RUNNER_MANAGER_WEBHOOK_MAX_BODY"`
}

// Daemon configures `run`.
type Daemon struct {
	// MetricsAddr serves Prometheus metrics; "" turns them off. A port
	// alone (":9464") listens on loopback only.
	MetricsAddr string `toml:"metrics_addr" env:"RUNNER_MANAGER_METRICS_ADDR"`
	// HungGrace is how long a runner may live on after GitHub said its
	// job completed before it is stopped as hung after its job
	// (reconcile.Config.HungGrace).
	HungGrace Age `toml:"hung_grace" env:"RUNNER_MANAGER_HUNG_GRACE"`
}

// DefaultHungGrace is [daemon] hung_grace's default; MinHungGrace and
// MaxHungGrace bound it (a runner needs seconds to exit after its job; a
// day is past any reason to wait).
const (
	DefaultHungGrace = Age(2 * time.Minute)
	MinHungGrace     = Age(time.Second)
	MaxHungGrace     = Age(24 * time.Hour)
)

// Container says where the container backend's engine is (Docker, or
// Podman's Docker-compatible service), for policies of backend container.
type Container struct {
	// Host is the engine's address ("unix:///run/podman/podman.sock",
	// "tcp://…"); "" takes DOCKER_HOST, else the first usual socket found.
	Host string `toml:"host" env:"RUNNER_MANAGER_CONTAINER_HOST"`
}

// VM says how the vm backend runs its microVMs, for policies of backend
// vm (each names its image; its memory limit is its guests' size).
type VM struct {
	// Accel is "kvm" (the default: checked by a real boot at the first
	// launch, every launch refused if it fails) or "tcg", QEMU's software
	// CPU, about 4× slower, where KVM does not work (nested).
	Accel string `toml:"accel" env:"RUNNER_MANAGER_VM_ACCEL"`
	// Memory is a guest's size where its policy sets no memory limit
	// (default 2GiB).
	Memory Size `toml:"memory" env:"RUNNER_MANAGER_VM_MEMORY"`
	// CPUs is a guest's CPUs (default 2).
	CPUs int `toml:"cpus" env:"RUNNER_MANAGER_VM_CPUS"`
	// Network is "restricted" (the default: a guest reaches its runner's
	// services, GitHub's web and API hosts and Forward, nothing else, not
	// the host's loopback) or "open" (whatever the host reaches).
	Network string `toml:"network" env:"RUNNER_MANAGER_VM_NETWORK"`
	// Forward are more host services a guest reaches, "host:port" (in
	// the environment, comma separated).
	Forward []string `toml:"forward" env:"RUNNER_MANAGER_VM_FORWARD"`
	// SlotDisk is the size of a new warm slot's disk (default 20GiB,
	// sparse: the host holds what the guest wrote): the most a
	// repository's work folder and caches take in a VM.
	SlotDisk Size `toml:"slot_disk" env:"RUNNER_MANAGER_VM_SLOT_DISK"`
}

// Store says which journal the host keeps: "" is the SQLite file in the
// data directory (one host needs nothing else); a postgres:// URL is a
// PostgreSQL database that a fleet of hosts shares. The password is never
// in this file: it comes from $RUNNER_MANAGER_STORE_PASSWORD, from
// PasswordFile, or as libpq finds one ($PGPASSWORD, ~/.pgpass).
type Store struct {
	// URL is postgres://user@host:port/database (or
	// postgres://user@/database?host=/socket/dir); "" for SQLite.
	URL string `toml:"url" env:"RUNNER_MANAGER_STORE"`
	// PasswordFile holds the database password, readable by its owner only.
	PasswordFile string `toml:"password_file" env:"RUNNER_MANAGER_STORE_PASSWORD_FILE" path:"true"`
}

// StorePasswordEnv is the environment variable holding the store's
// database password (it is not a key of the file: a secret never is).
const StorePasswordEnv = "RUNNER_MANAGER_STORE_PASSWORD"

// Default values of the keys that have one.
const (
	DefaultGitHubURL     = "https://github.com"
	DefaultTokenEnv      = "GITHUB_TOKEN"
	DefaultSecretEnv     = "RUNNER_MANAGER_WEBHOOK_SECRET"
	DefaultMemoryReserve = Size(2 << 30)
	DefaultDiskFloor     = Size(10 << 30)
	DefaultLogFormat     = "text"
	DefaultLogLevel      = "info"
	// DefaultMetricsPort is the port documented for --metrics-addr.
	DefaultMetricsPort = "9464"
)

// OriginKind says which layer a value came from.
type OriginKind string

// The layers, lowest precedence first.
const (
	FromDefault OriginKind = "default"
	FromFile    OriginKind = "file"
	FromEnv     OriginKind = "env"
	FromFlag    OriginKind = "flag"
)

// Origin is where one value came from.
type Origin struct {
	Kind OriginKind
	// Where: "config.toml:12", "$RUNNER_MANAGER_DATA_DIR", "--data-dir".
	Where string
}

func (o Origin) String() string {
	if o.Where == "" {
		return string(o.Kind)
	}
	return string(o.Kind) + " " + o.Where
}

// Error is a configuration error: it names the file and line, or the
// variable or flag, and the key. The program exits with status 2 on it.
type Error struct {
	// Where is "path:line", "path", "$VAR" or "--flag".
	Where string
	// Key is the dotted key ("github.url"); "" for a syntax error.
	Key string
	Msg string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.Where)
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// FailureClass makes a refused setting a refused value.
func (e *Error) FailureClass() rm.Class { return rm.ClassInvalid }

// Sources are the layers Load reads besides defaults.
type Sources struct {
	// Path is the file to read. When Explicit is false a missing file is
	// not an error (the default path need not exist).
	Path     string
	Explicit bool
	// LookupEnv reads the environment; nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
	// Flags are values given on the command line, by key ("data_dir",
	// "log.format", "daemon.metrics_addr"), each with its flag name for
	// messages. Only flags the user set (or whose env kong read) belong here.
	Flags map[string]FlagValue
	// Backends check their own tables ([vm]) once the rest of the file is
	// checked (backend.Configs). A program that runs no backend gives
	// none, and leaves those tables unchecked.
	Backends []BackendSection
}

// BackendSection is a backend's rules for its own table of the file: the
// table's keys and types are the file format's (File.Container, File.VM,
// documented with the rest), what their values may be is the backend's
// (its accelerators, its networks). Its error is one of File.ErrAt.
type BackendSection interface {
	CheckConfig(c *File) error
}

// FlagValue is one flag's value and name.
type FlagValue struct {
	Value string
	Name  string // "--data-dir"
}

// field is one configuration key found by reflection over Config.
type field struct {
	key   string // "github.url"
	env   string
	value reflect.Value
	// path: the value is a path (tag path:"true"), expanded (expandPaths).
	path bool
}

func fields(c *File) []field {
	var out []field
	var walk func(prefix string, v reflect.Value)
	walk = func(prefix string, v reflect.Value) {
		t := v.Type()
		for i := range t.NumField() {
			f := t.Field(i)
			name := f.Tag.Get("toml")
			if name == "" || name == "-" {
				continue
			}
			key := prefix + name
			if f.Type.Kind() == reflect.Struct {
				walk(key+".", v.Field(i))
				continue
			}
			out = append(out, field{key: key, env: f.Tag.Get("env"), value: v.Field(i), path: f.Tag.Get("path") == "true"})
		}
	}
	walk("", reflect.ValueOf(c).Elem())
	return out
}

// Keys lists every key of the file with its environment variable, in the
// order of the Config struct; the docs and tests use it.
func Keys() [][2]string {
	var c File
	var out [][2]string
	for _, f := range fields(&c) {
		out = append(out, [2]string{f.key, f.env})
	}
	return out
}

// Defaults returns the configuration with every default applied and nothing
// read. DataDir is left empty: Load derives it from the environment.
func Defaults() File {
	return File{
		Log:       Log{Format: DefaultLogFormat, Level: DefaultLogLevel},
		GitHub:    GitHub{URL: DefaultGitHubURL, TokenEnv: DefaultTokenEnv},
		Admission: Admission{MemoryReserve: DefaultMemoryReserve, DiskFloor: DefaultDiskFloor},
		Webhook:   Webhook{SecretEnv: DefaultSecretEnv},
		Logs:      DefaultLogs(),
		Fleet:     Fleet{Heartbeat: DefaultHeartbeat},
		Daemon:    Daemon{HungGrace: DefaultHungGrace},
		Runner:    Runner{AutoUpdate: DefaultAutoUpdate, JobReport: DefaultJobReport},
		Warm:      DefaultWarm(),
	}
}

// Load resolves the configuration: defaults, then the file, then the
// environment, then the flags; then validates it. Errors are *Error.
func Load(src Sources) (*File, error) {
	lookup := src.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	c := Defaults()
	c.Origins = map[string]Origin{}
	fs := fields(&c)
	for _, f := range fs {
		c.Origins[f.key] = Origin{Kind: FromDefault}
	}

	if src.Path != "" {
		data, err := os.ReadFile(src.Path)
		switch {
		case err == nil:
			if err := decodeFile(&c, src.Path, data); err != nil {
				return nil, err
			}
			c.Path = src.Path
		case errors.Is(err, os.ErrNotExist) && !src.Explicit:
		case errors.Is(err, os.ErrNotExist):
			return nil, &Error{Where: src.Path, Msg: "no such file; create one with `runner-manager init`, or give another --config"}
		default:
			return nil, &Error{Where: src.Path, Msg: err.Error()}
		}
	}

	if err := c.setFromEnv(fs, lookup); err != nil {
		return nil, err
	}
	if err := c.setFromFlags(fs, src.Flags); err != nil {
		return nil, err
	}

	if err := c.expandPaths(lookup); err != nil {
		return nil, err
	}
	if c.DataDir == "" {
		dir, err := DefaultDataDir(lookup)
		if err != nil {
			return nil, &Error{Where: "--data-dir", Key: "data_dir", Msg: err.Error()}
		}
		c.DataDir = dir
	}
	if err := c.validate(); err != nil {
		return nil, err
	}
	for _, b := range src.Backends {
		if err := b.CheckConfig(&c); err != nil {
			return nil, err
		}
	}
	return &c, nil
}

// setFromEnv sets each field whose variable is set and not empty, over the
// file's value.
func (c *File) setFromEnv(fs []field, lookup func(string) (string, bool)) error {
	for _, f := range fs {
		if f.env == "" {
			continue
		}
		s, ok := lookup(f.env)
		if !ok || s == "" {
			continue
		}
		if err := setString(f.value, s); err != nil {
			return &Error{Where: "$" + f.env, Key: f.key, Msg: err.Error()}
		}
		c.Origins[f.key] = Origin{Kind: FromEnv, Where: "$" + f.env}
	}
	return nil
}

// setFromFlags sets each key a flag gave a value, over the environment's
// and the file's, in key order.
func (c *File) setFromFlags(fs []field, flags map[string]FlagValue) error {
	byKey := map[string]field{}
	for _, f := range fs {
		byKey[f.key] = f
	}
	keys := make([]string, 0, len(flags))
	for k := range flags {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fv := flags[k]
		f, ok := byKey[k]
		if !ok {
			return &Error{Where: fv.Name, Key: k, Msg: "not a configuration key (a bug: report it)"}
		}
		if fv.Value == "" {
			continue
		}
		if err := setString(f.value, fv.Value); err != nil {
			return &Error{Where: fv.Name, Key: k, Msg: err.Error()}
		}
		c.Origins[k] = Origin{Kind: FromFlag, Where: fv.Name}
	}
	return nil
}

// MetricsListenAddr is the address to listen on for metrics: a port alone
// means loopback (127.0.0.1:PORT), never every interface.
func (d Daemon) MetricsListenAddr() string {
	host, port, err := net.SplitHostPort(d.MetricsAddr)
	if err != nil || host != "" {
		return d.MetricsAddr
	}
	return net.JoinHostPort("127.0.0.1", port)
}
