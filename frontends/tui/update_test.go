package tui_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/store"
)

func r(c rune) tui.Event { return tui.Key{Code: tui.KeyRune, Rune: c} }

// selectPolicy focuses the policies pane with the named policy selected.
func selectPolicy(t *testing.T, m tui.Model, name string) tui.Model {
	t.Helper()
	m, _ = send(m, key(tui.KeyTab), key(tui.KeyHome))
	for range 10 {
		if p, ok := m.SelectedPolicy(); ok && p.Name == name {
			return m
		}
		m, _ = send(m, key(tui.KeyDown))
	}
	t.Fatalf("no policy %q", name)
	return m
}

func policy(t *testing.T, m tui.Model, name string) tui.PolicyRow {
	t.Helper()
	for _, p := range m.PolicyRows() {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no policy row %q", name)
	return tui.PolicyRow{}
}

func TestUpdateKeys(t *testing.T) {
	tests := []struct {
		name  string
		start func(t *testing.T) tui.Model
		keys  []tui.Event
		check func(t *testing.T, m tui.Model, cmds []tui.Command)
	}{
		{"DownMoves", nil, []tui.Event{key(tui.KeyDown)}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Equal(t, aid(4), m.SelAttempt)
			assert.Empty(t, cmds)
		}},
		{"JAndKMove", nil, []tui.Event{r('j'), r('j'), r('k')}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.Equal(t, aid(4), m.SelAttempt)
		}},
		{"UpStopsAtTop", nil, []tui.Event{key(tui.KeyUp), r('k')}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.Equal(t, aid(3), m.SelAttempt)
		}},
		{"EndAndHome", nil, []tui.Event{key(tui.KeyEnd)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.Equal(t, aid(6), m.SelAttempt, "the oldest ended attempt is last")
		}},
		{"DownStopsAtEnd", nil, []tui.Event{r('G'), r('j'), key(tui.KeyPgDn)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.Equal(t, aid(6), m.SelAttempt)
		}},
		{"WOpensAndClosesTheJobs", nil, []tui.Event{r('w'), r('p'), r('x'), key(tui.KeyEnter), key(tui.KeyTab)}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.True(t, m.JobsView, "w opens the jobs; keys that act on a selection do nothing there")
			assert.Empty(t, cmds, "no pause, no stop")
			assert.True(t, m.Confirm.IsZero(), "no stop asked")
			assert.False(t, m.Detail)
			m, _ = send(m, r('w'))
			assert.False(t, m.JobsView, "w again closes it")
			m, _ = send(m, r('w'), key(tui.KeyEsc))
			assert.False(t, m.JobsView, "esc closes it")
			m, _ = send(m, r('w'), r('q'))
			assert.False(t, m.JobsView, "q leaves it")
			assert.False(t, m.Quit, "and does not quit")
		}},
		{"IOpensThePolicy", nil, []tui.Event{key(tui.KeyTab), r('j'), r('i')}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.True(t, m.PolicyDetail)
			assert.False(t, m.Detail)
			p, _ := m.SelectedPolicy()
			assert.Equal(t, "gpu", p.Name)
		}},
		{"PolicyDetailMovesAndCloses", nil, []tui.Event{key(tui.KeyTab), r('i'), r('j'), key(tui.KeyEnter), key(tui.KeyTab)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.True(t, m.PolicyDetail, "enter and tab keep the detail")
			p, _ := m.SelectedPolicy()
			assert.Equal(t, "gpu", p.Name, "up and down move between policies")
			m, _ = send(m, key(tui.KeyEsc))
			assert.False(t, m.PolicyDetail)
			m, _ = send(m, r('i'), r('q'))
			assert.False(t, m.PolicyDetail, "q leaves the detail")
			assert.False(t, m.Quit)
		}},
		{"SortCycles", nil, []tui.Event{key(tui.KeyTab), r('s')}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			byName := func(rows []tui.PolicyRow) (out []string) {
				for _, r := range rows {
					out = append(out, r.Name)
				}
				return out
			}
			assert.Equal(t, 1, m.SortBy)
			assert.Equal(t, "policies sorted by waiting", m.Msg)
			m, _ = send(m, r('s'))
			assert.Equal(t, []string{"home", "docs", "gpu"}, byName(m.PolicyRows()), "by demand, then name")
			m, _ = send(m, r('s'), r('s'))
			assert.Equal(t, []string{"home", "docs", "gpu"}, byName(m.PolicyRows()), "by max, then name")
			m, _ = send(m, r('s'))
			assert.Equal(t, []string{"docs", "gpu", "home"}, byName(m.PolicyRows()), "back to by name")
		}},
		{"TabSwitchesPane", nil, []tui.Event{key(tui.KeyTab)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.Equal(t, tui.PanePolicies, m.Pane)
		}},
		{"TabTwiceComesBack", nil, []tui.Event{key(tui.KeyTab), key(tui.KeyBacktab)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.Equal(t, tui.PaneAttempts, m.Pane)
		}},
		{"MovesInFocusedPane", nil, []tui.Event{key(tui.KeyTab), r('j')}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			p, ok := m.SelectedPolicy()
			require.True(t, ok)
			assert.Equal(t, "gpu", p.Name, "policies sort by name: docs, gpu, home")
			assert.Equal(t, aid(3), m.SelAttempt, "the attempts pane kept its selection")
		}},
		{"EnterOpensDetailAndReadsLog", nil, []tui.Event{r('j'), key(tui.KeyEnter)}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.True(t, m.Detail)
			assert.Equal(t, []tui.Command{tui.FetchLog{ID: aid(4), Lines: tui.LogLines}}, cmds)
		}},
		{"EnterOnPolicyFocusesAttempts", nil, []tui.Event{key(tui.KeyTab), key(tui.KeyEnter)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.False(t, m.Detail)
			assert.Equal(t, tui.PaneAttempts, m.Pane)
		}},
		{"EscClosesDetail", nil, []tui.Event{key(tui.KeyEnter), key(tui.KeyEsc)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.False(t, m.Detail)
		}},
		{"BackspaceClosesDetail", nil, []tui.Event{key(tui.KeyEnter), key(tui.KeyBackspace)}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.False(t, m.Detail)
		}},
		{"QInDetailGoesBack", nil, []tui.Event{key(tui.KeyEnter), r('q')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.False(t, m.Detail)
			assert.False(t, m.Quit)
			assert.NotContains(t, cmds, tui.Quit{})
		}},
		{"DetailFollowsSelection", nil, []tui.Event{key(tui.KeyEnter), r('j')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.True(t, m.Detail)
			assert.Equal(t, aid(4), m.SelAttempt)
			assert.Equal(t, []tui.Command{tui.FetchLog{ID: aid(3), Lines: tui.LogLines}}, cmds, "one log read at a time")
			m, cmds = send(m, tui.LogLoaded{ID: aid(3), Lines: []string{"old"}})
			assert.Equal(t, []tui.Command{tui.FetchLog{ID: aid(4), Lines: tui.LogLines}}, cmds, "then the shown attempt's")
			assert.False(t, m.Log.Loaded)
		}},
		{"QQuits", nil, []tui.Event{r('q')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.True(t, m.Quit)
			assert.Equal(t, []tui.Command{tui.Quit{}}, cmds)
		}},
		{"CtrlCQuitsWhileFiltering", nil, []tui.Event{r('/'), r('b'), key(tui.KeyCtrlC)}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.True(t, m.Quit)
			assert.Equal(t, []tui.Command{tui.Quit{}}, cmds)
		}},
		{"CtrlLRepaints", nil, []tui.Event{key(tui.KeyCtrlL)}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Equal(t, []tui.Command{tui.Sync{}}, cmds)
		}},
		{"HelpOpens", nil, []tui.Event{r('?')}, func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.True(t, m.Help)
		}},
		{"AnyKeyClosesHelpWithoutActing", nil, []tui.Event{r('?'), r('q')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.False(t, m.Help)
			assert.False(t, m.Quit)
			assert.Empty(t, cmds)
		}},
		{"FilterTypedAndApplied", nil, append(append([]tui.Event{r('/')}, runes("  busy  ci ")...), key(tui.KeyEnter)),
			func(t *testing.T, m tui.Model, _ []tui.Command) {
				assert.False(t, m.Editing)
				assert.Equal(t, "busy ci", m.Filter)
				var ids []rm.AttemptID
				for _, a := range m.AttemptRows() {
					ids = append(ids, a.ID)
				}
				assert.Equal(t, []rm.AttemptID{aid(2), aid(1)}, ids, "busy attempts of ci jobs, newest first")
				assert.Equal(t, aid(2), m.SelAttempt, "the selection moved onto a shown row")
			}},
		{"FilterNotAppliedWhileTyping", nil, append([]tui.Event{r('/')}, runes("gpu")...), func(t *testing.T, m tui.Model, _ []tui.Command) {
			assert.True(t, m.Editing)
			assert.Equal(t, "gpu", m.Draft)
			assert.Empty(t, m.Filter)
			assert.Len(t, m.AttemptRows(), 6)
		}},
		{"FilterKeysAreText", nil, []tui.Event{r('/'), r('q'), r('x'), r('p'), r('?')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Equal(t, "qxp?", m.Draft)
			assert.False(t, m.Quit)
			assert.Empty(t, cmds)
		}},
		{"FilterBackspace", nil, []tui.Event{r('/'), r('g'), r('p'), r('ü'), key(tui.KeyBackspace), key(tui.KeyBackspace)},
			func(t *testing.T, m tui.Model, _ []tui.Command) {
				assert.Equal(t, "g", m.Draft)
			}},
		{"FilterEscClears", nil, []tui.Event{r('/'), r('g'), key(tui.KeyEnter), r('/'), r('x'), key(tui.KeyEsc)},
			func(t *testing.T, m tui.Model, _ []tui.Command) {
				assert.False(t, m.Editing)
				assert.Empty(t, m.Filter)
				assert.Len(t, m.AttemptRows(), 6)
			}},
		{"EscClearsAppliedFilter", nil, []tui.Event{r('/'), r('g'), key(tui.KeyEnter), key(tui.KeyEsc)},
			func(t *testing.T, m tui.Model, _ []tui.Command) {
				assert.Empty(t, m.Filter)
			}},
		{"FilterNarrowsPolicies", nil, []tui.Event{r('/'), r('A'), r('C'), r('M'), r('E'), key(tui.KeyEnter)},
			func(t *testing.T, m tui.Model, _ []tui.Command) {
				rows := m.PolicyRows()
				require.Len(t, rows, 1, "the filter ignores case")
				assert.Equal(t, "gpu", rows[0].Name)
			}},
		{"PPauses", func(t *testing.T) tui.Model { return selectPolicy(t, loaded(), "home") }, []tui.Event{r('p')},
			func(t *testing.T, m tui.Model, cmds []tui.Command) {
				assert.Equal(t, []tui.Command{tui.SetPaused{Policy: polHome, Name: "home", Paused: true}}, cmds)
				p := policy(t, m, "home")
				assert.True(t, p.Paused, "shown paused before the source confirms")
				assert.True(t, p.Pending)
			}},
		{"PResumes", func(t *testing.T) tui.Model { return selectPolicy(t, loaded(), "gpu") }, []tui.Event{r('p')},
			func(t *testing.T, m tui.Model, cmds []tui.Command) {
				assert.Equal(t, []tui.Command{tui.SetPaused{Policy: polGPU, Name: "gpu", Paused: false}}, cmds)
			}},
		{"PNeedsPoliciesPane", nil, []tui.Event{r('p')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Empty(t, cmds)
			assert.Contains(t, m.Msg, "tab to the policies pane")
		}},
		{"PlusRaisesMax", func(t *testing.T) tui.Model { return selectPolicy(t, loaded(), "home") }, []tui.Event{r('+')},
			func(t *testing.T, m tui.Model, cmds []tui.Command) {
				assert.Equal(t, []tui.Command{tui.SetMax{Policy: polHome, Name: "home", Max: 5}}, cmds)
				assert.Equal(t, 5, policy(t, m, "home").Max)
			}},
		{"PlusTwiceCountsFromTheEdit", func(t *testing.T) tui.Model { return selectPolicy(t, loaded(), "home") }, []tui.Event{r('+'), r('=')},
			func(t *testing.T, m tui.Model, cmds []tui.Command) {
				assert.Equal(t, []tui.Command{
					tui.SetMax{Policy: polHome, Name: "home", Max: 5},
					tui.SetMax{Policy: polHome, Name: "home", Max: 6},
				}, cmds)
			}},
		{"MinusLowersMax", func(t *testing.T) tui.Model { return selectPolicy(t, loaded(), "home") }, []tui.Event{r('-'), r('-')},
			func(t *testing.T, m tui.Model, cmds []tui.Command) {
				assert.Equal(t, []tui.Command{
					tui.SetMax{Policy: polHome, Name: "home", Max: 3},
					tui.SetMax{Policy: polHome, Name: "home", Max: 2},
				}, cmds)
			}},
		{"MinusStopsAtMinIdle", func(t *testing.T) tui.Model {
			m := selectPolicy(t, loaded(), "home")
			m, _ = send(m, r('-'), r('-'), r('-'))
			return m
		}, []tui.Event{r('-')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Empty(t, cmds)
			assert.Equal(t, 1, policy(t, m, "home").Max)
			assert.True(t, m.MsgErr)
			assert.Contains(t, m.Msg, "below 1")
		}},
		{"XAsks", nil, []tui.Event{r('j'), r('x')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Empty(t, cmds)
			assert.Equal(t, aid(4), m.Confirm)
			assert.Equal(t, rm.RunnerName(hostID, aid(4)), m.ConfirmName)
		}},
		{"XThenYStops", nil, []tui.Event{r('j'), r('x'), r('y')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Equal(t, []tui.Command{tui.StopAttempt{ID: aid(4), Runner: rm.RunnerName(hostID, aid(4))}}, cmds)
			assert.True(t, m.Confirm.IsZero())
		}},
		{"XThenOtherKeyCancels", nil, []tui.Event{r('x'), r('q')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Empty(t, cmds)
			assert.False(t, m.Quit, "q answers the question, it does not quit")
			assert.True(t, m.Confirm.IsZero())
			assert.Equal(t, "stop cancelled", m.Msg)
		}},
		{"XInDetail", nil, []tui.Event{key(tui.KeyEnter), r('x'), r('Y')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Contains(t, cmds, tui.Command(tui.StopAttempt{ID: aid(3), Runner: rm.RunnerName(hostID, aid(3))}))
		}},
		{"XOnEndedRefuses", nil, []tui.Event{r('G'), r('x')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Empty(t, cmds)
			assert.True(t, m.Confirm.IsZero())
			assert.Contains(t, m.Msg, "already ended")
		}},
		{"XNeedsAttemptsPane", nil, []tui.Event{key(tui.KeyTab), r('x')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Empty(t, cmds)
			assert.True(t, m.Confirm.IsZero())
		}},
		{"RReadsNow", nil, []tui.Event{r('r')}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Equal(t, []tui.Command{tui.FetchStatus{}, tui.FetchAttempts{Filter: store.AttemptFilter{Limit: tui.HistoryLimit}}}, cmds)
		}},
		{"UnknownKeysIgnored", nil, []tui.Event{r('Z'), key(tui.KeyLeft + 100)}, func(t *testing.T, m tui.Model, cmds []tui.Command) {
			assert.Empty(t, cmds)
			assert.Equal(t, aid(3), m.SelAttempt)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := loaded()
			if tt.start != nil {
				m = tt.start(t)
			}
			m, cmds := send(m, tt.keys...)
			tt.check(t, m, cmds)
		})
	}
}

