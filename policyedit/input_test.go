package policyedit_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/policyedit"
	"github.com/runner-manager/runner-manager/store/sqlite"
)

func writePolicies(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "policies.toml")
	require.NoError(t, os.WriteFile(p, []byte(body), 0o600))
	return p
}

func TestReadFileInput(t *testing.T) {
	two := "[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"s\"\n\n[[policy]]\nname = \"b\"\nrepo = \"o/r\"\n"
	for _, tc := range []struct {
		name, body, want string
	}{
		{"SameScaleSet", two + "scale_set = \"S\"\n", `policies.toml:6: policies "a" and "b" both serve`},
		{"InvalidAtItsLine", two + "scale_set = \"t\"\nmax = -1\n", "policies.toml:6: invalid: policy \"b\": max -1"},
		{"NoName", "[[policy]]\nrepo = \"o/r\"\n", "policies.toml:1: policy #1 has no name"},
		{"TinyEstimate", "[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"s\"\nmemory_estimate = 2\n", "memory estimate 2B is below 16MiB"},
		{"FloatEstimate", "[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"s\"\nmemory_estimate = 1.5\n", "has no unit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policyedit.ReadFile(writePolicies(t, tc.body), backend.All())
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}

	t.Run("MaxDefaultsToOne", func(t *testing.T) {
		f, err := policyedit.ReadFile(writePolicies(t, "[[policy]]\nname = \"a\"\nrepo = \"o/r\"\nscale_set = \"s\"\n\n[[policy]]\nname = \"b\"\nrepo = \"o/r\"\nscale_set = \"t\"\nmax = 3\n"), backend.All())
		require.NoError(t, err)
		assert.Equal(t, 1, f.Policy[0].Max)
		assert.Equal(t, 3, f.Policy[1].Max)
	})
}

func TestInsertRefusesSameScaleSet(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "journal.db"))
	require.NoError(t, err)
	t.Cleanup(func() { _ = st.Close() })
	host := rm.Host{ID: rm.NewHostID(), Name: "h"}
	require.NoError(t, st.PutHost(t.Context(), host))
	_, err = policyedit.Spec{Name: "a", Repo: "o/r", ScaleSet: "s", Max: 1}.Insert(t.Context(), st, host.ID, backend.All())
	require.NoError(t, err)
	_, err = policyedit.Spec{Name: "b", Repo: "O/R", ScaleSet: "S", Max: 1}.Insert(t.Context(), st, host.ID, backend.All())
	require.ErrorIs(t, err, rm.ErrInvalid)
	assert.Contains(t, err.Error(), `policy "a" serves`)
	_, err = policyedit.Spec{Name: "c", Repo: "o/r", ScaleSet: "other", Max: 1}.Insert(t.Context(), st, host.ID, backend.All())
	require.NoError(t, err)
}
