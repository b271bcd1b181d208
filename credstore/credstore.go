// Package credstore keeps named secrets in the operating system's secret
// store, so that a GitHub token or a GitHub App's key need not live in an
// environment variable or a file the operator manages by hand.
//
// One interface, three backends, one per system:
//
//   - Linux (and other Unix): File, a file per secret, mode 0600 in a
//     directory of mode 0700, owned by whoever stored it (root for a
//     system service). systemd hands it to the service with
//     LoadCredential=, and the daemon reads it back through Loaded from
//     $CREDENTIALS_DIRECTORY, so the service may run as an account that
//     cannot read the file itself.
//   - macOS: Keychain, the login or system keychain through the
//     security(1) command, the secret always on its standard input, never
//     in its arguments.
//   - Windows: Protected, a file per secret encrypted with DPAPI
//     (CryptProtectData, bound to the account that stored it).
//
// A secret never appears in an error of this package.
package credstore

import (
	"errors"
	"fmt"
	"regexp"
)

// Store keeps secrets by name. A name is lower-case letters, digits, '.',
// '_' and '-', starting with a letter or digit (ValidName).
type Store interface {
	// Get returns the secret stored under name, or an error wrapping
	// ErrNotFound when there is none.
	Get(name string) ([]byte, error)
	// Set stores secret under name, replacing any secret stored before.
	Set(name string, secret []byte) error
	// Delete removes the secret stored under name; an error wrapping
	// ErrNotFound when there is none.
	Delete(name string) error
}

var (
	// ErrNotFound: no secret is stored under the name.
	ErrNotFound = errors.New("no secret stored")
	// ErrReadOnly: the store only reads (Loaded, what systemd gives a
	// service).
	ErrReadOnly = errors.New("the secret store is read-only")
)

// GitHub is the name GitHub's credentials are kept under, and the
// credential's name in the systemd unit (LoadCredential=github:…).
const GitHub = "github"

// MaxSecret is the largest secret a store takes: a token or a PEM key is
// far smaller, and the macOS keychain's command line takes at most 4096
// bytes.
const MaxSecret = 2800

var nameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidName reports whether name may name a secret: it becomes a file
// name and a keychain account, so no path separator, space or quote.
func ValidName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("%q is not a secret's name (lower-case letters, digits, '.', '_' and '-', at most 64)", name)
	}
	return nil
}

func checkSecret(secret []byte) error {
	switch {
	case len(secret) == 0:
		return errors.New("the secret is empty")
	case len(secret) > MaxSecret:
		return fmt.Errorf("the secret is %d bytes, more than the %d a store takes (a token is under 1 KB, a GitHub App's key about 1.7 KB)", len(secret), MaxSecret)
	}
	return nil
}

// Find returns the secret stored under name in the first of stores that
// holds one, and that store. found is nil with a nil error when none does;
// a store that holds it but cannot be read is an error (a root-only file
// read by another account: the error says which).
func Find(name string, stores ...Store) (secret []byte, found Store, err error) {
	for _, s := range stores {
		if s == nil {
			continue
		}
		b, err := s.Get(name)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, s, err
		}
		return b, s, nil
	}
	return nil, nil, nil
}
