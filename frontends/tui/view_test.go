package tui_test

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
)

var update = flag.Bool("update", false, "rewrite the golden files of testdata/")

// golden compares got with testdata/name.golden (rewritten with -update).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "no golden file: run go test ./frontends/tui -run %s -update", t.Name())
	assert.Equal(t, string(want), got, "the drawn screen differs from %s (run with -update to accept it)", path)
}

// withSamples feeds n successive snapshots in which attempt 1's usage
// rises and falls.
func withSamples(m tui.Model, n int) tui.Model {
	for i := range n {
		st := fixtureStatus()
		st.At = t0.Add(time.Duration(i+1) * 2 * time.Second)
		st.Attempts[0].RSSBytes = uint64(200+60*(i%12)) * mib
		st.Attempts[0].CPUMillicores = uint32(100 * (i % 9) * 2)
		m, _ = tui.Update(m, tui.StatusLoaded{Status: st})
	}
	return m
}

func draw(m tui.Model, w, h int) string {
	c := tui.NewTextCanvas(w, h)
	tui.Draw(c, m)
	return c.String()
}

func TestDrawGolden(t *testing.T) {
	logLines := []string{
		"[2025-06-01 11:57:14Z INFO RunnerListener] Listening for Jobs",
		"[2025-06-01 11:57:20Z INFO JobDispatcher] Job build (linux) received",
		"[2025-06-01 11:57:21Z INFO Worker] Downloading action actions/checkout@v4",
		"[2025-06-01 11:57:25Z INFO Worker] Running: go build ./...",
		"\x1b[31mcolour codes\x1b[0m and a\ttab are made harmless",
	}
	tests := []struct {
		name string
		w, h int
		m    func() tui.Model
	}{
		{"main", 80, 24, loaded},
		{"main-wide", 120, 30, loaded},
		{"policies-filter", 80, 24, func() tui.Model {
			m, _ := send(loaded(), key(tui.KeyTab))
			m, _ = send(m, runes("/home")...)
			m, _ = send(m, key(tui.KeyEnter), tui.Key{Code: tui.KeyRune, Rune: '+'})
			return m
		}},
		{"filter-editing", 80, 24, func() tui.Model {
			m, _ := send(loaded(), runes("/busy ci")...)
			return m
		}},
		{"confirm-stop", 80, 24, func() tui.Model {
			m, _ := send(loaded(), key(tui.KeyDown), tui.Key{Code: tui.KeyRune, Rune: 'x'})
			return m
		}},
		{"detail", 80, 24, func() tui.Model {
			m := withSamples(loaded(), 40)
			m, _ = send(m, key(tui.KeyDown), key(tui.KeyDown), key(tui.KeyDown), key(tui.KeyEnter))
			m, _ = send(m, tui.LogLoaded{ID: m.SelAttempt, Lines: logLines})
			return m
		}},
		{"detail-failed", 80, 24, func() tui.Model {
			m, _ := send(loaded(), key(tui.KeyEnd), key(tui.KeyEnter))
			m, _ = send(m, tui.LogLoaded{ID: m.SelAttempt})
			return m
		}},
		{"help", 80, 24, func() tui.Model {
			m, _ := send(loaded(), tui.Key{Code: tui.KeyRune, Rune: '?'})
			return m
		}},
		{"no-daemon", 80, 24, func() tui.Model {
			st := fixtureStatus()
			st.Memory, st.Refusals = status.Memory{}, nil
			st.Budget.SeenAt = time.Time{}
			m := tui.NewModel(80, 24, t0)
			m, _ = send(m, tui.StatusLoaded{Status: st, Err: fmt.Errorf("%w, showing the journal only: the daemon is not running", tui.ErrPartial)})
			return m
		}},
		{"waiting", 80, 24, func() tui.Model {
			m, _ := send(tui.NewModel(80, 24, t0), tui.StatusLoaded{Err: errors.New("read the policies from the journal: disk I/O error")})
			return m
		}},
		{"jobs-wait", 80, 24, func() tui.Model {
			st := fixtureStatus()
			home := &st.Policies[0]
			home.Live, home.Idle, home.Busy, home.Max, home.Demand, home.Admitted = 12, 0, 11, 100, 12, 12
			home.Wait = status.Wait{Queued: 7, Waiting: 7, WaitReason: "memory: needs 1.5G, 0.9G free"}
			m, _ := send(tui.NewModel(80, 24, t0), tui.StatusLoaded{Status: st})
			return m
		}},
		{"jobs", 80, 24, func() tui.Model {
			st := fixtureStatus()
			home := &st.Policies[0]
			home.Wait = status.Wait{Queued: 5, Waiting: 5, WaitReason: "at max 4"}
			st.Jobs = []status.Job{
				{ID: "j1", Name: "ci / build (linux)", Repository: "octo/app", State: status.JobRunning, Policy: polHome, PolicyName: "home",
					StartedAt: at(11, 57, 20), Attempt: aid(1), RunnerName: rm.RunnerName(hostID, aid(1))},
				{ID: "j2", Name: "ci / lint", Repository: "octo/app", State: status.JobQueued, Policy: polHome, PolicyName: "home",
					QueuedAt: at(11, 58, 0), WaitReason: "at max 4"},
				{ID: "j3", Name: "ci / e2e", Repository: "octo/app", State: status.JobQueued, Policy: polHome, PolicyName: "home",
					QueuedAt: at(11, 59, 30), WaitReason: "at max 4"},
				{ID: "j4", Name: "cuda", Repository: "acme/ml", Labels: []string{"self-hosted", "cuda"}, State: status.JobUnmatched,
					QueuedAt: at(11, 55, 0), WaitReason: "no policy here matches [self-hosted, cuda]"},
			}
			m, _ := send(tui.NewModel(80, 24, t0), tui.StatusLoaded{Status: st})
			m, _ = send(m, r('w'))
			return m
		}},
		{"policy-detail", 80, 24, func() tui.Model {
			m, _ := send(loaded(), key(tui.KeyTab), r('j'), r('i'))
			return m
		}},
		{"policy-detail-waits", 80, 24, func() tui.Model {
			st := fixtureStatus()
			home := &st.Policies[0]
			home.Demand, home.Admitted = 3, 3
			home.Wait = status.Wait{Queued: 7, Waiting: 7,
				WaitReason: "memory: 12 GiB committed + 1.5 GiB expected > 14 GiB (16 GiB less the 2 GiB reserve)"}
			m, _ := send(loaded(), tui.StatusLoaded{Status: st})
			m, _ = send(m, key(tui.KeyTab), r('G'), r('i'))
			return m
		}},
		{"notice", 80, 24, func() tui.Model {
			m, _ := send(loaded(), tui.Notice{Text: "demo finished: 20/20 jobs done in 9.4s; press q to quit and see the summary"})
			return m
		}},
		{"too-small", 40, 10, loaded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, fmt.Sprintf("%s-%dx%d", tt.name, tt.w, tt.h), draw(tt.m(), tt.w, tt.h))
		})
	}
}

