package chaos_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/chaos"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

func TestFindCredentials(t *testing.T) {
	const (
		pat   = "ghp_chaos0123456789abcdefABCDEF"
		queue = "mq_00112233445566778899aabbccddeeff0011"
		short = "s3cr3t-9"
		jwtA  = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJhIjoxfQ.c2ln"
		jwtB  = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJiIjoyfQ.c2ln"
	)
	ledger := []fakegithub.Credential{
		{Kind: fakegithub.CredPAT, Value: pat}, {Kind: fakegithub.CredQueueToken, Value: queue},
		{Kind: "short", Value: short}, {Kind: fakegithub.CredAdminToken, Value: jwtA}, {Kind: fakegithub.CredAdminToken, Value: jwtB},
	}
	home := t.TempDir()
	write := func(rel, body string) {
		p := filepath.Join(home, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o700))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	}
	write("daemon.log", "level=INFO msg=ok\nlevel=WARN token="+pat+"\n")
	write("data/journal.db-wal", "\x00\x01binary"+queue[:16]+"\xff")    // a 16-character prefix counts
	write("data/attempts/01A/runner.log", "almost "+queue[:15]+" only") // 15 do not
	write("data/state/x", "keys "+short+" and "+jwtB)                   // a short one whole; a JWT header once
	write("data/clean", strings.Repeat("ghp_chao eyJhbGci mq_00 ", 1000))
	outside := filepath.Join(t.TempDir(), "outside")
	require.NoError(t, os.WriteFile(outside, []byte(pat), 0o600))
	require.NoError(t, os.Symlink(outside, filepath.Join(home, "data", "link"))) // not followed

	write("data/redacted.log", "msg=\"sent [redacted]\"")
	leaks, searched, err := chaos.FindCredentials(ledger, []chaos.Text{{Name: "cli output", Data: []byte("created " + jwtA)}}, home, home)
	require.NoError(t, err)
	assert.Equal(t, 4, searched.Credentials, "five credentials, jwtA and jwtB sharing their first 16 characters")
	assert.Equal(t, 1, searched.Texts)
	assert.Equal(t, 6, searched.Files, "the symlink is not a file searched")
	assert.Equal(t, 1, searched.Redacted)
	var got []string
	for _, l := range leaks {
		got = append(got, l.String())
		assert.NotContains(t, l.String(), pat[:5]+pat[5:16], "a leak is named by its first four characters")
	}
	assert.ElementsMatch(t, []string{
		"cli output at byte 8: admin token eyJh…",
		"daemon.log at byte 35: personal access token ghp_…",
		"data/journal.db-wal at byte 8: queue token mq_0…",
		"data/state/x at byte 5: short s3cr…",
		"data/state/x at byte 18: admin token eyJh…",
	}, got)

	t.Run("Nothing", func(t *testing.T) {
		leaks, searched, err := chaos.FindCredentials(nil, []chaos.Text{{Name: "x", Data: []byte(pat)}}, home, home, filepath.Join(home, "gone"))
		require.NoError(t, err)
		assert.Empty(t, leaks)
		assert.Zero(t, searched.Credentials)
	})
}
