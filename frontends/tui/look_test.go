package tui_test

import (
	"fmt"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
)

func TestLookFromEnv(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		want tui.Look
	}{
		{"nothing asked", map[string]string{"TERM": "xterm-256color"}, tui.Look{}},
		{"NO_COLOR empty is unset", map[string]string{"NO_COLOR": ""}, tui.Look{}},
		{"NO_COLOR", map[string]string{"NO_COLOR": "1"}, tui.Look{NoColor: true}},
		{"NO_COLOR any value", map[string]string{"NO_COLOR": "false"}, tui.Look{NoColor: true}},
		{"TERM=dumb", map[string]string{"TERM": "dumb"}, tui.Look{NoColor: true, ASCII: true}},
		{"ASCII", map[string]string{tui.ASCIIEnv: "1"}, tui.Look{ASCII: true}},
		{"ASCII off", map[string]string{tui.ASCIIEnv: "0"}, tui.Look{}},
		{"ASCII false", map[string]string{tui.ASCIIEnv: "False"}, tui.Look{}},
		{"both", map[string]string{tui.ASCIIEnv: "yes", "NO_COLOR": "x"}, tui.Look{NoColor: true, ASCII: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, tui.LookFromEnv(func(k string) string { return tt.env[k] }))
		})
	}
	assert.Equal(t, tui.Look{NoColor: true, ASCII: true}, tui.Look{NoColor: true}.Or(tui.Look{ASCII: true}))
}

// distinctions is a screen with every distinction the view makes in
// colour: a failed attempt, a waiting and a failing policy, GitHub's
// budget low, memory used and committed into the reserve, the disk below
// its floor, a stale host of the fleet, an error on the status line, the
// focused pane.
func distinctions(look tui.Look) tui.Model {
	st := fleetFixture()
	st.Budget.Remaining = 300
	st.Memory.AvailableBytes = gib
	st.Memory.CommittedBytes = 15 * gib
	st.Memory.DiskFreeBytes = 4 * gib // below the floor of 10G
	home := &st.Policies[0]
	home.Wait.Waiting, home.Wait.Queued, home.Wait.WaitReason = 2, 2, "at max 4"
	st.Policies[2].LastError = "GitHub refused the scale set"
	m := tui.NewModel(80, 24, t0)
	m.Look = look
	m, _ = send(m, tui.StatusLoaded{Status: st}, tui.AttemptsLoaded{Attempts: fixtureHistory()})
	// On the policies pane, docs (max 2) lowered twice: the second is
	// refused.
	m, _ = send(m, key(tui.KeyTab), r('-'), r('-'))
	return m
}

func TestDrawLooksGolden(t *testing.T) {
	tests := []struct {
		name string
		w, h int
		m    tui.Model
	}{
		{"no-color", 80, 24, distinctions(tui.Look{NoColor: true})},
		{"ascii", 80, 24, distinctions(tui.Look{NoColor: true, ASCII: true})},
		{"ascii-narrow", 60, 24, distinctions(tui.Look{ASCII: true})},
		{"ascii-help", 80, 24, func() tui.Model {
			m, _ := send(distinctions(tui.Look{ASCII: true}), r('?'))
			return m
		}()},
		{"ascii-detail", 80, 24, func() tui.Model {
			m := withSamples(loaded(), 40)
			m.Look = tui.Look{ASCII: true}
			m, _ = send(m, key(tui.KeyDown), key(tui.KeyDown), key(tui.KeyDown), key(tui.KeyEnter))
			return m
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, fmt.Sprintf("%s-%dx%d", tt.name, tt.w, tt.h), draw(tt.m, tt.w, tt.h))
		})
	}
}

