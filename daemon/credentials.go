package daemon

import (
	"fmt"
	"os"
	"runtime"

	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/credstore"
)

// CredentialStores are where GitHub's credentials kept by `auth login`
// are looked for, in order: what systemd gave the service
// ($CREDENTIALS_DIRECTORY, from the unit's LoadCredential=), then this
// system's secret store for the data directory (credstore.ForDataDir).
func CredentialStores(dataDir string) []credstore.Store {
	var out []credstore.Store
	if s := credstore.ForService(os.Getenv); s != nil {
		out = append(out, s)
	}
	return append(out, credstore.ForDataDir(runtime.GOOS, dataDir))
}

// StoredCredentials reads GitHub's credentials from stores (configfile.Stored).
func StoredCredentials(stores ...credstore.Store) configfile.Stored {
	return func() ([]byte, string, error) {
		b, s, err := credstore.Find(credstore.GitHub, stores...)
		if err != nil {
			return nil, "", err
		}
		if s == nil {
			return nil, "", nil
		}
		return b, fmt.Sprint(s), nil
	}
}

// Credentials are GitHub's credentials for c, in configfile.GitHub.Resolve's
// order: the configuration's files, the variable token_env names, the OS
// secret store.
func Credentials(c *configfile.File) (configfile.Credentials, error) {
	return c.GitHub.Resolve(nil, StoredCredentials(CredentialStores(c.DataDir)...))
}

// CredentialReport says where GitHub's credentials come from for a
// configuration (auth status).
type CredentialReport struct {
	// InForce are the credentials the daemon would use; zero when Err.
	InForce configfile.Credentials
	// Err is why there are none (wrapping configfile.ErrNoCredentials when
	// nothing is configured or stored).
	Err error
	// Stored describes what the OS secret store keeps when it is not the
	// credentials in force ("" when it keeps none): an explicit setting
	// shadows it.
	Stored string
	// Store is where `auth login` keeps them for this data directory.
	Store credstore.Store
}

// ReportCredentials tells which of c's sources of GitHub's credentials is
// in force and what the OS secret store keeps beside it. It never holds a
// secret but in InForce.
func ReportCredentials(c *configfile.File) CredentialReport {
	stores := CredentialStores(c.DataDir)
	r := CredentialReport{Store: stores[len(stores)-1]}
	r.InForce, r.Err = c.GitHub.Resolve(nil, StoredCredentials(stores...))
	if r.Err == nil && r.InForce.Source == configfile.SourceStore {
		return r
	}
	b, s, err := credstore.Find(credstore.GitHub, stores...)
	switch {
	case err != nil:
		r.Stored = fmt.Sprintf("the %s cannot be read: %v", s, err)
	case s != nil:
		if kept, err := configfile.ParseStored(b); err == nil {
			r.Stored = fmt.Sprintf("the %s keeps %s", s, kept.Fingerprint())
		} else {
			r.Stored = fmt.Sprintf("the %s keeps credentials that do not parse: %v", s, err)
		}
	}
	return r
}

// KeepCredentials stores creds in the OS secret store of c's data
// directory (auth login) and returns the store.
func KeepCredentials(c *configfile.File, creds configfile.Credentials) (credstore.Store, error) {
	rec, err := creds.MarshalStored()
	if err != nil {
		return nil, err
	}
	s := credstore.ForDataDir(runtime.GOOS, c.DataDir)
	if err := s.Set(credstore.GitHub, rec); err != nil {
		return s, fmt.Errorf("keep the credentials in the %s: %w", s, err)
	}
	return s, nil
}

// ForgetCredentials removes GitHub's credentials from the OS secret store
// of c's data directory (auth logout); an error wrapping
// credstore.ErrNotFound when it keeps none.
func ForgetCredentials(c *configfile.File) (credstore.Store, error) {
	s := credstore.ForDataDir(runtime.GOOS, c.DataDir)
	if err := s.Delete(credstore.GitHub); err != nil {
		return s, err
	}
	return s, nil
}
