package configfile

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// ErrNoCredentials: neither a token nor a GitHub App is configured.
var ErrNoCredentials = rm.NewError(rm.ClassNotAuthenticated, "no GitHub credentials")

// Credentials are the secrets read for GitHub. They never reach a log, an
// error, argv, the journal or a service file.
type Credentials struct {
	// Token is a personal access token (fine-grained or classic).
	Token string
	// App authentication: AppID or ClientID, InstallationID, PrivateKeyPEM.
	AppID          int64
	ClientID       string
	InstallationID int64
	PrivateKeyPEM  []byte

	// Source and From say where they were read: From is the file's path,
	// "$NAME" for a variable, or the store's description.
	Source Source
	From   string
}

// String hides the secrets.
func (c Credentials) String() string {
	switch {
	case c.PrivateKeyPEM != nil:
		return fmt.Sprintf("GitHub App %d/%s installation %d (key redacted)", c.AppID, c.ClientID, c.InstallationID)
	case c.Token != "":
		return "token (redacted)"
	}
	return "no credentials"
}

// Source says where GitHub's credentials were read.
type Source string

// The sources of GitHub's credentials, in the order Resolve tries them.
const (
	SourceKeyFile   Source = "private_key_file" // [github] private_key_file (a GitHub App)
	SourceTokenFile Source = "token_file"       // [github] token_file
	SourceEnv       Source = "env"              // the variable [github] token_env names
	SourceStore     Source = "store"            // the OS secret store (auth login)
)

// Stored reads the credentials `runner-manager auth login` keeps in the OS
// secret store: record is nil when none are kept; where says which store
// answered (for messages).
type Stored func() (record []byte, where string, err error)

// Credentials reads the GitHub secrets as g says, without the OS secret
// store (Resolve with none).
func (g GitHub) Credentials(lookupEnv func(string) (string, bool)) (Credentials, error) {
	return g.Resolve(lookupEnv, nil)
}

// Resolve reads the GitHub secrets, the first of these that is there:
//
//  1. a GitHub App in [github] (app_id or client_id, installation_id,
//     private_key_file), else token_file: the operator named them in
//     the configuration;
//  2. the variable token_env names (GITHUB_TOKEN by default), set and not
//     blank: the operator set it for this process;
//  3. what stored reads from the OS secret store (auth login).
//
// An explicit setting thus always wins over the store. It returns an
// error wrapping ErrNoCredentials when none is there.
func (g GitHub) Resolve(lookupEnv func(string) (string, bool), stored Stored) (Credentials, error) {
	if lookupEnv == nil {
		lookupEnv = os.LookupEnv
	}
	if g.UsesApp() {
		key, err := ReadSecretFile(g.PrivateKeyFile)
		if err != nil {
			return Credentials{}, fmt.Errorf("github.private_key_file: %w", err)
		}
		return Credentials{AppID: g.AppID, ClientID: g.ClientID, InstallationID: g.InstallationID, PrivateKeyPEM: key,
			Source: SourceKeyFile, From: g.PrivateKeyFile}, nil
	}
	if g.TokenFile != "" {
		tok, err := ReadSecretFile(g.TokenFile)
		if err != nil {
			return Credentials{}, fmt.Errorf("github.token_file: %w", err)
		}
		t := strings.TrimSpace(string(tok))
		if t == "" {
			return Credentials{}, fmt.Errorf("github.token_file %s is empty: %w", g.TokenFile, ErrNoCredentials)
		}
		return Credentials{Token: t, Source: SourceTokenFile, From: g.TokenFile}, nil
	}
	env := g.TokenEnv
	if env == "" {
		env = DefaultTokenEnv
	}
	if t, ok := lookupEnv(env); ok && strings.TrimSpace(t) != "" {
		return Credentials{Token: strings.TrimSpace(t), Source: SourceEnv, From: "$" + env}, nil
	}
	if stored != nil {
		rec, where, err := stored()
		if err != nil {
			return Credentials{}, fmt.Errorf("the OS secret store: %w", err)
		}
		if rec != nil {
			c, err := ParseStored(rec)
			if err != nil {
				return Credentials{}, fmt.Errorf("the credentials in the %s: %w", where, err)
			}
			c.Source, c.From = SourceStore, where
			return c, nil
		}
	}
	return Credentials{}, fmt.Errorf("%w: run `runner-manager auth login` to keep a token in the OS secret store, or set $%s to a token with the Actions runners permission (administration:write on a repository, or self-hosted runners on an organization), or set token_file or a GitHub App in [github]", ErrNoCredentials, env)
}

// ReadSecretFile reads a file holding a secret, refusing one that its group
// or others may read (on Unix): chmod 600 it. The error never holds the
// content.
func ReadSecretFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret file: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret file: %w", err)
	}
	if runtime.GOOS != "windows" && st.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%s is readable by its group or others (mode %04o): run `chmod 600 %s`", path, st.Mode().Perm(), path)
	}
	if st.Size() > 1<<20 {
		return nil, fmt.Errorf("%s is larger than 1 MiB: it is not a token or a key", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("cannot read the secret file %s: %w", path, err)
	}
	return b, nil
}
