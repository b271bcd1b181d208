package configfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"

	"github.com/BurntSushi/toml"
)

// AppName names the program's directories.
const AppName = "runner-manager"

// DefaultConfigPath is $XDG_CONFIG_HOME/runner-manager/config.toml, with
// XDG_CONFIG_HOME defaulting to ~/.config (on Windows, %AppData%).
func DefaultConfigPath(lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if d, ok := lookupEnv("XDG_CONFIG_HOME"); ok && filepath.IsAbs(d) {
		return filepath.Join(d, AppName, "config.toml"), nil
	}
	if runtime.GOOS == "windows" {
		if d, ok := lookupEnv("AppData"); ok && d != "" {
			return filepath.Join(d, AppName, "config.toml"), nil
		}
	}
	home, err := homeDir(lookupEnv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".config", AppName, "config.toml"), nil
}

// DefaultDataDir is $XDG_STATE_HOME/runner-manager, with XDG_STATE_HOME
// defaulting to ~/.local/state (on Windows, %LocalAppData%).
func DefaultDataDir(lookupEnv func(string) (string, bool)) (string, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if d, ok := lookupEnv("XDG_STATE_HOME"); ok && filepath.IsAbs(d) {
		return filepath.Join(d, AppName), nil
	}
	if runtime.GOOS == "windows" {
		if d, ok := lookupEnv("LocalAppData"); ok && d != "" {
			return filepath.Join(d, AppName), nil
		}
	}
	home, err := homeDir(lookupEnv)
	if err != nil {
		return "", err
	}
	return filepath.Join(home, ".local", "state", AppName), nil
}

func homeDir(lookupEnv func(string) (string, bool)) (string, error) {
	for _, k := range []string{"HOME", "USERPROFILE"} {
		if d, ok := lookupEnv(k); ok && d != "" {
			return d, nil
		}
	}
	return "", errors.New("no home directory ($HOME is not set): give --data-dir and --config")
}

// DataDirOf returns the data_dir a configuration file sets, as written
// ("" when it sets none or cannot be read): what `init --force` keeps when
// it rewrites the file.
func DataDirOf(path string) string {
	var f struct {
		DataDir string `toml:"data_dir"`
	}
	if _, err := toml.DecodeFile(path, &f); err != nil {
		return ""
	}
	return f.DataDir
}
