package app

import (
	"context"
	"fmt"
	"strings"

	"github.com/alecthomas/kong"
	"github.com/posener/complete"
	"github.com/willabides/kongplete"

	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
)

// CompletionCmd prints a shell's completion script.
type CompletionCmd struct {
	Shell string `arg:"" enum:"bash,zsh,fish" help:"The shell: bash, zsh or fish."`
}

// Help is the long help of completion.
func (c *CompletionCmd) Help() string {
	return `Prints the script that makes the shell complete runner-manager's commands
and flags: the shell asks this program (with COMP_LINE set) for the words
that fit. Load it from your shell's start-up file:

  bash:  echo 'source <(runner-manager completion bash)' >> ~/.bashrc
  zsh:   echo 'source <(runner-manager completion zsh)' >> ~/.zshrc
  fish:  runner-manager completion fish > ~/.config/fish/completions/runner-manager.fish

The script names this program by its absolute path: print it again after
moving the program.`
}

// Run prints the script.
func (c *CompletionCmd) Run(a *App) error {
	exe, err := osExecutable()
	if err != nil {
		return fmt.Errorf("find this program's path: %w", err)
	}
	script, err := completionScript(c.Shell, "runner-manager", exe)
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(a.Stdout, script)
	return err
}

// completionScript is the completion script of shell for the command name,
// answered by the program at exe.
func completionScript(shell, name, exe string) (string, error) {
	q := shellQuote(exe)
	switch shell {
	case "bash":
		return fmt.Sprintf("# %[1]s completion for bash: source <(%[1]s completion bash)\ncomplete -C %[2]s %[1]s\n", name, q), nil
	case "zsh":
		return fmt.Sprintf("# %[1]s completion for zsh: source <(%[1]s completion zsh)\nautoload -U +X bashcompinit && bashcompinit\ncomplete -C %[2]s %[1]s\n", name, q), nil
	case "fish":
		fn := "__" + strings.ReplaceAll(name, "-", "_") + "_complete"
		return fmt.Sprintf(`# %[1]s completion for fish: %[1]s completion fish > ~/.config/fish/completions/%[1]s.fish
function %[3]s
    set -lx COMP_LINE (commandline -cp)
    test -z (commandline -ct)
    and set COMP_LINE "$COMP_LINE "
    %[2]s
end
complete -f -c %[1]s -a "(%[3]s)"
`, name, q, fn), nil
	}
	return "", invalidArgf("completion: no script for shell %q: bash, zsh or fish", shell)
}

// shellQuote quotes s for bash, zsh and fish alike, when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// completeIfAsked answers a shell's completion request (COMP_LINE set in
// the environment, as the scripts of completion do) with the commands and
// flags of the grammar that fit, and exits; otherwise it does nothing.
func completeIfAsked(parser *kong.Kong, a *App) {
	kongplete.Complete(parser,
		kongplete.WithPredictor("policy", complete.PredictFunc(a.policyNames)),
		kongplete.WithPredictor("attempt", complete.PredictFunc(a.attemptIDs)),
		kongplete.WithErrorHandler(func(err error) {
			fmt.Fprintf(parser.Stderr, "runner-manager: completion: %v\n", err)
		}))
}

// policyNames are the names of the policies in force, for completing a
// policy argument: read from the journal of the data directory the
// environment or the configuration file names (the flags of the line being
// completed are not parsed), opened read-only; none when there is none.
func (a *App) policyNames(complete.Args) []string {
	var names []string
	a.withJournal(func(st *sqlite.Store) error {
		ps, err := st.Policies(context.Background())
		for _, p := range ps {
			names = append(names, p.Name)
		}
		return err
	})
	return names
}

// maxCompletedAttempts bounds the attempt ids offered: the newest, which
// are the ones a person asks about, read in one query.
const maxCompletedAttempts = 200

// attemptIDs are the journal's newest attempts' ids, for completing an
// attempt argument (attempt show, logs), read as policyNames reads.
func (a *App) attemptIDs(complete.Args) []string {
	var ids []string
	a.withJournal(func(st *sqlite.Store) error {
		list, err := st.Attempts(context.Background(), store.AttemptFilter{Limit: maxCompletedAttempts})
		for _, at := range list {
			ids = append(ids, at.ID.String())
		}
		return err
	})
	return ids
}

// withJournal calls f with the data directory's journal opened read-only,
// for completion; it does nothing when there is none, and ignores errors:
// a completion that cannot read prints nothing rather than break the line.
func (a *App) withJournal(f func(*sqlite.Store) error) {
	c, err := a.Config()
	if err != nil {
		return
	}
	st, err := sqlite.Open(datadir.New(c.DataDir).Journal(), sqlite.ReadOnly())
	if err != nil {
		return
	}
	defer st.Close()
	_ = f(st)
}
