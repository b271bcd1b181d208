package credstore_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/credstore"
)

const secret = "ghs_12_eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOjF9.c2lnbmF0dXJl"

// conformance is what every writable store does.
func conformance(t *testing.T, s credstore.Store) {
	t.Helper()
	_, err := s.Get(credstore.GitHub)
	require.ErrorIs(t, err, credstore.ErrNotFound)
	require.ErrorIs(t, s.Delete(credstore.GitHub), credstore.ErrNotFound)

	require.NoError(t, s.Set(credstore.GitHub, []byte(secret)))
	got, err := s.Get(credstore.GitHub)
	require.NoError(t, err)
	assert.Equal(t, secret, string(got))

	pem := "-----BEGIN RSA PRIVATE KEY-----\nMIIE\nab+/=\n-----END RSA PRIVATE KEY-----\n"
	require.NoError(t, s.Set(credstore.GitHub, []byte(pem)), "replaces")
	got, err = s.Get(credstore.GitHub)
	require.NoError(t, err)
	assert.Equal(t, pem, string(got), "a key with line breaks comes back as it went")

	for _, bad := range []string{"", "../x", "a b", "GitHub", "a/b"} {
		assert.Error(t, s.Set(bad, []byte("x")), bad)
		_, err := s.Get(bad)
		assert.Error(t, err, bad)
	}
	assert.ErrorContains(t, s.Set(credstore.GitHub, nil), "empty")
	err = s.Set(credstore.GitHub, []byte(strings.Repeat("x", credstore.MaxSecret+1)))
	assert.ErrorContains(t, err, "more than")
	assert.NotContains(t, err.Error(), "xxxx")

	require.NoError(t, s.Delete(credstore.GitHub))
	_, err = s.Get(credstore.GitHub)
	require.ErrorIs(t, err, credstore.ErrNotFound)
}

func TestFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data", "credentials")
	s := credstore.File{Dir: dir}
	conformance(t, s)

	require.NoError(t, s.Set(credstore.GitHub, []byte(secret)))
	if runtime.GOOS != "windows" {
		st, err := os.Stat(s.Path(credstore.GitHub))
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o600), st.Mode().Perm(), "the file is its owner's alone")
		st, err = os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), st.Mode().Perm(), "and so is its directory")

		t.Run("a widened directory is narrowed again", func(t *testing.T) {
			require.NoError(t, os.Chmod(dir, 0o755))
			require.NoError(t, s.Set(credstore.GitHub, []byte(secret)))
			st, err := os.Stat(dir)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), st.Mode().Perm())
		})
		t.Run("a file others may read is refused", func(t *testing.T) {
			require.NoError(t, os.Chmod(s.Path(credstore.GitHub), 0o644))
			_, err := s.Get(credstore.GitHub)
			require.ErrorContains(t, err, "chmod 600")
			assert.NotContains(t, err.Error(), secret)
		})
		t.Run("a link is refused", func(t *testing.T) {
			other := filepath.Join(t.TempDir(), "other")
			require.NoError(t, os.WriteFile(other, []byte(secret), 0o600))
			require.NoError(t, os.Remove(s.Path(credstore.GitHub)))
			require.NoError(t, os.Symlink(other, s.Path(credstore.GitHub)))
			_, err := s.Get(credstore.GitHub)
			require.ErrorContains(t, err, "not a regular file")
		})
	}
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), "."), "no temporary file left: %s", e.Name())
	}
}

func TestLoaded(t *testing.T) {
	dir := t.TempDir()
	s := credstore.Loaded{Dir: dir}
	_, err := s.Get(credstore.GitHub)
	require.ErrorIs(t, err, credstore.ErrNotFound)
	require.NoError(t, os.WriteFile(filepath.Join(dir, credstore.GitHub), nil, 0o400))
	_, err = s.Get(credstore.GitHub)
	require.ErrorIs(t, err, credstore.ErrNotFound, "an empty credential is none")
	require.NoError(t, os.Remove(filepath.Join(dir, credstore.GitHub)))
	require.NoError(t, os.WriteFile(filepath.Join(dir, credstore.GitHub), []byte(secret), 0o400))
	got, err := s.Get(credstore.GitHub)
	require.NoError(t, err)
	assert.Equal(t, secret, string(got))
	require.ErrorIs(t, s.Set(credstore.GitHub, []byte("x")), credstore.ErrReadOnly)
	require.ErrorIs(t, s.Delete(credstore.GitHub), credstore.ErrReadOnly)

	assert.Nil(t, credstore.ForService(func(string) string { return "" }))
	assert.Equal(t, s, credstore.ForService(func(k string) string {
		if k == credstore.ServiceEnv {
			return dir
		}
		return ""
	}))
}

