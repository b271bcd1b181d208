package credstore

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/runner-manager/runner-manager/datadir"
)

// KeychainService is the service of runner-manager's keychain items.
const KeychainService = "runner-manager"

// ForDataDir is the secret store of goos ("linux", "darwin", "windows",
// runtime.GOOS) for the data directory dataDir's secrets: the keychain on
// macOS (an account per data directory), DPAPI-encrypted files in the data
// directory's credentials/ on Windows, and private files there elsewhere.
func ForDataDir(goos, dataDir string) Store {
	dir := datadir.New(dataDir).Credentials()
	switch goos {
	case "darwin":
		abs, err := filepath.Abs(dataDir)
		if err != nil {
			abs = dataDir
		}
		sum := sha256.Sum256([]byte(abs))
		return Keychain{Service: KeychainService, Account: hex.EncodeToString(sum[:6])}
	case "windows":
		return NewDPAPI(dir)
	}
	return File{Dir: dir}
}

// ServiceEnv is the variable systemd sets to the directory of a service's
// credentials (LoadCredential=).
const ServiceEnv = "CREDENTIALS_DIRECTORY"

// ForService is what systemd gave this process as its service's
// credentials, as getenv tells $CREDENTIALS_DIRECTORY; nil outside such a
// service.
func ForService(getenv func(string) string) Store {
	if dir := getenv(ServiceEnv); dir != "" {
		return Loaded{Dir: dir}
	}
	return nil
}
