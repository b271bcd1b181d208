package tui_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdamore/tcell/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
)

var betaID = mustHost("7q2w4e6r8t0y1v3j5k7p9a2s40")

// withInventory is the fixture's status as a daemon answers it, with
// GitHub's runner list of the gpu policy's organization: this host's
// runner (busy, its attempt in the journal) and a leftover of it, another
// host's idle one, and one nobody here registered.
func withInventory() status.Status {
	st := fixtureStatus()
	st.Policies[1].Paused = false
	st.Registrations = []status.ScopeRunners{{Scope: "org:acme", At: at(11, 59, 48), Runners: []status.Registration{
		{ID: 104, Name: "laptop-of-ana", Online: true, Owner: &status.Owner{}},
		{ID: 103, Name: rm.RunnerName(hostID, aid(9)), Owner: &status.Owner{Kind: status.OwnerThisHost, Host: hostID, HostName: "build-01"}},
		{ID: 102, Name: rm.RunnerName(betaID, aid(8)), Online: true,
			Owner: &status.Owner{Kind: status.OwnerFleet, Host: betaID, HostName: "beta", Attempt: aid(8), State: rm.StateIdle, Policy: polGPU}},
		{ID: 101, Name: rm.RunnerName(hostID, aid(7)), Online: true, Busy: true,
			Owner: &status.Owner{Kind: status.OwnerThisHost, Host: hostID, HostName: "build-01", Attempt: aid(7), State: rm.StateBusy, Policy: polGPU}},
	}}}
	return st
}

// activity is the fixture's journal with what the UI saw go wrong: a
// policy's refusal reported by the daemon, then a refused edit.
func activity() tui.Model {
	m := tui.NewModel(80, 24, at(11, 59, 50))
	st := fixtureStatus()
	st.Policies[0].LastError = "GitHub unavailable: 502 Bad Gateway"
	m, _ = send(m, tui.StatusLoaded{Status: st}, tui.AttemptsLoaded{Attempts: fixtureHistory()})
	m.Now = t0
	m, _ = send(m, tui.StatusLoaded{Status: st}) // the same error: noted once
	m, _ = send(m, tui.Done{Cmd: tui.SetMax{Policy: polDocs, Name: "docs", Max: 0}, Err: fmt.Errorf("%w: max below 1", rm.ErrInvalid)})
	m, _ = send(m, r('a'))
	return m
}

func TestDrawViewsGolden(t *testing.T) {
	tests := []struct {
		name string
		w, h int
		m    func() tui.Model
	}{
		{"inventory", 80, 24, func() tui.Model {
			m, _ := send(loaded(), tui.StatusLoaded{Status: withInventory()}, r('o'))
			return m
		}},
		{"inventory-no-daemon", 80, 24, func() tui.Model {
			m, _ := send(loaded(), tui.StatusLoaded{Status: fixtureStatus(), Err: fmt.Errorf("%w, showing the journal only: no daemon", tui.ErrPartial)}, r('o'))
			return m
		}},
		{"activity", 80, 24, activity},
		{"activity-ascii", 80, 24, func() tui.Model {
			m := activity()
			m.Look = tui.Look{NoColor: true, ASCII: true}
			return m
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := draw(tt.m(), tt.w, tt.h)
			golden(t, fmt.Sprintf("%s-%dx%d", tt.name, tt.w, tt.h), got)
			for i, l := range strings.Split(strings.TrimSuffix(got, "\n"), "\n") {
				assert.LessOrEqual(t, len([]rune(l)), tt.w, "line %d overflows: %q", i, l)
			}
		})
	}
}