// Find takes the first store that holds the secret; one that holds it but
// cannot be read stops the search with its error.
func TestFind(t *testing.T) {
	a, b := credstore.File{Dir: t.TempDir()}, credstore.File{Dir: t.TempDir()}
	got, s, err := credstore.Find(credstore.GitHub, nil, a, b)
	require.NoError(t, err)
	assert.Nil(t, s)
	assert.Nil(t, got)
	require.NoError(t, b.Set(credstore.GitHub, []byte("from-b")))
	got, s, err = credstore.Find(credstore.GitHub, a, b)
	require.NoError(t, err)
	assert.Equal(t, b, s)
	assert.Equal(t, "from-b", string(got))
	require.NoError(t, a.Set(credstore.GitHub, []byte("from-a")))
	got, s, err = credstore.Find(credstore.GitHub, a, b)
	require.NoError(t, err)
	assert.Equal(t, a, s)
	assert.Equal(t, "from-a", string(got))
	if runtime.GOOS != "windows" {
		require.NoError(t, os.Chmod(a.Path(credstore.GitHub), 0o640))
		_, s, err = credstore.Find(credstore.GitHub, a, b)
		require.Error(t, err)
		assert.Equal(t, a, s)
	}
}

func TestForDataDir(t *testing.T) {
	data := t.TempDir()
	assert.Equal(t, credstore.File{Dir: filepath.Join(data, "credentials")}, credstore.ForDataDir("linux", data))
	assert.Equal(t, credstore.File{Dir: filepath.Join(data, "credentials")}, credstore.ForDataDir("freebsd", data))
	win, ok := credstore.ForDataDir("windows", data).(credstore.Protected)
	require.True(t, ok)
	assert.Equal(t, filepath.Join(data, "credentials", "github.dpapi"), win.Path(credstore.GitHub))
	mac, ok := credstore.ForDataDir("darwin", data).(credstore.Keychain)
	require.True(t, ok)
	assert.Equal(t, credstore.KeychainService, mac.Service)
	other, _ := credstore.ForDataDir("darwin", t.TempDir()).(credstore.Keychain)
	assert.NotEqual(t, mac.Account, other.Account, "two data directories, two keychain items")
	again, _ := credstore.ForDataDir("darwin", data).(credstore.Keychain)
	assert.Equal(t, mac.Account, again.Account)
}

// fakeSecurity answers as security(1) does for the commands Keychain
// runs, keeping items in a map, and records every argv it was given.
type fakeSecurity struct {
	items map[string]string
	argvs [][]string
	// failAdd makes add-generic-password fail silently (exit 0, nothing
	// kept), as `security -i` may.
	failAdd bool
}

func (f *fakeSecurity) run(_ context.Context, args []string, stdin []byte) ([]byte, []byte, int, error) {
	f.argvs = append(f.argvs, append([]string(nil), args...))
	if len(args) == 1 && args[0] == "-i" {
		fields := strings.Fields(string(stdin))
		if len(fields) != 8 || fields[0] != "add-generic-password" || fields[1] != "-U" || fields[2] != "-s" || fields[4] != "-a" || fields[6] != "-w" {
			return nil, []byte("unknown command"), 1, nil
		}
		if !f.failAdd {
			f.items[fields[3]+"/"+fields[5]] = fields[7]
		}
		return nil, nil, 0, nil
	}
	key := func() string { return args[2] + "/" + args[4] }
	switch args[0] {
	case "find-generic-password":
		pw, ok := f.items[key()]
		if !ok {
			return nil, []byte("security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain."), 44, nil
		}
		return []byte(pw + "\n"), nil, 0, nil
	case "delete-generic-password":
		if _, ok := f.items[key()]; !ok {
			return nil, []byte("security: SecKeychainSearchCopyNext: The specified item could not be found in the keychain."), 44, nil
		}
		delete(f.items, key())
		return []byte("password has been deleted.\n"), nil, 0, nil
	}
	return nil, []byte("unknown command"), 2, nil
}

