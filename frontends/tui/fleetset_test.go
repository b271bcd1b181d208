package tui_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
)

// A fleet policy shows as such in the policies table, and its detail says
// who holds its session and what each host serves of it.
func TestFleetPolicyShown(t *testing.T) {
	st := fixtureStatus()
	room := 1
	st.Policies[0].Fleet = true
	st.Policies[0].FleetSet = &status.FleetSet{Holder: hostID, HolderName: "build-01", Token: 4, Shares: []status.FleetShare{
		{Host: hostID, HostName: "build-01", Wanted: 2, Room: &room},
		{HostName: "mini", Wanted: 1, Spares: 1},
	}}
	m := tui.NewModel(100, 30, t0)
	m, _ = tui.Update(m, tui.StatusLoaded{Status: st})
	m, _ = send(m, key(tui.KeyTab))
	for range st.Policies {
		if p, ok := m.SelectedPolicy(); ok && p.Name == "home" {
			break
		}
		m, _ = send(m, r('j'))
	}
	p, ok := m.SelectedPolicy()
	require.True(t, ok)
	require.Equal(t, "home", p.Name)
	assert.Regexp(t, `home\s+octo/app home\s+fleet\s+active`, draw(m, 100, 30))

	m, _ = send(m, r('i'))
	require.True(t, m.PolicyDetail)
	assert.Contains(t, draw(m, 100, 30), "held by build-01; build-01 2 jobs (full), mini 1 job (+1 spare)")
}
