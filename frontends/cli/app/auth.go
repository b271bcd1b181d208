package app

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"

	"golang.org/x/term"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/credstore"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/logredact"
)

// AuthCmd groups the commands of GitHub's credentials in the OS secret
// store.
type AuthCmd struct {
	Login  AuthLoginCmd  `cmd:"" help:"Keep a GitHub token, or a GitHub App's key, in the OS secret store."`
	Status AuthStatusCmd `cmd:"" help:"Say which GitHub credentials are in force and whether GitHub accepts them."`
	Logout AuthLogoutCmd `cmd:"" help:"Remove GitHub's credentials from the OS secret store."`
}

// Help is the long help of auth.
func (c *AuthCmd) Help() string {
	return `GitHub's credentials are read from the first of: a GitHub App or token_file
in [github]; the variable token_env names (GITHUB_TOKEN by default); the OS
secret store, where "auth login" keeps them. An explicit setting wins.

The OS secret store is, on Linux, a file only its owner reads
(<data>/credentials/github, mode 0600, its directory 0700) that a systemd
service receives with LoadCredential=; on macOS, the keychain; on Windows, a
file encrypted with DPAPI for the account that stored it.`
}

// AuthLoginCmd keeps credentials in the OS secret store.
type AuthLoginCmd struct {
	AppID          int64  `help:"A GitHub App's id (with --installation-id and --private-key-file): keep the App's key instead of a token." placeholder:"ID"`
	ClientID       string `help:"A GitHub App's client id, instead of --app-id." placeholder:"ID"`
	InstallationID int64  `help:"The App's installation id on the account whose runners it manages." placeholder:"ID"`
	PrivateKeyFile string `help:"The App's private key (.pem, mode 0600); once kept, the file may be deleted." placeholder:"FILE" type:"path"`
	NoCheck        bool   `help:"Keep the credentials without asking GitHub whether it accepts them."`
}

// Help is the long help of auth login.
func (c *AuthLoginCmd) Help() string {
	return `A token is read from a prompt that does not echo it when standard input is a
terminal, else from standard input (printf %s "$TOKEN" | runner-manager auth
login): never from an argument, which every user of the machine can read.

GitHub is asked first whether it accepts the credentials (one request that
costs no REST budget): refused credentials are not kept; when GitHub cannot
be reached they are kept and the command says so.`
}

// Run reads the credentials, checks them with GitHub and keeps them.
func (c *AuthLoginCmd) Run(ctx context.Context, a *App) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	creds, err := c.read(a)
	if err != nil {
		return err
	}
	if _, err := creds.MarshalStored(); err != nil {
		return fmt.Errorf("%w: %v", rm.ErrInvalid, err)
	}
	out := logredact.NewWriter(a.Stdout)
	unchecked := ""
	if !c.NoCheck {
		ok, unreachable, err := a.checkCredentials(ctx, cfg, creds)
		if err != nil {
			return err
		}
		switch {
		case unreachable != nil:
			unchecked = unreachable.What
		case !ok.OK:
			return fmt.Errorf("%w: GitHub refuses %s (%s): nothing was kept", rm.ErrUnauthorized, creds.Fingerprint(), strings.TrimSpace(ok.What+"; "+ok.Fix))
		default:
			fmt.Fprintf(out, "%s\n", ok)
		}
	}
	s, err := daemon.KeepCredentials(cfg, creds)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "Kept %s in the %s.\n", creds.Fingerprint(), s)
	if unchecked != "" {
		fmt.Fprintf(out, "Not checked: could not %s; run `runner-manager auth status` once it answers.\n", unchecked)
	}
	if r := daemon.ReportCredentials(cfg); r.Err == nil && r.InForce.Source != configfile.SourceStore {
		fmt.Fprintf(out, "They are not in force: %s wins (an explicit setting); remove it to use the store.\n", sourceText(r.InForce))
	}
	if f, ok := s.(credstore.File); ok && runtime.GOOS == "linux" {
		fmt.Fprintf(out, "A systemd service reads %s with LoadCredential=: run `runner-manager service install` (again) to add it to the unit.\n", f.Path(credstore.GitHub))
	}
	return nil
}

// read builds the credentials from the flags and standard input.
func (c *AuthLoginCmd) read(a *App) (configfile.Credentials, error) {
	app := c.AppID != 0 || c.ClientID != "" || c.InstallationID != 0 || c.PrivateKeyFile != ""
	if !app {
		tok, err := readToken(a.Stdin, a.Stderr)
		if err != nil {
			return configfile.Credentials{}, err
		}
		return configfile.Credentials{Token: tok}, nil
	}
	var missing []string
	if c.AppID == 0 && c.ClientID == "" {
		missing = append(missing, "--app-id (or --client-id)")
	}
	if c.InstallationID == 0 {
		missing = append(missing, "--installation-id")
	}
	if c.PrivateKeyFile == "" {
		missing = append(missing, "--private-key-file")
	}
	switch {
	case len(missing) > 0:
		return configfile.Credentials{}, usagef("a GitHub App also needs %s", strings.Join(missing, " and "))
	case c.AppID < 0 || c.InstallationID < 0:
		return configfile.Credentials{}, usagef("--app-id and --installation-id are positive numbers (the App's settings page and its installation's URL show them)")
	}
	key, err := configfile.ReadSecretFile(c.PrivateKeyFile)
	if err != nil {
		return configfile.Credentials{}, fmt.Errorf("%w: --private-key-file: %v", rm.ErrInvalid, err)
	}
	return configfile.Credentials{AppID: c.AppID, ClientID: c.ClientID, InstallationID: c.InstallationID, PrivateKeyPEM: key}, nil
}

