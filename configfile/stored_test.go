package configfile_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/configfile"
)

func TestStoredRoundTrip(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	long := "ghs_12_" + strings.Repeat("eyJhbGciOiJSUzI1NiJ9", 26) // the 2026 form, ~520 characters

	for _, c := range []configfile.Credentials{
		{Token: "ghp_0123456789abcdef"},
		{Token: long},
		{AppID: 7, InstallationID: 77, PrivateKeyPEM: keyPEM},
		{ClientID: "Iv1.abc", InstallationID: 77, PrivateKeyPEM: keyPEM},
	} {
		rec, err := c.MarshalStored()
		require.NoError(t, err)
		got, err := configfile.ParseStored(rec)
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}

	got, err := configfile.ParseStored([]byte("ghp_written_by_hand\n"))
	require.NoError(t, err)
	assert.Equal(t, "ghp_written_by_hand", got.Token, "a file holding a token alone")

	for name, c := range map[string]configfile.Credentials{
		"empty":            {},
		"space":            {Token: "ghp_a b"},
		"line break":       {Token: "ghp_a\nb"},
		"no installation":  {AppID: 7, PrivateKeyPEM: keyPEM},
		"no app":           {InstallationID: 7, PrivateKeyPEM: keyPEM},
		"not a key":        {AppID: 7, InstallationID: 77, PrivateKeyPEM: []byte("ghp_not_a_key")},
		"not an RSA block": {AppID: 7, InstallationID: 77, PrivateKeyPEM: pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: []byte("junk")})},
	} {
		_, err := c.MarshalStored()
		assert.Error(t, err, name)
	}
	for _, bad := range []string{`{"token":"ghp_half`, `{"app_id":7,"private_key":"x"}`, `{}`} {
		_, err := configfile.ParseStored([]byte(bad))
		require.Error(t, err, bad)
		assert.NotContains(t, err.Error(), "ghp_half")
	}
}

func TestFingerprint(t *testing.T) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	fp, err := configfile.KeyFingerprint(keyPEM)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(fp, "SHA256:") && len(fp) == len("SHA256:")+44, fp)
	pkcs8, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	fp8, err := configfile.KeyFingerprint(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pkcs8}))
	require.NoError(t, err)
	assert.Equal(t, fp, fp8, "the same key in either encoding")

	tests := []struct {
		c    configfile.Credentials
		want string
	}{
		{configfile.Credentials{Token: "ghp_0123456789abcdWXYZ"}, "a token ending in …WXYZ"},
		{configfile.Credentials{Token: "short_token"}, "a token of 11 characters"},
		{configfile.Credentials{AppID: 7, InstallationID: 77, PrivateKeyPEM: keyPEM}, "GitHub App 7, installation 77, key " + fp},
		{configfile.Credentials{ClientID: "Iv1.abc", InstallationID: 77, PrivateKeyPEM: []byte("x")}, "GitHub App Iv1.abc, installation 77, key a key that does not parse"},
	}
	for _, tt := range tests {
		assert.Equal(t, tt.want, tt.c.Fingerprint())
		assert.NotContains(t, tt.c.Fingerprint(), "0123456789")
	}
}

// Resolve's order: an App or token_file in the file, then the variable
// token_env names, then the OS store; a store that fails is an error.
func TestResolveOrder(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(file, []byte("ghp_file\n"), 0o600))
	stored := func(rec string) configfile.Stored {
		return func() ([]byte, string, error) { return []byte(rec), "test store", nil }
	}
	none := func() ([]byte, string, error) { return nil, "", nil }
	failing := func() ([]byte, string, error) { return nil, "", errors.New("permission denied") }
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	tests := []struct {
		name   string
		g      configfile.GitHub
		env    map[string]string
		stored configfile.Stored
		token  string
		source configfile.Source
		from   string
		err    string
	}{
		{"file wins", configfile.GitHub{TokenEnv: "T", TokenFile: file}, map[string]string{"T": "ghp_env"}, stored(`{"token":"ghp_store"}`), "ghp_file", configfile.SourceTokenFile, file, ""},
		{"env over store", configfile.GitHub{TokenEnv: "T"}, map[string]string{"T": "ghp_env"}, stored(`{"token":"ghp_store"}`), "ghp_env", configfile.SourceEnv, "$T", ""},
		{"blank env is none", configfile.GitHub{TokenEnv: "T"}, map[string]string{"T": "  "}, stored(`{"token":"ghp_store"}`), "ghp_store", configfile.SourceStore, "test store", ""},
		{"store", configfile.GitHub{TokenEnv: "T"}, nil, stored(`{"token":"ghp_store"}`), "ghp_store", configfile.SourceStore, "test store", ""},
		{"nothing", configfile.GitHub{TokenEnv: "T"}, nil, none, "", "", "", "no GitHub credentials: run `runner-manager auth login`"},
		{"store fails", configfile.GitHub{TokenEnv: "T"}, nil, failing, "", "", "", "the OS secret store: permission denied"},
		{"store damaged", configfile.GitHub{TokenEnv: "T"}, nil, stored(`{"token":`), "", "", "", "the credentials in the test store: not the record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := tt.g.Resolve(env(tt.env), tt.stored)
			if tt.err != "" {
				require.ErrorContains(t, err, tt.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.token, c.Token)
			assert.Equal(t, tt.source, c.Source)
			assert.Equal(t, tt.from, c.From)
		})
	}
}
