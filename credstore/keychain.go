package credstore

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"
)

// Keychain keeps secrets in the macOS keychain as generic passwords of
// service Service and account "<name>.<Account>", through security(1).
//
// The secret never travels in security's arguments, which every user of
// the machine can read (ps): Set runs `security -i` and writes the
// add-generic-password command on its standard input; Get reads the
// password from security's standard output. The password is the secret in
// base64 behind a prefix, so that the command line holds no quote, space
// or newline and a PEM key comes back as it went in (security prints a
// password holding a newline in hex).
type Keychain struct {
	// Service is the keychain item's service ("runner-manager").
	Service string
	// Account tells apart the items of two data directories on one Mac.
	Account string
	// Run runs security with args and stdin and returns its standard
	// output, standard error and exit code (err only when it could not
	// run). Nil runs /usr/bin/security; tests fake it.
	Run func(ctx context.Context, args []string, stdin []byte) (stdout, stderr []byte, code int, err error)
}

var _ Store = Keychain{}

// securityPath is Apple's security(1).
const securityPath = "/usr/bin/security"

// keychainPrefix marks a password this package encoded.
const keychainPrefix = "rm-base64:"

// keychainNotFound is security's exit code for an item not found
// (errSecItemNotFound, -25300, as security(1) reports it).
const keychainNotFound = 44

// maxKeychainLine is the longest command `security -i` reads.
const maxKeychainLine = 4096

// String says where the secrets are.
func (k Keychain) String() string { return "macOS keychain, service " + k.Service }

func (k Keychain) account(name string) string {
	if k.Account == "" {
		return name
	}
	return name + "." + k.Account
}

func (k Keychain) run(args []string, stdin []byte) (stdout, stderr []byte, code int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if k.Run != nil {
		return k.Run(ctx, args, stdin)
	}
	cmd := exec.CommandContext(ctx, securityPath, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.Bytes(), errb.Bytes(), exit.ExitCode(), nil
	}
	return out.Bytes(), errb.Bytes(), 0, err
}

func (k Keychain) check() error {
	if strings.ContainsAny(k.Service+k.Account, " \t\n\"'\\") || k.Service == "" {
		return fmt.Errorf("keychain service %q and account %q must be set and hold no space or quote", k.Service, k.Account)
	}
	return nil
}

// Get reads the secret's password from the keychain.
func (k Keychain) Get(name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	if err := k.check(); err != nil {
		return nil, err
	}
	stdout, stderr, code, err := k.run([]string{"find-generic-password", "-s", k.Service, "-a", k.account(name), "-w"}, nil)
	if err != nil {
		return nil, fmt.Errorf("run security: %w", err)
	}
	if notFound(code, stderr) {
		return nil, fmt.Errorf("keychain item %s/%s: %w", k.Service, k.account(name), ErrNotFound)
	}
	if code != 0 {
		return nil, keychainErr("find-generic-password", code, stderr)
	}
	pw := strings.TrimRight(string(stdout), "\r\n")
	enc, ok := strings.CutPrefix(pw, keychainPrefix)
	if !ok {
		return nil, fmt.Errorf("keychain item %s/%s was not written by runner-manager: remove it (security delete-generic-password -s %s -a %s) and store the secret again",
			k.Service, k.account(name), k.Service, k.account(name))
	}
	b, err := base64.StdEncoding.DecodeString(enc)
	if err != nil {
		return nil, fmt.Errorf("keychain item %s/%s is damaged (not base64): store the secret again", k.Service, k.account(name))
	}
	return b, nil
}

// Set stores the secret, replacing an item of the same service and
// account (-U), then reads it back: `security -i` does not always exit
// non-zero when one of its commands fails.
func (k Keychain) Set(name string, secret []byte) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := k.check(); err != nil {
		return err
	}
	if err := checkSecret(secret); err != nil {
		return err
	}
	enc := keychainPrefix + base64.StdEncoding.EncodeToString(secret)
	line := fmt.Sprintf("add-generic-password -U -s %s -a %s -w %s\n", k.Service, k.account(name), enc)
	if len(line) > maxKeychainLine {
		return fmt.Errorf("the secret is too large for the keychain (%d bytes)", len(secret))
	}
	_, stderr, code, err := k.run([]string{"-i"}, []byte(line))
	if err != nil {
		return fmt.Errorf("run security: %w", err)
	}
	if code != 0 {
		// Interactive mode may echo its command: keep the secret out.
		return keychainErr("add-generic-password", code, bytes.ReplaceAll(stderr, []byte(enc), []byte("[REDACTED]")))
	}
	got, err := k.Get(name)
	if err != nil {
		return fmt.Errorf("read the secret back from the keychain: %w", err)
	}
	if !bytes.Equal(got, secret) {
		return errors.New("the keychain did not keep the secret (read back, it differs): see `security find-generic-password -s " + k.Service + "`")
	}
	return nil
}

// Delete removes the secret's keychain item.
func (k Keychain) Delete(name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	if err := k.check(); err != nil {
		return err
	}
	_, stderr, code, err := k.run([]string{"delete-generic-password", "-s", k.Service, "-a", k.account(name)}, nil)
	if err != nil {
		return fmt.Errorf("run security: %w", err)
	}
	if notFound(code, stderr) {
		return fmt.Errorf("keychain item %s/%s: %w", k.Service, k.account(name), ErrNotFound)
	}
	if code != 0 {
		return keychainErr("delete-generic-password", code, stderr)
	}
	return nil
}

// notFound reports security's answer for an item that is not there.
func notFound(code int, stderr []byte) bool {
	return code == keychainNotFound || code != 0 && bytes.Contains(stderr, []byte("could not be found"))
}

// keychainErr is security's failure: its message (which never holds the
// password: it travelled on stdin and find prints it on stdout only).
func keychainErr(op string, code int, stderr []byte) error {
	msg := strings.TrimSpace(string(stderr))
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return fmt.Errorf("security %s exited %d: %s", op, code, msg)
}
