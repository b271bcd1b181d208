package app_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
)

func TestDoctorStaleSession(t *testing.T) {
	e := newEnv(t)
	srv, runnerDir := withFakeGitHub(t, e)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home", "--runner-dir", runnerDir)
	raw, err := os.ReadFile(filepath.Join(e.dataDir, "state", "host-id"))
	require.NoError(t, err)
	hostID, err := rm.ParseHostID(strings.TrimSpace(string(raw)))
	require.NoError(t, err)
	st := e.journal()
	host, err := st.Host(t.Context(), hostID)
	require.NoError(t, err)

	// A daemon of this host opened the session of "home" and was killed.
	client, err := github.New(github.Config{WebURL: srv.URL(), APIURL: srv.APIURL(), Token: fakeToken})
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(rm.Scope{Kind: rm.ScopeRepository, Name: "octo/app"}, "", "home")
	require.NoError(t, err)
	owner := host.Name + "/" + strings.ToLower(host.ID.String()[:8])
	ss, err := github.NewScaleSetTarget(t.Context(), client, target, github.ScaleSetOptions{
		Owner: owner, HostID: host.ID.String(), Journal: st, DisableUpdate: true,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	opened := make(chan struct{}, 1)
	go func() {
		done <- ss.Watch(ctx, func() int { return 1 }, func(rm.Demand) {
			select {
			case opened <- struct{}{}:
			default:
			}
		})
	}()
	<-opened
	cancel()
	require.NoError(t, <-done)
	// Another host's record is not this host's to touch.
	other := rm.SessionRecord{ScaleSetID: 999, SessionID: "other", Owner: "elsewhere/1", HostID: rm.NewHostID().String(), Scope: "repo:octo/app"}
	require.NoError(t, st.RecordSession(t.Context(), other))

	sessionOwner := func() string {
		for _, s := range srv.ScaleSets() {
			if s.Name == "home" {
				return s.SessionOwner
			}
		}
		return ""
	}
	require.Equal(t, owner, sessionOwner())

	out := e.ok("doctor")
	assert.Contains(t, out, "[warn] message sessions: 1 of this host, left open by a daemon that is not running")
	assert.Contains(t, out, "doctor --fix")

	out = e.ok("doctor", "--fix")
	assert.Contains(t, out, "[ok  ] message sessions: 1 of this host: deleted 1")
	assert.Empty(t, sessionOwner(), "the session is gone at GitHub")
	all, err := st.Sessions(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"other"}, sessionIDs(all), "and in the journal; another host's record stays")
	assert.Contains(t, e.ok("doctor"), "[ok  ] message sessions: 0 of this host")
}

func sessionIDs(ss []rm.SessionRecord) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.SessionID)
	}
	return out
}
