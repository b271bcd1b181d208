package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/logredact"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// keepCLIOutput keeps a CLI call's output for the credential search.
func (w *World) keepCLIOutput(args []string, stdout, stderr *bytes.Buffer) {
	w.mu.Lock()
	defer w.mu.Unlock()
	name := "runner-manager " + strings.Join(args, " ")
	w.cliOut = append(w.cliOut, Text{Name: name + " (stdout)", Data: bytes.Clone(stdout.Bytes())},
		Text{Name: name + " (stderr)", Data: bytes.Clone(stderr.Bytes())})
}

// look runs the commands a user looks with once the daemon stopped, so
// their output is searched for credentials too; a command that fails is
// noted (its output is kept all the same).
func (w *World) look(r *Result) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, args := range [][]string{{"status"}, {"attempts", "--limit", "0"}} {
		if _, err := w.CLI(ctx, args...); err != nil {
			r.note("runner-manager %s: %v", strings.Join(args, " "), firstLine(err.Error()))
		}
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// credentialLeaks searches the daemon's log, the CLI's output and every
// file of the world's home (its configuration, the data directory with
// the journal and its WAL, attempt roots and logs, state) for the fake's
// credentials.
func (w *World) credentialLeaks() ([]Leak, Searched, error) {
	w.mu.Lock()
	texts := slices.Clone(w.cliOut)
	w.mu.Unlock()
	return FindCredentials(w.Fake.CredentialLedger(), texts, w.Home, w.Home)
}

// spareCredentials is the credential search's control: the roots of the
// warm spares the daemon keeps listening hold their runners' own
// credentials (the JIT configuration's files), which the search must see.
// It searches <data>/attempts for up to 5 s, until it finds some (a spare
// launched a moment ago may not have written them yet).
func (w *World) spareCredentials(ctx context.Context) (int, error) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		leaks, _, err := FindCredentials(w.Fake.CredentialLedger(), nil, w.DataDir, datadir.New(w.DataDir).Attempts())
		if err != nil || len(leaks) > 0 || time.Now().After(deadline) {
			return len(leaks), err
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// prefixLen is how much of a credential counts as found: its first 16
// characters (all of a shorter one), so a truncated or wrapped copy is
// caught too.
const prefixLen = 16

// Leak is one place a credential of the fake's ledger was found. It names
// the credential by kind and first four characters, never in full.
type Leak struct {
	Kind   string `json:"kind"`
	Head   string `json:"head"`
	Where  string `json:"where"`
	Offset int    `json:"offset"`
}

func (l Leak) String() string {
	return fmt.Sprintf("%s at byte %d: %s %s…", l.Where, l.Offset, l.Kind, l.Head)
}

// Searched is what a credential search looked through, so a search that
// found nothing can be told from one that looked at nothing.
type Searched struct {
	Credentials int   // distinct credentials (their 16-character prefixes)
	Texts       int   // captured outputs
	Files       int   // regular files
	Bytes       int64 // of both
	// Redacted counts the redactor's marks found: places where the program
	// was about to write a credential and its last line caught it.
	Redacted int
}

// Text is captured output to search, by a name for the report.
type Text struct {
	Name string
	Data []byte
}

// FindCredentials searches texts and every regular file under roots (a
// file or a directory, walked without following symbolic links) for each
// credential of ledger: its first 16 characters anywhere. Each place is
// reported once, by the earliest credential of the ledger it matches (the
// first 16 characters of two JWTs with one header are the same: the place
// is one leak). Names of files are relative to base when under it.
func FindCredentials(ledger []fakegithub.Credential, texts []Text, base string, roots ...string) ([]Leak, Searched, error) {
	m := newMatcher(ledger)
	sr := Searched{Credentials: len(m.needles)}
	var leaks []Leak
	search := func(name string, b []byte) {
		leaks = append(leaks, m.find(name, b)...)
		sr.Bytes += int64(len(b))
		sr.Redacted += bytes.Count(b, []byte(logredact.Marker))
	}
	for _, t := range texts {
		search(t.Name, t.Data)
		sr.Texts++
	}
	for _, root := range roots {
		err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) {
					return nil // removed while walked: nothing to hold
				}
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			if err != nil {
				return err
			}
			name := path
			if rel, err := filepath.Rel(base, path); err == nil && filepath.IsLocal(rel) {
				name = rel
			}
			search(name, b)
			sr.Files++
			return nil
		})
		if err != nil {
			return leaks, sr, fmt.Errorf("search %s for credentials: %w", root, err)
		}
	}
	return leaks, sr, nil
}

// matcher finds any of many fixed needles in one pass per needle length:
// each position's first two bytes are tested against a table before the
// window is looked up.
type matcher struct {
	lens    []int                            // the needle lengths, ascending
	needles map[string]fakegithub.Credential // needle: its first credential
	first2  [1 << 16]bool
	min     int
}

func newMatcher(ledger []fakegithub.Credential) *matcher {
	m := &matcher{needles: map[string]fakegithub.Credential{}}
	for _, c := range ledger {
		n := c.Value[:min(len(c.Value), prefixLen)]
		if len(n) < 2 {
			continue // one character is no credential
		}
		if _, ok := m.needles[n]; ok {
			continue
		}
		m.needles[n] = c
		m.first2[int(n[0])<<8|int(n[1])] = true
		if !slices.Contains(m.lens, len(n)) {
			m.lens = append(m.lens, len(n))
		}
	}
	sort.Ints(m.lens)
	return m
}

func (m *matcher) find(where string, b []byte) []Leak {
	var leaks []Leak
	if len(m.lens) == 0 {
		return nil
	}
	for i := 0; i+m.lens[0] <= len(b); i++ {
		if !m.first2[int(b[i])<<8|int(b[i+1])] {
			continue
		}
		for _, n := range m.lens {
			if i+n > len(b) {
				break
			}
			if c, ok := m.needles[string(b[i:i+n])]; ok {
				leaks = append(leaks, Leak{Kind: c.Kind, Head: c.Value[:min(4, len(c.Value))], Where: where, Offset: i})
				i += n - 1 // one leak per place
				break
			}
		}
	}
	return leaks
}
