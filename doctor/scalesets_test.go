package doctor_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// TestScaleSetsLeftBehind: a scale set this host's manager created, whose
// policy is gone, is listed; --fix deletes it at GitHub and forgets it. A
// scale set the manager found (someone else made it) is never listed.
func TestScaleSetsLeftBehind(t *testing.T) {
	for _, tc := range []struct {
		name    string
		created bool
	}{{"created", true}, {"found", false}} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t)
			c, err := h.setup().GitHub()
			require.NoError(t, err)
			if !tc.created {
				// Someone else makes it first: the manager finds it.
				other, err := github.NewScaleSetTarget(t.Context(), c, h.policy.Target, github.ScaleSetOptions{Owner: "someone", DisableUpdate: true})
				require.NoError(t, err)
				require.NoError(t, other.Close(context.Background()))
			}
			ss, err := github.NewScaleSetTarget(t.Context(), c, h.policy.Target, github.ScaleSetOptions{
				Owner: "box", DisableUpdate: true, Journal: h.st, HostID: h.host.ID.String()})
			require.NoError(t, err)
			require.NoError(t, ss.Close(context.Background()))
			recs, err := h.st.ScaleSets(t.Context())
			require.NoError(t, err)
			if !tc.created {
				assert.Empty(t, recs, "a scale set found is not recorded as created")
			} else {
				require.Len(t, recs, 1)
			}

			checks, err := doctor.Run(t.Context(), h.setup())
			require.NoError(t, err)
			assert.Equal(t, doctor.OK, byName(checks)["scale-sets"][0].Status, "its policy serves it")

			require.NoError(t, h.st.DeletePolicy(t.Context(), h.policy.ID))
			checks, err = doctor.Run(t.Context(), h.setup())
			require.NoError(t, err)
			check := byName(checks)["scale-sets"][0]
			if !tc.created {
				assert.Equal(t, doctor.OK, check.Status, "%s", check)
				assert.Len(t, h.srv.ScaleSets(), 1, "left alone")
				return
			}
			assert.Equal(t, doctor.Warn, check.Status)
			assert.Contains(t, check.Hint, `"home"`)
			assert.Contains(t, check.Hint, "doctor --fix")

			s := h.setup()
			s.Fix = true
			s.DaemonRunning = func(context.Context) (bool, error) { return true, nil } // no daemon serves an orphan
			checks, err = doctor.Run(t.Context(), s)
			require.NoError(t, err)
			check = byName(checks)["scale-sets"][0]
			assert.Equal(t, doctor.OK, check.Status, "%s", check)
			assert.Contains(t, check.Detail, "deleted 1")
			assert.False(t, slices.ContainsFunc(h.srv.ScaleSets(), func(r fakegithub.ScaleSetRecord) bool { return r.Name == "home" }), "deleted at GitHub")
			recs, err = h.st.ScaleSets(t.Context())
			require.NoError(t, err)
			assert.Empty(t, recs, "and forgotten")
		})
	}
}