// The header and the tables at 80 columns and narrower: fields dropped
// whole or cut at a word, columns apart.
func TestDrawNarrowGolden(t *testing.T) {
	tests := []struct {
		name string
		w, h int
		m    func() tui.Model
	}{
		{"main-narrow", 60, 24, loaded},
		{"jobs-wait-narrow", 60, 24, func() tui.Model {
			st := fixtureStatus()
			home := &st.Policies[0]
			home.Demand, home.Wait = 10, status.Wait{Queued: 6, Waiting: 6, WaitReason: "at max 4"}
			m, _ := send(loaded(), tui.StatusLoaded{Status: st})
			return m
		}},
		{"runner-header", 80, 24, func() tui.Model {
			st := fixtureStatus()
			days := 45
			st.Runner = &status.Runner{Version: "2.330.0", DaysLeft: &days}
			m, _ := send(loaded(), tui.StatusLoaded{Status: st})
			return m
		}},
		{"runner-header-wide", 120, 30, func() tui.Model {
			st := fixtureStatus()
			days := 45
			st.Runner = &status.Runner{Version: "2.330.0", DaysLeft: &days}
			m, _ := send(loaded(), tui.StatusLoaded{Status: st})
			return m
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			golden(t, fmt.Sprintf("%s-%dx%d", tt.name, tt.w, tt.h), draw(tt.m(), tt.w, tt.h))
		})
	}
}

func TestDrawFitsAnySize(t *testing.T) {
	m := withSamples(loaded(), 10)
	detail, _ := send(m, key(tui.KeyEnter))
	for _, mm := range []tui.Model{m, detail} {
		for w := 1; w <= 130; w += 7 {
			for h := 1; h <= 40; h += 3 {
				c := tui.NewTextCanvas(w, h)
				require.NotPanics(t, func() { tui.Draw(c, mm) }, "%d×%d", w, h)
			}
		}
	}
}

func TestDrawSelectionIsReversed(t *testing.T) {
	m := loaded()
	c := tui.NewTextCanvas(80, 24)
	tui.Draw(c, m)
	// The attempts pane has the focus: its selected row is reversed, the
	// policies pane's selected row is bold.
	row := -1
	for y := range 24 {
		if r, _ := c.Cell(0, y); r == '▸' {
			_, st := c.Cell(4, y)
			if st.Reverse {
				row = y
			} else {
				assert.True(t, st.Bold, "row %d: the unfocused selection is bold", y)
			}
		}
	}
	require.NotEqual(t, -1, row, "a reversed selected row")
	assert.Contains(t, c.Line(row), "idle", "the newest live attempt comes first")
}

// A notice stands in place of the key hints until replaced; a message or an
// error goes before it, and the full-screen views keep their own hints.
func TestNotice(t *testing.T) {
	const text = "demo finished: 3/3 jobs done"
	last := func(m tui.Model) string {
		lines := strings.Split(strings.TrimRight(draw(m, 80, 24), "\n"), "\n")
		return lines[len(lines)-1]
	}
	m, _ := send(loaded(), tui.Notice{Text: text})
	assert.Equal(t, text, m.Notice)
	assert.Contains(t, last(m), text)

	failing, _ := send(m, tui.StatusLoaded{Err: errors.New("read the policies: disk I/O error")})
	assert.Contains(t, last(failing), "disk I/O error", "an error goes before the notice")
	assert.NotContains(t, last(failing), text)
	detail, _ := send(m, key(tui.KeyEnter))
	assert.NotContains(t, last(detail), text)

	cleared, _ := send(m, tui.Notice{})
	assert.NotContains(t, last(cleared), text)
}