func TestUpdateFetches(t *testing.T) {
	all := []tui.Command{tui.FetchStatus{}, tui.FetchAttempts{Filter: store.AttemptFilter{Limit: tui.HistoryLimit}}}

	m := tui.NewModel(80, 24, t0)
	m, cmds := tui.Update(m, tui.Tick{})
	assert.Equal(t, all, cmds, "the first tick reads everything")

	m, cmds = tui.Update(m, tui.Tick{})
	assert.Empty(t, cmds, "no second read while one is in flight")

	m, _ = tui.Update(m, tui.StatusLoaded{Status: fixtureStatus()})
	m, cmds = tui.Update(m, tui.Tick{})
	assert.Equal(t, []tui.Command{tui.FetchStatus{}}, cmds, "only the finished kind is read again")

	m, _ = tui.Update(m, tui.AttemptsLoaded{Attempts: fixtureHistory()})
	m, _ = tui.Update(m, tui.StatusLoaded{Status: fixtureStatus()})
	m, _ = tui.Update(m, tui.Key{Code: tui.KeyEnter})
	m, cmds = tui.Update(m, tui.Tick{})
	assert.Equal(t, all, cmds, "the log is in flight since enter: not asked twice")
	m, _ = tui.Update(m, tui.LogLoaded{ID: aid(3), Lines: []string{"a"}})
	_, cmds = tui.Update(m, tui.Tick{})
	assert.Contains(t, cmds, tui.Command(tui.FetchLog{ID: aid(3), Lines: tui.LogLines}), "an open detail reads its log every tick")
}

