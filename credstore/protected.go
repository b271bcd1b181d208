package credstore

import (
	"errors"
	"fmt"
	"path/filepath"
)

// Protected keeps each secret in a file "<name>.dpapi" in Dir, encrypted
// by Protect and decrypted by Unprotect: on Windows, DPAPI's
// CryptProtectData and CryptUnprotectData (NewDPAPI), which bind the
// ciphertext to the account that stored it. The files are written as
// File's are (whole or not at all).
type Protected struct {
	Dir string
	// Protect encrypts a secret; entropy (the secret's name) must be given
	// again to Unprotect.
	Protect   func(secret, entropy []byte) ([]byte, error)
	Unprotect func(blob, entropy []byte) ([]byte, error)
}

var _ Store = Protected{}

// errNoDPAPI: DPAPI exists on Windows alone.
var errNoDPAPI = errors.New("DPAPI is available on Windows only")

// String says where the secrets are.
func (p Protected) String() string { return "DPAPI-protected file " + p.Dir }

// Path is the file that holds the secret name.
func (p Protected) Path(name string) string { return filepath.Join(p.Dir, name+".dpapi") }

// Get reads and decrypts the secret.
func (p Protected) Get(name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	blob, err := readPrivate(p.Path(name))
	if err != nil {
		return nil, err
	}
	b, err := p.Unprotect(blob, []byte(name))
	if err != nil {
		return nil, fmt.Errorf("decrypt %s (DPAPI decrypts only for the account that stored it): %w", p.Path(name), err)
	}
	return b, nil
}

// Set encrypts and writes the secret, creating Dir if missing.
func (p Protected) Set(name string, secret []byte) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := checkSecret(secret); err != nil {
		return err
	}
	blob, err := p.Protect(secret, []byte(name))
	if err != nil {
		return fmt.Errorf("encrypt the secret with DPAPI: %w", err)
	}
	return writePrivate(p.Dir, filepath.Base(p.Path(name)), blob)
}

// Delete removes the secret's file.
func (p Protected) Delete(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return removePrivate(p.Path(name))
}
