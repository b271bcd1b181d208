package credstore

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
)

// File keeps each secret in a file of its name in Dir: the directory mode
// 0700, the file 0600, both owned by the account that stored it, so that
// a secret stored as root is readable by root alone. A write is whole or
// not at all (a temporary file renamed over the old one).
type File struct {
	Dir string
}

var _ Store = File{}

// String says where the secrets are.
func (f File) String() string { return "file " + f.Dir }

// Path is the file that holds the secret name.
func (f File) Path(name string) string { return filepath.Join(f.Dir, name) }

// Get reads the secret, refusing a file its group or others may read
// (chmod 600 it) or a link.
func (f File) Get(name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	return readPrivate(f.Path(name))
}

// Set writes the secret, creating Dir (0700) if missing.
func (f File) Set(name string, secret []byte) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := checkSecret(secret); err != nil {
		return err
	}
	return writePrivate(f.Dir, name, secret)
}

// Delete removes the secret's file.
func (f File) Delete(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	return removePrivate(f.Path(name))
}

// readPrivate reads a secret's file: ErrNotFound when it does not exist;
// an error when it is not a regular file or, on Unix, its group or others
// may read it. The error never holds the content.
func readPrivate(path string) ([]byte, error) {
	st, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		// A folder on its way is a file (a data directory given as a
		// file): no secret is there, and the caller says what is wrong.
		return nil, fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if errors.Is(err, fs.ErrPermission) {
		return nil, notYours(path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret at %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%s): remove it and store the secret again", path, st.Mode().Type())
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by its group or others (mode %04o): run `chmod 600 %s`, or store the secret again", path, st.Mode().Perm(), path)
	}
	fh, err := os.Open(path)
	if errors.Is(err, fs.ErrPermission) {
		return nil, notYours(path, err)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret at %s: %w", path, err)
	}
	defer fh.Close()
	b, err := io.ReadAll(io.LimitReader(fh, 64<<10))
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret at %s: %w", path, err)
	}
	return b, nil
}

// notYours is the error of a secret this account may not read.
func notYours(path string, err error) error {
	return fmt.Errorf("cannot read the secret at %s: %w: only the account that stored it reads it (root, for a system service: run the command with sudo, or give this account a token of its own in the variable token_env names)", path, err)
}

// writePrivate writes data as dir/name, mode 0600, through a temporary
// file in dir renamed over it; dir is created 0700 and an existing one
// narrowed to 0700.
func writePrivate(dir, name string, data []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return fmt.Errorf("create the secret store %s: %w (a system service's data directory is root's: run the command with sudo)", dir, err)
		}
		return fmt.Errorf("create the secret store %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("make the secret store %s private: %w", dir, err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+".*")
	if err != nil {
		return fmt.Errorf("write the secret in %s: %w", dir, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil && runtime.GOOS != "windows" {
		tmp.Close()
		return fmt.Errorf("write the secret in %s: %w", dir, err)
	}
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return fmt.Errorf("write the secret in %s: %w", dir, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("write the secret in %s: %w", dir, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write the secret in %s: %w", dir, err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("write the secret in %s: %w", dir, err)
	}
	return nil
}

func removePrivate(path string) error {
	err := os.Remove(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w", path, ErrNotFound)
	}
	if err != nil {
		return fmt.Errorf("remove the secret at %s: %w", path, err)
	}
	return nil
}

// Loaded reads the secrets systemd gives a service from its
// LoadCredential= lines: the files in $CREDENTIALS_DIRECTORY (Dir). It
// only reads: the file systemd loads them from is the File store's.
type Loaded struct {
	Dir string
}

var _ Store = Loaded{}

// String says where the secrets come from.
func (l Loaded) String() string { return "systemd credential in " + l.Dir }

// Get reads the credential name systemd loaded.
func (l Loaded) Get(name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	p := filepath.Join(l.Dir, name)
	// systemd makes the directory and its files readable by the service's
	// account alone (mode 0400 or 0440 on a private mount): no mode check.
	b, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%s: %w", p, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot read the systemd credential %s: %w", p, err)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("%s is empty: %w", p, ErrNotFound)
	}
	return b, nil
}

// Set refuses: systemd's credentials are read-only.
func (l Loaded) Set(string, []byte) error {
	return fmt.Errorf("%w: store it with `runner-manager auth login` (outside the service)", ErrReadOnly)
}

// Delete refuses: systemd's credentials are read-only.
func (l Loaded) Delete(string) error {
	return fmt.Errorf("%w: remove it with `runner-manager auth logout` (outside the service)", ErrReadOnly)
}