// Without colour, every cell is drawn in the terminal's own colour; in
// ASCII, no cell holds a glyph of the view's own (frames, rules, bars,
// markers, ellipses): only the data (a job's name) keeps its runes.
func TestDrawLooks(t *testing.T) {
	for _, look := range []tui.Look{{NoColor: true}, {ASCII: true}, {NoColor: true, ASCII: true}} {
		for _, m := range []tui.Model{distinctions(look), func() tui.Model {
			m, _ := send(distinctions(look), r('?'))
			return m
		}()} {
			for _, w := range []int{50, 60, 80, 120} {
				c := tui.NewTextCanvas(w, 24)
				tui.Draw(c, m)
				for y := range 24 {
					for x := range w {
						r, st := c.Cell(x, y)
						if look.NoColor {
							require.Equal(t, tui.ColorDefault, st.FG, "%+v %d×24: colour at %d,%d", look, w, x, y)
						}
						if look.ASCII && r > unicode.MaxASCII && !strings.ContainsRune("夜間テスト", r) && r != 0 {
							require.Failf(t, "a glyph in ASCII", "%+v %d×24: %q at %d,%d in %q", look, w, r, x, y, c.Line(y))
						}
					}
				}
			}
		}
	}
}

// Each distinction drawn in colour is also in words or a marker: the
// text alone (as TextCanvas keeps it) tells them apart.
func TestDrawDistinctionsInWords(t *testing.T) {
	text := draw(distinctions(tui.Look{NoColor: true}), 80, 24)
	for _, want := range []string{
		"GitHub 300/5000 reset 12:40 low",      // the budget's warning
		"15G of 16G (into the reserve)",        // memory used into the reserve
		"15G (into the reserve)",               // memory committed into it
		"DISK   [",                             // the disk below its floor
		"stale",                                // a host of the fleet silent
		"failed",                               // a failed attempt's state
		"waiting 2",                            // a policy's jobs waiting
		"error: GitHub",                        // a policy's error
		"paused",                               // a paused policy
		"error: max of docs cannot go below 1", // an error message
		"[Policies (3)]",                       // the focused pane
	} {
		assert.Contains(t, text, want)
	}
	assert.NotContains(t, text, "[Attempts", "only the focused pane is in brackets")
}

// The focus moves with tab, and its marker with it.
func TestDrawFocusMarker(t *testing.T) {
	m := loaded()
	assert.Contains(t, draw(m, 80, 24), "━━ [Attempts (6)] ━━")
	assert.Contains(t, draw(m, 80, 24), "── Policies (3) ──")
	m, _ = send(m, key(tui.KeyTab))
	assert.Contains(t, draw(m, 80, 24), "━━ [Policies (3)] ━━")
	assert.Contains(t, draw(m, 80, 24), "── Attempts (6) ──")
}

// A removed policy's attempts are named as `runner-manager attempts`
// names them, "gpu (removed)", once the source gave the journal's
// policies; before, by the first characters of the policy's id.
func TestAttemptRowsRemovedPolicy(t *testing.T) {
	st := fixtureStatus()
	st.Policies = st.Policies[:1] // gpu and docs are gone from status
	m, _ := send(tui.NewModel(80, 24, t0), tui.StatusLoaded{Status: st}, tui.AttemptsLoaded{Attempts: fixtureHistory()})
	byPolicy := func(m tui.Model) map[rm.PolicyID]string {
		out := map[rm.PolicyID]string{}
		for _, r := range m.AttemptRows() {
			out[r.Policy] = r.PolicyName
		}
		return out
	}
	assert.Equal(t, polGPU.String()[:8], byPolicy(m)[polGPU], "unknown: the id's first characters")

	policies := map[rm.PolicyID]rm.Policy{
		polHome: {ID: polHome, Name: "home"},
		polGPU:  {ID: polGPU, Name: "gpu", RemovedAt: at(11, 50, 0)},
		polDocs: {ID: polDocs, Name: "docs"}, // in the journal, not yet in status
	}
	m, _ = send(m, tui.AttemptsLoaded{Attempts: fixtureHistory(), Policies: policies})
	names := byPolicy(m)
	assert.Equal(t, "home", names[polHome])
	assert.Equal(t, "gpu (removed)", names[polGPU])
	assert.Equal(t, "docs", names[polDocs])
	assert.Contains(t, draw(m, 80, 24), "gpu (removed)")

	m, _ = send(m, tui.AttemptsLoaded{Attempts: fixtureHistory()})
	assert.Equal(t, "gpu (removed)", byPolicy(m)[polGPU], "a source that does not say keeps the names known")

	m, _ = send(m, runes("/removed")...)
	m, _ = send(m, key(tui.KeyEnter))
	require.Len(t, m.AttemptRows(), 1, "the filter finds it by that name")
}
