package daemon_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/status"
)

// The status on the local API carries GitHub's runner list of a classic
// policy's scope as the loop read it, every runner there: one someone
// else registered too.
func TestStatusListsTheScopesRunners(t *testing.T) {
	w := newWorld(t)
	ctx := t.Context()
	other, err := github.New(w.github())
	require.NoError(t, err)
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewLabelTarget(scope, "", []string{"laptop"})
	require.NoError(t, err)
	ct, err := github.NewClassicTarget(other, target, github.ClassicOptions{})
	require.NoError(t, err)
	_, err = ct.JITConfig(ctx, "someone-elses-laptop")
	require.NoError(t, err)

	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), ClassicPoll: 200 * time.Millisecond,
		SampleEvery: 100 * time.Millisecond, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	w.addPolicy(t, d, "linux", true)
	assert.Nil(t, d.Status().Registrations, "nothing read before the loops run")

	start(t, d)
	client := localapi.NewClient(w.dataDir)
	var st status.Status
	require.Eventually(t, func() bool {
		st, err = client.Status(ctx)
		return err == nil && len(st.Registrations) > 0
	}, 20*time.Second, 20*time.Millisecond, "the first pass lists the scope's runners")
	require.Len(t, st.Registrations, 1)
	sr := st.Registrations[0]
	assert.Equal(t, "repo:"+repo, sr.Scope)
	assert.False(t, sr.At.IsZero())
	var names []string
	for _, r := range sr.Runners {
		names = append(names, r.Name)
		assert.Nil(t, r.Owner, "whose is the reader's judgement, not on the wire")
	}
	assert.Contains(t, names, "someone-elses-laptop", "every runner of the scope, not only this host's")
}
