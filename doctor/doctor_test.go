package doctor_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite"
	"github.com/runner-manager/runner-manager/store/storetest"
)

const token = "ghp_doctor_test"

// host is a data directory with a journal, this host and one policy of it
// whose runner directory holds a listener, served by a fake GitHub.
type host struct {
	dir    string
	st     *sqlite.Store
	host   rm.Host
	policy rm.Policy
	srv    *fakegithub.Server
}

func newHost(t *testing.T) host {
	t.Helper()
	h := host{dir: t.TempDir()}
	require.NoError(t, os.Chmod(h.dir, 0o700))
	var err error
	h.st, err = sqlite.Open(filepath.Join(h.dir, "journal.db"))
	require.NoError(t, err)
	t.Cleanup(func() { h.st.Close() })
	h.host = storetest.NewHost().Name("box").Build()
	require.NoError(t, h.st.PutHost(t.Context(), h.host))
	runner := filepath.Join(t.TempDir(), "runner")
	require.NoError(t, os.MkdirAll(filepath.Dir(runnerpkg.ListenerPath(runner)), 0o755))
	require.NoError(t, os.WriteFile(runnerpkg.ListenerPath(runner), []byte("#!/bin/sh\n"), 0o755))
	h.policy = storetest.NewPolicy().Name("home").Repository("octo/app").Host(h.host.ID).Autoscale("home", 2).RunnerDir(runner).Build()
	require.NoError(t, h.st.InsertPolicy(t.Context(), h.policy))
	h.srv = githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo("octo/app"))
	return h
}

func (h host) setup() doctor.Setup {
	return doctor.Setup{
		DataDir: h.dir, MemoryReserve: 1 << 20, DiskFloor: 1 << 20, Backends: backend.Doctors(),
		Journal: func(context.Context) (store.Store, error) { return h.st, nil },
		Host:    func(context.Context) (rm.Host, error) { return h.host, nil },
		GitHub: func() (*github.Client, error) {
			return github.New(github.Config{WebURL: h.srv.URL(), APIURL: h.srv.APIURL(), Token: token})
		},
	}
}

func byName(checks []doctor.Check) map[string][]doctor.Check {
	m := map[string][]doctor.Check{}
	for _, c := range checks {
		m[c.Name] = append(m[c.Name], c)
	}
	return m
}

func TestRunFailures(t *testing.T) {
	t.Run("NoDataDir", func(t *testing.T) {
		s := newHost(t).setup()
		s.DataDir = filepath.Join(t.TempDir(), "missing")
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		require.Len(t, checks, 2, "nothing else can be checked: %v", checks)
		assert.Equal(t, doctor.Fail, checks[1].Status)
		assert.Contains(t, checks[1].Hint, "runner-manager init")
	})
	t.Run("LooseDataDir", func(t *testing.T) {
		h := newHost(t)
		require.NoError(t, os.Chmod(h.dir, 0o755))
		checks, err := doctor.Run(t.Context(), h.setup())
		require.NoError(t, err)
		assert.Equal(t, doctor.Warn, byName(checks)["data-dir"][0].Status)
		s := h.setup()
		s.Fix = true
		checks, err = doctor.Run(t.Context(), s)
		require.NoError(t, err)
		assert.Contains(t, byName(checks)["data-dir"][0].Detail, "tightened to 0700")
		fi, err := os.Stat(h.dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), fi.Mode().Perm())
	})
	t.Run("Thresholds", func(t *testing.T) {
		s := newHost(t).setup()
		s.DiskFloor, s.MemoryReserve = 1<<62, 1<<62
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		m := byName(checks)
		assert.Equal(t, doctor.Fail, m["disk"][0].Status)
		assert.Equal(t, doctor.Fail, m["memory"][0].Status)
		assert.Equal(t, 2, doctor.Failed(checks))
	})
	t.Run("NoJournal", func(t *testing.T) {
		s := newHost(t).setup()
		s.Journal = func(context.Context) (store.Store, error) { return nil, errors.New("no journal here") }
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		last := checks[len(checks)-1]
		assert.Equal(t, doctor.Check{Name: "journal", Status: doctor.Fail, Detail: "journal", Hint: "no journal here"}, last)
	})
	t.Run("Credentials", func(t *testing.T) {
		s := newHost(t).setup()
		s.GitHub = func() (*github.Client, error) { return nil, errors.New("no token") }
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		assert.Equal(t, "[FAIL] GitHub credentials\n       no token", checks[len(checks)-1].String())
	})
	t.Run("RefusedToken", func(t *testing.T) {
		h := newHost(t)
		s := h.setup()
		s.GitHub = func() (*github.Client, error) {
			return github.New(github.Config{WebURL: h.srv.URL(), APIURL: h.srv.APIURL(), Token: "ghp_revoked"})
		}
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		gh := byName(checks)["github"]
		require.Len(t, gh, 1)
		assert.Equal(t, doctor.Fail, gh[0].Status)
		assert.Contains(t, gh[0].Hint, "401")
		assert.Empty(t, byName(checks)["github-scope"], "no scope is checked with refused credentials")
	})
}

func TestCheckString(t *testing.T) {
	assert.Equal(t, "[ok  ] fine", doctor.Check{Detail: "fine", Hint: "not shown"}.String())
	assert.Equal(t, "[warn] odd\n       do this\n       then that", doctor.Check{Status: doctor.Warn, Detail: "odd", Hint: "do this\nthen that"}.String())
}