func TestUpdateResults(t *testing.T) {
	t.Run("StatusErrorKeepsFigures", func(t *testing.T) {
		m, _ := send(loaded(), tui.StatusLoaded{Err: errors.New("reach the daemon:\nconnection reset")})
		assert.Equal(t, "reach the daemon: connection reset", m.StatusErr, "one line")
		assert.Len(t, m.PolicyRows(), 3, "the last figures stay")
		m, _ = send(m, tui.StatusLoaded{Status: fixtureStatus()})
		assert.Empty(t, m.StatusErr, "cleared by the next read that works")
	})
	t.Run("PartialStatusShown", func(t *testing.T) {
		st := fixtureStatus()
		st.Policies = st.Policies[:1]
		m, _ := send(loaded(), tui.StatusLoaded{Status: st, Err: fmt.Errorf("%w: daemon down", tui.ErrPartial)})
		assert.Len(t, m.PolicyRows(), 1)
		assert.Contains(t, m.StatusErr, "daemon down")
	})
	t.Run("AttemptsError", func(t *testing.T) {
		m, _ := send(loaded(), tui.AttemptsLoaded{Err: errors.New("database is locked")})
		assert.Equal(t, "database is locked", m.HistoryErr)
		assert.Len(t, m.AttemptRows(), 6, "the last history stays")
	})
	t.Run("SelectionFollowsRow", func(t *testing.T) {
		m, _ := send(loaded(), r('j'), r('j'))
		require.Equal(t, aid(2), m.SelAttempt)
		// A new attempt shows up on top: the selection stays on its row.
		st := fixtureStatus()
		st.Attempts = append(st.Attempts, st.Attempts[2])
		st.Attempts[len(st.Attempts)-1].ID = aid(7)
		st.Attempts[len(st.Attempts)-1].CreatedAt = t0
		m, _ = send(m, tui.StatusLoaded{Status: st})
		assert.Equal(t, aid(2), m.SelAttempt)
		assert.Equal(t, aid(7), m.AttemptRows()[0].ID)
	})
	t.Run("SelectionMovesWhenRowGoes", func(t *testing.T) {
		m, _ := send(loaded(), r('G'))
		require.Equal(t, aid(6), m.SelAttempt)
		m, _ = send(m, tui.AttemptsLoaded{Attempts: fixtureHistory()[:4]})
		assert.Equal(t, aid(1), m.SelAttempt, "the nearest row")
	})
	t.Run("JournalEndingWins", func(t *testing.T) {
		h := fixtureHistory()
		ended, err := h[0].Conclude(rm.Outcome{Kind: rm.ExitedIdleWithoutWork}, t0)
		require.NoError(t, err)
		h[0] = ended
		m, _ := send(loaded(), tui.AttemptsLoaded{Attempts: h})
		row, ok := m.SelectedAttempt()
		require.True(t, ok)
		assert.Equal(t, aid(4), m.AttemptRows()[0].ID, "live attempts first")
		for _, a := range m.AttemptRows() {
			if a.ID == aid(3) {
				assert.Equal(t, rm.StateFinished, a.State, "the journal says it ended, whatever the daemon's last figures")
				assert.False(t, a.HasUsage)
			}
		}
		_ = row
	})
	t.Run("Samples", func(t *testing.T) {
		m := tui.NewModel(80, 24, t0)
		for i, rss := range []uint64{100, 200, 200, 300} {
			st := fixtureStatus()
			st.At = t0.Add(time.Duration(i) * time.Second)
			if i == 2 {
				st.At = t0.Add(time.Second) // the same snapshot read again
			}
			st.Attempts[0].RSSBytes, st.Attempts[0].CPUMillicores = rss, uint32(rss)
			m, _ = send(m, tui.StatusLoaded{Status: st})
		}
		s := m.Series[aid(1)]
		require.NotNil(t, s)
		assert.Equal(t, []uint64{100, 200, 300}, s.RSS)
		assert.Equal(t, []uint32{100, 200, 300}, s.CPU)
	})
	t.Run("SamplesBounded", func(t *testing.T) {
		m := tui.NewModel(80, 24, t0)
		for i := range tui.MaxSamples + 10 {
			st := fixtureStatus()
			st.At = t0.Add(time.Duration(i) * time.Second)
			st.Attempts[0].RSSBytes = uint64(i)
			m, _ = send(m, tui.StatusLoaded{Status: st})
		}
		s := m.Series[aid(1)]
		require.Len(t, s.RSS, tui.MaxSamples)
		assert.Equal(t, uint64(10), s.RSS[0], "the oldest are dropped")
	})
	t.Run("PartialStatusMakesNoSample", func(t *testing.T) {
		m, _ := send(tui.NewModel(80, 24, t0), tui.StatusLoaded{Status: fixtureStatus(), Err: tui.ErrPartial})
		assert.Empty(t, m.Series)
	})
	t.Run("LogOfAnotherAttemptIgnored", func(t *testing.T) {
		m, _ := send(loaded(), key(tui.KeyEnter), tui.LogLoaded{ID: aid(5), Lines: []string{"other"}})
		assert.False(t, m.Log.Loaded)
		m, _ = send(m, tui.LogLoaded{ID: aid(3), Lines: []string{"mine"}})
		assert.Equal(t, []string{"mine"}, m.Log.Lines)
	})
	t.Run("Resize", func(t *testing.T) {
		m, cmds := send(loaded(), tui.Resize{Width: 100, Height: 40})
		assert.Equal(t, 100, m.Width)
		assert.Equal(t, 40, m.Height)
		assert.Equal(t, []tui.Command{tui.Sync{}}, cmds)
	})
	t.Run("MessageExpires", func(t *testing.T) {
		m, _ := send(loaded(), r('x'), r('n'))
		require.Equal(t, "stop cancelled", m.Msg)
		m.Now = t0.Add(time.Second)
		m, _ = send(m, tui.Tick{})
		assert.Equal(t, "stop cancelled", m.Msg)
		m.Now = t0.Add(time.Minute)
		m, _ = send(m, tui.Tick{})
		assert.Empty(t, m.Msg)
	})
	t.Run("StopDoneRereadsStatus", func(t *testing.T) {
		m := loaded() // no read in flight
		stop := tui.StopAttempt{ID: aid(3), Runner: "rm-x"}
		m, cmds := send(m, tui.Done{Cmd: stop})
		assert.Equal(t, []tui.Command{tui.FetchStatus{}}, cmds)
		assert.Equal(t, "stop requested: rm-x", m.Msg)
		_, cmds = send(m, tui.Done{Cmd: stop, Err: errors.New("the daemon is not running")})
		assert.Empty(t, cmds)
	})
	t.Run("DoneWhileReadingRereadsAfter", func(t *testing.T) {
		m, _ := send(loaded(), tui.Tick{}) // a Status read in flight
		m, cmds := send(m, tui.Done{Cmd: tui.SetMax{Policy: polHome, Name: "home", Max: 5}})
		assert.Empty(t, cmds)
		_, cmds = send(m, tui.StatusLoaded{Status: fixtureStatus()})
		assert.Equal(t, []tui.Command{tui.FetchStatus{}}, cmds, "the read in flight may predate the change")
	})
	t.Run("FailedEditIsDropped", func(t *testing.T) {
		m := selectPolicy(t, loaded(), "home")
		m, cmds := send(m, r('+'))
		m, _ = send(m, tui.Done{Cmd: cmds[0], Err: fmt.Errorf("%w: max too high", rm.ErrInvalid)})
		assert.Equal(t, 4, policy(t, m, "home").Max, "back to the source's figure")
		assert.False(t, policy(t, m, "home").Pending)
		assert.True(t, m.MsgErr)
		assert.Contains(t, m.Msg, "max too high")
	})
	t.Run("ConfirmedEditIsDropped", func(t *testing.T) {
		m := selectPolicy(t, loaded(), "home")
		m, _ = send(m, r('+'))
		m, _ = send(m, tui.StatusLoaded{Status: fixtureStatus()})
		assert.Equal(t, 5, policy(t, m, "home").Max, "the source has not caught up: the edit still shows")
		st := fixtureStatus()
		st.Policies[0].Max = 5
		m, _ = send(m, tui.StatusLoaded{Status: st})
		assert.Empty(t, m.Edits)
		assert.False(t, policy(t, m, "home").Pending)
	})
	t.Run("UnconfirmedEditExpires", func(t *testing.T) {
		m := selectPolicy(t, loaded(), "home")
		m, _ = send(m, r('p'))
		m.Now = t0.Add(time.Minute)
		m, _ = send(m, tui.Tick{})
		assert.False(t, policy(t, m, "home").Paused)
	})
}