func TestKeychain(t *testing.T) {
	f := &fakeSecurity{items: map[string]string{}}
	s := credstore.Keychain{Service: credstore.KeychainService, Account: "abc123", Run: f.run}
	conformance(t, s)

	t.Run("the secret never travels in argv", func(t *testing.T) {
		f.argvs = nil
		require.NoError(t, s.Set(credstore.GitHub, []byte(secret)))
		_, err := s.Get(credstore.GitHub)
		require.NoError(t, err)
		require.NotEmpty(t, f.argvs)
		enc := base64.StdEncoding.EncodeToString([]byte(secret))
		for _, argv := range f.argvs {
			line := strings.Join(argv, " ")
			assert.NotContains(t, line, secret)
			assert.NotContains(t, line, enc)
		}
		assert.Equal(t, []string{"-i"}, f.argvs[0], "the add command goes on stdin")
		assert.Contains(t, f.items, "runner-manager/github.abc123")
	})
	t.Run("a write the keychain did not keep is an error", func(t *testing.T) {
		f.failAdd = true
		defer func() { f.failAdd = false }()
		err := s.Set(credstore.GitHub, []byte("ghp_other_token_0123456789"))
		require.ErrorContains(t, err, "did not keep the secret")
		assert.NotContains(t, err.Error(), "ghp_other")
	})
	t.Run("an item not written here is refused, not misread", func(t *testing.T) {
		f.items["runner-manager/github.abc123"] = "plain"
		_, err := s.Get(credstore.GitHub)
		require.ErrorContains(t, err, "not written by runner-manager")
		assert.NotContains(t, err.Error(), "plain")
	})
	t.Run("security failing", func(t *testing.T) {
		broken := credstore.Keychain{Service: "runner-manager", Run: func(context.Context, []string, []byte) ([]byte, []byte, int, error) {
			return nil, []byte("security: SecKeychainItemCreateFromContent: User interaction is not allowed."), 36, nil
		}}
		err := broken.Set(credstore.GitHub, []byte(secret))
		require.ErrorContains(t, err, "exited 36: security: SecKeychainItemCreateFromContent: User interaction is not allowed.")
		_, err = broken.Get(credstore.GitHub)
		require.ErrorContains(t, err, "exited 36")
		_, err = credstore.Keychain{Service: "runner manager", Run: f.run}.Get(credstore.GitHub)
		require.ErrorContains(t, err, "no space")
	})
}

// xorProtect stands for DPAPI: reversible, bound to the entropy, and not
// the identity (the file must not hold the secret in clear).
func xorProtect(b, entropy []byte) ([]byte, error) {
	out := make([]byte, len(b))
	for i := range b {
		out[i] = b[i] ^ 0x5a ^ entropy[i%len(entropy)]
	}
	return out, nil
}

func TestProtected(t *testing.T) {
	dir := t.TempDir()
	s := credstore.Protected{Dir: dir, Protect: xorProtect, Unprotect: xorProtect}
	conformance(t, s)
	require.NoError(t, s.Set(credstore.GitHub, []byte(secret)))
	raw, err := os.ReadFile(s.Path(credstore.GitHub))
	require.NoError(t, err)
	assert.NotContains(t, string(raw), secret, "the file holds the protected form")

	failing := credstore.Protected{Dir: dir, Protect: xorProtect, Unprotect: func([]byte, []byte) ([]byte, error) {
		return nil, fmt.Errorf("The data is invalid.")
	}}
	_, err = failing.Get(credstore.GitHub)
	require.ErrorContains(t, err, "only for the account that stored it")

	if runtime.GOOS != "windows" {
		err := credstore.NewDPAPI(t.TempDir()).Set(credstore.GitHub, []byte(secret))
		require.ErrorContains(t, err, "Windows only")
	}
}
