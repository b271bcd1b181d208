// Package app is the runner-manager program: the kong grammar of its
// commands, one struct per leaf command with a Run method, and Main. The
// commands stay thin: they parse, call the library (store, reconcile,
// github, platform), and print. frontends/cli's main.go only calls Main.
package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/alecthomas/kong"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/logredact"
	"github.com/runner-manager/runner-manager/simulate"
)

// Exit statuses: 0 success, 1 a failure of no known class, 2 a command
// line the grammar refuses; each failure class (rm.Class) has its own above
// them, listed in docs/cli.md. Scripts may rely on them: a number never
// changes meaning.
const (
	ExitOK               = 0
	ExitFailure          = 1  // a failure of no known class
	ExitUsage            = 2  // the command line: unknown command or flag, missing argument
	ExitInvalid          = 3  // rm.ClassInvalid: a value refused (a flag's, the configuration's)
	ExitNotFound         = 4  // rm.ClassNotFound
	ExitConflict         = 5  // rm.ClassConflict
	ExitNotAuthenticated = 6  // rm.ClassNotAuthenticated: no GitHub credentials
	ExitAuthFailed       = 7  // rm.ClassAuthFailed: GitHub refused the credentials
	ExitRefused          = 8  // rm.ClassRefused: GitHub refused the request
	ExitUnavailable      = 9  // rm.ClassUnavailable: GitHub did not answer, or failed
	ExitRateLimited      = 10 // rm.ClassRateLimited: GitHub's REST budget is spent
	ExitLocalState       = 11 // rm.ClassLocalState: the data directory or the journal
	ExitUnsupportedHost  = 12 // rm.ClassUnsupportedHost
)

// exitCodes maps each failure class to its exit status.
var exitCodes = map[rm.Class]int{
	rm.ClassUnknown:          ExitFailure,
	rm.ClassInvalid:          ExitInvalid,
	rm.ClassNotFound:         ExitNotFound,
	rm.ClassConflict:         ExitConflict,
	rm.ClassNotAuthenticated: ExitNotAuthenticated,
	rm.ClassAuthFailed:       ExitAuthFailed,
	rm.ClassRefused:          ExitRefused,
	rm.ClassUnavailable:      ExitUnavailable,
	rm.ClassRateLimited:      ExitRateLimited,
	rm.ClassLocalState:       ExitLocalState,
	rm.ClassUnsupportedHost:  ExitUnsupportedHost,
}

// Version is the program's version, set at link time with
// -ldflags "-X github.com/runner-manager/runner-manager/frontends/cli/app.Version=v1.2.3";
// when empty it comes from the module's build information.
var Version = ""

// build is the program's build: the module's build information, with
// Version in place of its version when set.
func build() rm.Build {
	b := rm.ReadBuild()
	if Version != "" {
		b.Version = Version
	}
	return b
}

// version is the program's version alone ("v1.2.3", "dev").
func version() string { return build().Version }

// Streams are the program's standard streams.
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Main runs the program with the process's arguments and streams, stopping
// on SIGINT or SIGTERM, and returns its exit status. Started under the name
// Runner.Listener (the demo's runners are hard links to this executable),
// it is the fake runner instead.
func Main() int {
	if code, ok := RunFakeRunnerIfNamed(os.Args); ok {
		return code
	}
	if code, ok := runAsWindowsService(); ok {
		return code
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, os.Args[1:], Streams{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr})
}

// exitPanic carries kong's exit status out of a parse (help, --version).
type exitPanic int

// Run parses args and runs the command, writing to s; it returns the exit
// status: 0 success, 1 runtime failure, 2 usage or configuration error.
func Run(ctx context.Context, args []string, s Streams) (code int) {
	if s.Stdin == nil {
		s.Stdin = strings.NewReader("")
	}
	// Whatever reaches standard error (the logger, notes, kong's messages)
	// has any credential it quotes redacted.
	s.Stderr = logredact.NewWriter(s.Stderr)
	var cli CLI
	a := &App{cli: &cli, args: args, Streams: s}
	defer a.Close()
	parser, err := kong.New(&cli,
		kong.Name("runner-manager"),
		kong.Description("A local-first autoscaler for ephemeral GitHub Actions self-hosted runners: one fresh just-in-time runner per job, as many at once as this machine can hold, and a journal of every runner attempt."),
		kong.Writers(s.Stdout, s.Stderr),
		kong.Exit(func(c int) { panic(exitPanic(c)) }),
		kong.Vars{"version": "runner-manager " + build().String()},
		kong.ConfigureHelp(kong.HelpOptions{Compact: true, WrapUpperBound: 100}),
		kong.ExplicitGroups(commandGroups),
		kong.Bind(a),
		kong.BindTo(ctx, (*context.Context)(nil)),
	)
	if err != nil {
		panic(err) // the grammar is fixed and tested
	}
	defer func() {
		if r := recover(); r != nil {
			c, ok := r.(exitPanic)
			if !ok {
				panic(r)
			}
			code = int(c)
		}
	}()
	completeIfAsked(parser, a)
	kctx, err := parser.Parse(joinNegativeValues(args))
	if err != nil {
		printError(s.Stderr, err)
		path := "runner-manager"
		var pe *kong.ParseError
		if errors.As(err, &pe) && pe.Context != nil {
			path = commandPath(pe.Context)
		}
		fmt.Fprintf(s.Stderr, "try: %s --help\n", path)
		return exitStatus(err)
	}
	if err := kctx.Run(); err != nil {
		printError(s.Stderr, err)
		fmt.Fprintf(s.Stderr, "try: %s\n", a.nextStep(err, commandPath(kctx)))
		return exitStatus(err)
	}
	return ExitOK
}

