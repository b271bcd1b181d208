package app_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"

	"github.com/runner-manager/runner-manager/frontends/cli/app"
)

// policy rm keeps the policy's attempts as history, marked as a removed
// policy's; --purge deletes them; live runners refuse both.
func TestPolicyRmKeepsHistory(t *testing.T) {
	e := newEnv(t)
	home, _, list := seed(t, e)
	st := e.journal()

	stderr := e.fails(1, "policy", "rm", "home")
	assert.Contains(t, stderr, "still has live runners", "a busy attempt refuses the removal")
	assert.Contains(t, stderr, "no daemon runs here to conclude them: pause it (`runner-manager policy pause home`), run `runner-manager run --once`", "no daemon: waiting would never end")
	assert.NotContains(t, stderr, "wait for them")
	t.Run("with a daemon", func(t *testing.T) {
		l, err := localapi.Listen(e.dataDir)
		require.NoError(t, err)
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte("{}"))
		})}
		go func() { _ = srv.Serve(l) }()
		defer srv.Close()
		stderr := e.fails(1, "policy", "rm", "home")
		assert.Contains(t, stderr, "wait for them to finish (`runner-manager status`)", "a daemon concludes them")
	})
	assert.Contains(t, e.fails(1, "policy", "rm", "--purge", "home"), "still has live runners")
	ended, err := list[2].Conclude(rm.Outcome{Kind: rm.CompletedJob}, storetest.Now())
	require.NoError(t, err)
	require.NoError(t, st.RecordAttempt(t.Context(), ended))

	assert.Equal(t, "removed policy home; its 3 attempts are kept as history (`runner-manager attempts --policy home`; `policy rm --purge home` deletes them)\n",
		e.ok("policy", "rm", "home"))
	assert.NotContains(t, e.ok("policy", "list"), "home", "policy list shows the policies in force")
	all := e.ok("policy", "list", "--all")
	assert.Regexp(t, `home .* removed \d{4}-\d\d-\d\d \d\d:\d\d:\d\d`, all)
	assert.Contains(t, all, "gpu")

	var policies []map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("policy", "list", "--all", "--json")), &policies))
	require.Len(t, policies, 2)
	assert.Equal(t, "gpu", policies[0]["name"])
	assert.Nil(t, policies[0]["removed_at"])
	assert.Equal(t, "home", policies[1]["name"])
	assert.NotNil(t, policies[1]["removed_at"])

	out := e.ok("attempts", "--policy", "home")
	assert.Contains(t, out, "home (removed)")
	var atts []map[string]any
	require.NoError(t, json.Unmarshal([]byte(e.ok("attempts", "--json", "--policy", "home")), &atts))
	require.Len(t, atts, 3, "the removed policy's history")
	for _, a := range atts {
		assert.Equal(t, "home", a["policy_name"])
		assert.Equal(t, true, a["policy_removed"])
	}
	assert.Contains(t, e.ok("attempt", "show", list[0].ID.String()), "home (removed)")

	// The name and the scale set are free again.
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	e.ok("policy", "add", "empty", "--repo", "octo/app", "--scale-set", "empty")
	assert.Equal(t, "removed policy empty (it had no attempts)\n", e.ok("policy", "rm", "empty"))
	out = e.ok("attempts", "--policy", "home")
	assert.Equal(t, "no attempts match\n", out, "the new policy's history is its own")

	assert.Equal(t, "purged removed policy home ("+home.ID.String()+") and its attempt history\n", e.ok("policy", "rm", "--purge", home.ID.String()))
	_, err = st.Attempt(t.Context(), list[0].ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	assert.Equal(t, "removed policy home and deleted its attempt history\n", e.ok("policy", "rm", "--purge", "home"))
	assert.Contains(t, e.fails(app.ExitNotFound, "policy", "rm", "--purge", "home"), `no policy named "home"`)
}

// One scale set is one policy's, whichever command would make a second:
// policy edit too, refused in the journal with the other policy named.
func TestPolicyScaleSetTaken(t *testing.T) {
	e := newEnv(t)
	e.ok("policy", "add", "home", "--repo", "octo/app", "--scale-set", "home")
	e.ok("policy", "add", "other", "--repo", "octo/app", "--scale-set", "other")
	stderr := e.fails(app.ExitInvalid, "policy", "edit", "other", "--scale-set", "home")
	assert.Contains(t, stderr, `policy "home" serves it already`)
	p, err := e.journal().PolicyByName(t.Context(), "other")
	require.NoError(t, err)
	assert.Equal(t, "other", p.Target.ScaleSet, "nothing changed")
	assert.Contains(t, e.fails(app.ExitConflict, "policy", "add", "twin", "--repo", "octo/app", "--scale-set", "HOME"), `policy "home" serves`)
}