// readToken reads a token from a prompt that does not echo when in is a
// terminal, else the whole of in (at most 64 KiB), trimmed.
func readToken(in io.Reader, prompt io.Writer) (string, error) {
	if f, ok := in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(prompt, "GitHub token (input hidden): ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(prompt)
		if err != nil {
			return "", fmt.Errorf("read the token: %w", err)
		}
		return checkedToken(string(b))
	}
	b, err := io.ReadAll(io.LimitReader(bufio.NewReader(in), 64<<10))
	if err != nil {
		return "", fmt.Errorf("read the token from standard input: %w", err)
	}
	return checkedToken(string(b))
}

func checkedToken(s string) (string, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return "", usagef("no token on standard input: pipe it in (printf %%s \"$TOKEN\" | runner-manager auth login), or run the command in a terminal to be asked for it")
	}
	if err := configfile.CheckToken(t); err != nil {
		return "", fmt.Errorf("%w: %v", rm.ErrInvalid, err)
	}
	return t, nil
}

// checkCredentials asks GitHub whether it accepts creds (checkGitHub's
// first line): unreachable is set when GitHub did not answer.
func (a *App) checkCredentials(ctx context.Context, cfg *configfile.File, creds configfile.Credentials) (first check, unreachable *check, err error) {
	client, err := daemon.NewGitHubClientWith(cfg, creds, userAgent(), a.Logger(), true)
	if err != nil {
		return check{}, nil, err
	}
	checks := checkGitHub(ctx, client, nil)
	if len(checks) == 0 {
		return check{}, nil, errors.New("GitHub's check said nothing")
	}
	first = checks[0]
	if first.Unreachable {
		return first, &first, nil
	}
	return first, nil, nil
}

// sourceText says where credentials were read, for a person.
func sourceText(c configfile.Credentials) string {
	switch c.Source {
	case configfile.SourceKeyFile:
		return "[github] private_key_file " + c.From
	case configfile.SourceTokenFile:
		return "[github] token_file " + c.From
	case configfile.SourceEnv:
		return c.From + " ([github] token_env)"
	case configfile.SourceStore:
		return "the " + c.From
	}
	return "nowhere"
}

// AuthStatusCmd says which credentials are in force.
type AuthStatusCmd struct {
	NoCheck bool `help:"Do not contact GitHub."`
}

// Run prints the source in force, what the store keeps beside it, and
// GitHub's word on the credentials.
func (c *AuthStatusCmd) Run(ctx context.Context, a *App) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	out := logredact.NewWriter(a.Stdout)
	r := daemon.ReportCredentials(cfg)
	if r.Err != nil {
		fmt.Fprintf(out, "GitHub credentials: none in force\n")
		if r.Stored != "" {
			fmt.Fprintf(out, "  %s\n", r.Stored)
		}
		return r.Err
	}
	fmt.Fprintf(out, "GitHub credentials: %s\n  from %s\n", r.InForce.Fingerprint(), sourceText(r.InForce))
	if r.Stored != "" {
		fmt.Fprintf(out, "  unused: %s\n", r.Stored)
	}
	if c.NoCheck {
		return nil
	}
	first, unreachable, err := a.checkCredentials(ctx, cfg, r.InForce)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "%s\n", first)
	switch {
	case unreachable != nil:
		return fmt.Errorf("could not %s: the credentials were not checked; check [github] url / api_url and the network, then run `runner-manager auth status` again", unreachable.What)
	case !first.OK:
		return fmt.Errorf("%w: %s", rm.ErrUnauthorized, strings.TrimSpace(first.What+"; "+first.Fix))
	}
	return nil
}

// AuthLogoutCmd removes the credentials from the OS secret store.
type AuthLogoutCmd struct{}

// Run removes them and says what is in force afterwards.
func (c *AuthLogoutCmd) Run(ctx context.Context, a *App) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	s, err := daemon.ForgetCredentials(cfg)
	if errors.Is(err, credstore.ErrNotFound) {
		return fmt.Errorf("the %s keeps no GitHub credentials: nothing to remove", s)
	}
	if err != nil {
		return err
	}
	a.printf("Removed GitHub's credentials from the %s.\n", s)
	if r := daemon.ReportCredentials(cfg); r.Err == nil {
		a.printf("Still in force: %s from %s.\n", r.InForce.Fingerprint(), sourceText(r.InForce))
	}
	if runtime.GOOS == "linux" {
		a.printf("A service whose unit loads them (LoadCredential=) will not start until the unit is written again: runner-manager service install\n")
	}
	return nil
}
