package tui_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// fleetFixture is the fixture host and two more: one fresh, one whose
// heartbeat stopped three minutes ago.
func fleetFixture() status.Status {
	st := fixtureStatus()
	seen := func(ago time.Duration) *time.Time { t := t0.Add(-ago); return &t }
	st.Fleet = &status.Fleet{StaleAfter: status.DefaultStaleAfter, Hosts: []status.FleetHost{
		{ID: hostID, Name: "build-01", MemoryBytes: 16 * gib, CPUs: 8, OS: "linux", Version: "v1.4.0", LiveAttempts: 4, SeenAt: seen(2 * time.Second)},
		{ID: mustHost("7m1n1b0x9f1g3h5j7k9m2n4p60"), Name: "mac-mini", MemoryBytes: 32 * gib, CPUs: 10, OS: "darwin", Version: "v1.4.0", LiveAttempts: 2, SeenAt: seen(5 * time.Second)},
		{ID: mustHost("9n3wb0x09f1g3h5j7k9m2n4p60"), Name: "pi", MemoryBytes: 8 * gib, CPUs: 4, OS: "linux", Version: "v1.3.2", SeenAt: seen(3 * time.Minute), Stale: true},
	}}
	return st
}

func TestDrawFleetGolden(t *testing.T) {
	for _, tt := range []struct {
		name string
		w, h int
	}{
		{"fleet", 80, 24},
		{"fleet-wide", 120, 30},
		{"fleet-narrow", 50, 16},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m, _ := send(tui.NewModel(tt.w, tt.h, t0), tui.StatusLoaded{Status: fleetFixture()}, tui.AttemptsLoaded{Attempts: fixtureHistory()})
			golden(t, fmt.Sprintf("%s-%dx%d", tt.name, tt.w, tt.h), draw(m, tt.w, tt.h))
		})
	}
}

func TestDrawFleetRow(t *testing.T) {
	rowOf := func(st status.Status, w int) (string, bool) {
		m, _ := send(tui.NewModel(w, 24, t0), tui.StatusLoaded{Status: st})
		c := tui.NewTextCanvas(w, 24)
		tui.Draw(c, m)
		line := c.Line(3)
		return line, strings.HasPrefix(line, "fleet")
	}
	one := fixtureStatus()
	one.Fleet = &status.Fleet{Hosts: []status.FleetHost{{ID: hostID, Name: "build-01"}}}
	_, shown := rowOf(one, 80)
	assert.False(t, shown, "one host: no fleet row")

	st := fleetFixture()
	line, shown := rowOf(st, 120)
	require.True(t, shown)
	assert.Contains(t, line, "pi 8.0G stale 3m00s")
	assert.Contains(t, line, "mac-mini 32G 2 live v1.4.0")

	line, _ = rowOf(st, 60)
	assert.NotContains(t, line, "v1.4.0", "versions go first")
	assert.LessOrEqual(t, len([]rune(strings.TrimRight(line, " "))), 60)

	for range 6 {
		st.Fleet.Hosts = append(st.Fleet.Hosts, status.FleetHost{ID: rm.NewHostID(), Name: "box", LiveAttempts: 1})
	}
	line, _ = rowOf(st, 80)
	assert.Regexp(t, `\+\d more\s*$`, line, "the hosts that do not fit are counted")
	m, _ := send(tui.NewModel(80, 24, t0), tui.StatusLoaded{Status: st})
	c := tui.NewTextCanvas(80, 24)
	tui.Draw(c, m)
	line = c.Line(3)
	cell := len([]rune(line[:strings.Index(line, " pi ")+1])) // the row is one cell a rune
	_, style := c.Cell(cell, 3)
	assert.Equal(t, tui.ColorYellow, style.FG, "a stale host in the warning style")
}

// The daemon's figures come with the store's fleet, read at most every few
// seconds; without the daemon the journal's status has it too.
func TestStoreSourceFleet(t *testing.T) {
	j := newJournal(t)
	now := storetest.Now()
	peer := storetest.NewHost().Name("peer").SeenAt(now.Add(-time.Minute)).Build()
	require.NoError(t, j.store.RegisterHost(t.Context(), store.FleetHost{Host: peer, Version: "v2"}))
	clock := now
	src := j.source(t)
	src.Now = func() time.Time { return clock }
	src.Live = func(context.Context) (status.Status, error) { return status.Status{Host: j.host}, nil }

	st, err := src.Status(t.Context())
	require.NoError(t, err)
	require.NotNil(t, st.Fleet)
	require.Len(t, st.Fleet.Hosts, 2)
	byName := map[string]status.FleetHost{}
	for _, h := range st.Fleet.Hosts {
		byName[h.Name] = h
	}
	assert.True(t, byName["peer"].Stale)
	assert.Equal(t, 2, byName["build-01"].LiveAttempts)

	other := storetest.NewHost().Name("late").SeenAt(now).Build()
	require.NoError(t, j.store.RegisterHost(t.Context(), store.FleetHost{Host: other}))
	st, err = src.Status(t.Context())
	require.NoError(t, err)
	assert.Len(t, st.Fleet.Hosts, 2, "read again only after a few seconds")
	clock = clock.Add(6 * time.Second)
	st, err = src.Status(t.Context())
	require.NoError(t, err)
	assert.Len(t, st.Fleet.Hosts, 3)

	src.Live = nil
	st, err = src.Status(t.Context())
	require.ErrorIs(t, err, tui.ErrPartial)
	require.NotNil(t, st.Fleet)
	assert.Len(t, st.Fleet.Hosts, 3)
}
