package app

import (
	"errors"
	"path/filepath"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// tryError names the command that fixes err, where the command that
// failed knows better than its class (nextStep).
type tryError struct {
	error
	next string // a command line after "runner-manager ", e.g. "init"
}

func (e *tryError) Unwrap() error { return e.error }

// withTry returns err with the command that fixes it: args after
// "runner-manager" (the global --config and --data-dir given are added).
func withTry(err error, args string) error {
	if err == nil {
		return nil
	}
	return &tryError{error: err, next: args}
}

// nextStep is the command line printed after "try: " as the last line of
// a failure of the command at path ("runner-manager policy add"): the one
// the failing code named (withTry), else the one that fixes, or at least
// diagnoses, failures of err's class. It repeats the global --config and
// --data-dir given, so it acts on the same journal.
func (a *App) nextStep(err error, path string) string {
	var te *tryError
	if errors.As(err, &te) {
		return "runner-manager " + a.globalFlags() + te.next
	}
	cmd := strings.TrimPrefix(path, "runner-manager")
	cmd = strings.TrimSpace(cmd)
	switch rm.ClassOf(err) {
	case rm.ClassInvalid:
		return path + " --help"
	case rm.ClassNotFound:
		switch {
		case errors.Is(err, rm.ErrNotFound): // at GitHub
			return a.cmdLine("doctor")
		case strings.HasPrefix(cmd, "logs"), strings.HasPrefix(cmd, "attempt") && !strings.Contains(err.Error(), "policy"):
			return a.cmdLine("attempts")
		}
		return a.cmdLine("policy list")
	case rm.ClassNotAuthenticated:
		return a.cmdLine("init --force --token-env " + a.tokenEnv())
	case rm.ClassConflict, rm.ClassRateLimited:
		return a.cmdLine("status")
	}
	if errors.Is(err, errUsage) {
		return path + " --help"
	}
	return a.cmdLine("doctor")
}

// cmdLine is "runner-manager" with the global flags given and args.
func (a *App) cmdLine(args string) string {
	return "runner-manager " + a.globalFlags() + args
}

// globalFlags are the --config and --data-dir given on the command line,
// each followed by a space; "" when neither was.
func (a *App) globalFlags() string {
	out := a.givenConfig()
	if a.cli.DataDir != "" && a.flagGiven("--data-dir") {
		dir, err := filepath.Abs(a.cli.DataDir)
		if err != nil {
			dir = a.cli.DataDir
		}
		out += "--data-dir " + shellQuote(dir) + " "
	}
	return out
}

// tokenEnv is the variable the configuration reads the token from.
func (a *App) tokenEnv() string {
	if c, err := a.Config(); err == nil && c.GitHub.TokenEnv != "" {
		return c.GitHub.TokenEnv
	}
	return "GITHUB_TOKEN"
}