// Whose each runner is and what GitHub says of it are words: nothing of
// the inventory is told by colour alone.
func TestInventoryInWords(t *testing.T) {
	m, _ := send(loaded(), tui.StatusLoaded{Status: withInventory()}, r('o'))
	require.True(t, m.InventoryView)
	lines := m.InventoryText()
	text := strings.Join(lines, "\n")
	assert.Contains(t, text, "org:acme · 4 runners (2 this host, 1 host beta, 1 unknown) · listed 12s ago · policies gpu")
	byName := map[string]string{}
	for _, l := range lines {
		for _, name := range []string{"laptop-of-ana", rm.RunnerName(hostID, aid(9)), rm.RunnerName(betaID, aid(8)), rm.RunnerName(hostID, aid(7))} {
			if strings.Contains(l, name) {
				byName[name] = strings.Join(strings.Fields(l), " ")
			}
		}
	}
	assert.Equal(t, "this host online, busy "+rm.RunnerName(hostID, aid(7))+" gpu busy", byName[rm.RunnerName(hostID, aid(7))], "uncut in the printout")
	assert.Equal(t, "this host offline "+rm.RunnerName(hostID, aid(9))+" no live attempt", byName[rm.RunnerName(hostID, aid(9))])
	assert.Equal(t, "host beta online, idle "+rm.RunnerName(betaID, aid(8))+" gpu idle", byName[rm.RunnerName(betaID, aid(8))])
	assert.Equal(t, "unknown online, idle laptop-of-ana not in the journal", byName["laptop-of-ana"])
	assert.Less(t, strings.Index(text, rm.RunnerName(hostID, aid(7))), strings.Index(text, "laptop-of-ana"), "this host's first, unknown last")
	assert.Contains(t, text, "Scale sets (home, docs): GitHub lists no scale set's runners")

	m, _ = send(m, tui.StatusLoaded{Status: fixtureStatus(), Err: fmt.Errorf("%w: no daemon", tui.ErrPartial)})
	assert.Contains(t, strings.Join(m.InventoryText(), "\n"), "No daemon attached", "without a daemon it says so")
}

// The activity lists the journal's steps and what went wrong, newest
// first, each failure or error in words.
func TestActivity(t *testing.T) {
	m := activity()
	require.True(t, m.ActivityView)
	es := m.Activity()
	require.NotEmpty(t, es)
	for i := 1; i < len(es); i++ {
		assert.False(t, es[i].At.After(es[i-1].At), "newest first: %v after %v", es[i], es[i-1])
	}
	text := strings.Join(m.ActivityText(), "\n")
	for _, want := range []string{
		"2025-06-01T12:00:00Z  -  error: max of docs: invalid: max below 1", // a refused edit
		"2025-06-01T11:59:50Z  home  error: GitHub unavailable: 502 Bad Gateway",
		"2025-06-01T11:35:02Z  gpu  " + rm.RunnerName(hostID, aid(6)) + "  failed: failed(start_timeout): no runner online after 5m",
		"gpu  " + rm.RunnerName(hostID, aid(6)) + "  note: killed the process tree after the start timeout",
		"2025-06-01T11:57:20Z  home  " + rm.RunnerName(hostID, aid(1)) + "  busy: ci / build (linux)",
	} {
		assert.Contains(t, text, want)
	}
	assert.Equal(t, 1, strings.Count(text, "502 Bad Gateway"), "a standing error is noted once")
}

// c in the inventory or the activity keeps its text for the program to
// print; elsewhere it does nothing.
func TestCopyView(t *testing.T) {
	m, _ := send(loaded(), r('c'))
	assert.Nil(t, m.Printout, "nothing to copy on the main view")
	m, _ = send(activity(), r('c'))
	require.NotEmpty(t, m.Printout)
	assert.Equal(t, m.ActivityText(), m.Printout)
	assert.Contains(t, draw(m, 80, 24), "will be printed when you quit")
	m, _ = send(m, r('o'), r('c'))
	assert.True(t, m.InventoryView && !m.ActivityView, "one full-screen view at a time")
	assert.Equal(t, m.InventoryText(), m.Printout, "the last copied")
}

// The copied view is printed on Out once the terminal is given back, its
// credentials redacted.
func TestRunScreenPrintsTheCopy(t *testing.T) {
	j := newJournal(t)
	src := j.source(t)
	screen := tcell.NewSimulationScreen("UTF-8")
	require.NoError(t, screen.Init())
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var out bytes.Buffer
	pressed := false
	opt := tui.WithDraw(tui.Options{Tick: time.Hour, Out: &out}, func(c tui.Canvas, m tui.Model) {
		tui.Draw(c, m)
		if !pressed && len(m.History) > 0 {
			pressed = true
			for _, r := range "acqq" { // q leaves the view, q quits
				screen.InjectKey(tcell.KeyRune, r, tcell.ModNone)
			}
		}
	})
	require.NoError(t, tui.RunScreen(ctx, screen, src, opt))
	require.NoError(t, ctx.Err())
	assert.Contains(t, out.String(), "newest first\n")
	assert.Contains(t, out.String(), j.busy.RunnerName+"  busy", "the journal's attempts, uncut")
}