// printError prints err as the program's last word, any credential in it
// (an argument given by mistake, a server's echo) redacted.
func printError(w io.Writer, err error) {
	fmt.Fprintf(w, "runner-manager: %s\n", logredact.String(err.Error()))
}

// valueFlags are the flags whose values may start with "-" (a negative
// number, given by mistake): kong would take "-1" for a short flag and
// garble the message. Their short forms map to the long ones.
var valueFlags = map[string]string{
	"--max": "--max", "--min-idle": "--min-idle", "--memory-estimate": "--memory-estimate",
	"--limit": "--limit", "--lines": "--lines", "-n": "--lines",
	"--spare": "--spare", "--since": "--since", "--cpus": "--cpus",
	"--jobs": "--jobs", "--policies": "--policies", "--compare-jobs": "--compare-jobs",
}

// joinNegativeValues rewrites "--max -1", "-n -3" and "-n=-3" as
// "--max=-1" and "--lines=-3", so the value reaches the command's checks,
// which say what is wrong with it.
func joinNegativeValues(args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(out, args[i:]...)
		}
		name, value, hasValue := strings.Cut(arg, "=")
		long, ok := valueFlags[name]
		switch {
		case ok && hasValue:
			out = append(out, long+"="+value)
		case ok && i+1 < len(args) && looksNegative(args[i+1]):
			out = append(out, long+"="+args[i+1])
			i++
		default:
			out = append(out, arg)
		}
	}
	return out
}

func looksNegative(s string) bool {
	return len(s) > 1 && s[0] == '-' && (s[1] >= '0' && s[1] <= '9' || s[1] == '.')
}

func commandPath(k *kong.Context) string {
	var names []string
	for n := k.Selected(); n != nil && n.Type != kong.ApplicationNode; n = n.Parent {
		names = append([]string{n.Name}, names...)
	}
	return strings.Join(append([]string{"runner-manager"}, names...), " ")
}

// exitStatus is err's class's status; 2 for the grammar's errors of no
// class.
func exitStatus(err error) int {
	class := rm.ClassOf(err)
	var pe *kong.ParseError
	if class == rm.ClassUnknown && (errors.As(err, &pe) || errors.Is(err, errUsage)) {
		return ExitUsage
	}
	return exitCodes[class]
}

// errUsage marks errors of the command line found by a command (flags that
// do not go together).
var errUsage = errors.New("usage")

// usagef is an error of the command line a command finds: flags that do
// not go together, an argument missing (exit status 2).
func usagef(format string, args ...any) error {
	return fmt.Errorf("%s%w", fmt.Sprintf(format, args...), silentErr{errUsage})
}

// invalidArgf is a value of the command line a command refuses: an
// rm.ErrInvalid, without its prefix in the message.
func invalidArgf(format string, args ...any) error {
	return fmt.Errorf("%s%w", fmt.Sprintf(format, args...), silentErr{rm.ErrInvalid})
}

// errLocalState marks a data directory or journal that cannot be used as
// it is.
var errLocalState = rm.NewError(rm.ClassLocalState, "local state")

// silentErr wraps an error without printing it.
type silentErr struct{ error }

func (silentErr) Error() string     { return "" }
func (e silentErr) Unwrap() error   { return e.error }
func (e silentErr) Is(t error) bool { return t == e.error }

// RunFakeRunnerIfNamed runs the demo's fake runner when args[0] names the
// runner's listener (the demo hard-links this program as
// bin/Runner.Listener), returning its exit status and true.
func RunFakeRunnerIfNamed(args []string) (int, bool) { return simulate.RunFakeRunnerIfNamed(args) }
