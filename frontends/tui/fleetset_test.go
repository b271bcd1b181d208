package tui_test

import (
	"testing"
	"time"

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

// The workspace slots show in the header (their size against the cap) and
// in the detail of a policy of their repository (slots, size, hits, last
// use).
func TestWarmSlotsShown(t *testing.T) {
	st := fixtureStatus()
	st.Warm = &status.Warm{CapBytes: 20 << 30, Bytes: 3 << 30, Slots: 3, Repos: []status.WarmRepo{
		{Repo: "octo/app", Backend: "native", Slots: 2, Held: 1, Bytes: 2 << 30, Uses: 6, Hits: 4, LastUsed: t0.Add(-3 * time.Minute)},
		{Repo: "octo/web", Backend: "native", Slots: 1, Bytes: 1 << 30, Uses: 1, LastUsed: t0.Add(-time.Hour)},
	}}
	m := tui.NewModel(160, 30, t0)
	m, _ = tui.Update(m, tui.StatusLoaded{Status: st})
	assert.Contains(t, draw(m, 160, 30), "warm 3.0G of 20G")
	m, _ = send(m, key(tui.KeyTab))
	for range st.Policies {
		if p, ok := m.SelectedPolicy(); ok && p.Name == "home" {
			break
		}
		m, _ = send(m, r('j'))
	}
	m, _ = send(m, r('i'))
	require.True(t, m.PolicyDetail)
	screen := draw(m, 160, 30)
	assert.Contains(t, screen, "octo/app native: 2 slots, 1 held · 2.0G · 4 hits of 6 uses · last 3m00s ago")
	assert.NotContains(t, screen, "octo/web native", "another repository's slots are not the policy's")
}
