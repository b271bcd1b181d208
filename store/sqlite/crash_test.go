package sqlite_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// The child side of TestJournalSurvivesKill: set, the test binary writes
// to the journal named here until it is killed.
const crashChildEnv = "RUNNER_MANAGER_STORE_CRASH_CHILD"

// TestJournalSurvivesKill writes to the journal in a child process, kills
// it (SIGKILL on Unix) mid-write, reopens the journal and checks that
// everything the child reported committed is there and the file is
// consistent; three times over the same file.
func TestJournalSurvivesKill(t *testing.T) {
	if spec := os.Getenv(crashChildEnv); spec != "" {
		crashChild(spec)
		return
	}
	if testing.Short() {
		t.Skip("starts child processes")
	}
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(path)
	require.NoError(t, err)
	p := storetest.NewPolicy().Build()
	require.NoError(t, s.InsertPolicy(ctx, p))
	require.NoError(t, s.Close())

	const rounds = 3
	committed := map[rm.AttemptID]rm.AttemptState{} // the latest state reported per attempt
	for round := range rounds {
		lines := runAndKill(t, path+" "+p.ID.String(), 300+round*150)
		for _, l := range lines {
			idText, state, ok := strings.Cut(l, " ")
			require.True(t, ok, "line %q", l)
			id, err := rm.ParseAttemptID(idText)
			require.NoError(t, err)
			committed[id] = rm.AttemptState(state)
		}
		t.Logf("round %d: %d commits reported before the kill", round, len(lines))

		s, err := sqlite.Open(path)
		require.NoError(t, err, "reopen after the kill")
		require.NoError(t, s.IntegrityCheck(ctx))
		var fkProblems int
		require.NoError(t, sqlite.WriterDB(s).QueryRow(`SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fkProblems))
		assert.Zero(t, fkProblems)

		for id, reported := range committed {
			a, err := s.Attempt(ctx, id)
			require.NoError(t, err, "attempt %s was reported committed", id)
			// The child may have committed one more step before it died.
			assert.GreaterOrEqual(t, lifeRank(a.State), lifeRank(reported), "attempt %s", id)
			require.NoError(t, a.Validate())
		}
		all, err := s.Attempts(ctx, store.AttemptFilter{Policy: p.ID})
		require.NoError(t, err)
		unreported := 0
		for _, a := range all {
			if _, ok := committed[a.ID]; !ok {
				unreported++
			}
		}
		assert.LessOrEqual(t, unreported, round+1, "at most one attempt per kill was inserted and not reported")
		require.NoError(t, s.Close())
	}
}

// lifeRank orders states along an attempt's life (both ends last).
func lifeRank(s rm.AttemptState) int {
	switch s {
	case rm.StatePending:
		return 0
	case rm.StateRegistering:
		return 1
	case rm.StateStarting:
		return 2
	case rm.StateFinished, rm.StateFailed:
		return 3
	}
	return -1
}

// runAndKill starts the child on spec, kills it once it has reported at
// least n commits, and returns every complete line it wrote.
func runAndKill(t *testing.T, spec string, n int) []string {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestJournalSurvivesKill$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+spec)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())

	var lines []string
	r := bufio.NewReader(out)
	killed := false
	deadline := time.AfterFunc(30*time.Second, func() { _ = cmd.Process.Kill() })
	defer deadline.Stop()
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			// EOF: the child is dead. A line without its newline was cut by
			// the kill and proves nothing.
			require.ErrorIs(t, err, io.EOF)
			break
		}
		lines = append(lines, strings.TrimSuffix(l, "\n"))
		if !killed && len(lines) >= n {
			require.NoError(t, cmd.Process.Kill())
			killed = true
		}
	}
	err = cmd.Wait()
	require.True(t, killed, "the child stopped by itself after %d lines: %v\n%s", len(lines), err, stderr.String())
	require.Error(t, err, "the child was killed")
	return lines
}

// crashChild records attempts in a tight loop, each through a few states,
// printing "ID STATE" after each commit. It stops by itself after a while
// in case its parent died.
func crashChild(spec string) {
	path, policyText, _ := strings.Cut(spec, " ")
	pid, err := rm.ParsePolicyID(policyText)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	s, err := sqlite.Open(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx := context.Background()
	// Big rows make the WAL grow past its checkpoint threshold, so some
	// kills land in a checkpoint.
	note := strings.Repeat("x", 3000)
	record := func(a rm.Attempt) {
		if err := s.RecordAttempt(ctx, a); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		fmt.Printf("%s %s\n", a.ID, a.State) // one write(2) per line
	}
	stop := time.Now().Add(20 * time.Second)
	for i := 0; time.Now().Before(stop); i++ {
		a := storetest.NewAttempt().Policy(pid).LastMessage(note).Build()
		record(a)
		now := time.Now()
		a, _ = a.MoveTo(rm.StateRegistering, now)
		record(a)
		if i%2 == 0 {
			a, _ = a.MoveTo(rm.StateStarting, now)
			record(a)
			a, _ = a.Conclude(rm.Outcome{Kind: rm.ExitedIdleWithoutWork}, now)
		} else {
			a, _ = a.Conclude(rm.FailedWith(rm.RegistrationFailed, "401"), now)
		}
		record(a)
	}
	os.Exit(3)
}
