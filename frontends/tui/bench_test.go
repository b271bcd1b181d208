package tui_test

import (
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
)

// busyModel is a model of a large host: 50 live attempts and a full
// history page.
func busyModel() (tui.Model, status.Status) {
	st := fixtureStatus()
	var history []rm.Attempt
	for i := range tui.HistoryLimit {
		a := fixtureHistory()[4]
		a.ID = aid(100 + i)
		a.RunnerName = rm.RunnerName(hostID, a.ID)
		a.CreatedAt = t0.Add(-time.Duration(i) * time.Minute)
		if i < 50 {
			a.State, a.Outcome, a.EndedAt = rm.StateBusy, rm.Outcome{}, time.Time{}
			st.Attempts = append(st.Attempts, status.Attempt{
				ID: a.ID, Policy: a.Policy, RunnerName: a.RunnerName, State: rm.StateBusy,
				CreatedAt: a.CreatedAt, RSSBytes: 500 * mib, CPUMillicores: 900,
			})
		}
		history = append(history, a)
	}
	m := tui.NewModel(80, 24, t0)
	m, _ = tui.Update(m, tui.StatusLoaded{Status: st})
	m, _ = tui.Update(m, tui.AttemptsLoaded{Attempts: history})
	return m, st
}

func BenchmarkDraw(b *testing.B) {
	m, _ := busyModel()
	for _, size := range []struct{ w, h int }{{80, 24}, {200, 60}} {
		c := tui.NewTextCanvas(size.w, size.h)
		b.Run(itoa(size.w)+"x"+itoa(size.h), func(b *testing.B) {
			for b.Loop() {
				tui.Draw(c, m)
			}
		})
	}
}

// BenchmarkUpdateStatus is the work of one refresh: a new snapshot taken
// into a model holding a full history.
func BenchmarkUpdateStatus(b *testing.B) {
	m, st := busyModel()
	i := 0
	for b.Loop() {
		i++
		st.At = t0.Add(time.Duration(i) * time.Second)
		m, _ = tui.Update(m, tui.StatusLoaded{Status: st})
	}
}

func BenchmarkUpdateKey(b *testing.B) {
	m, _ := busyModel()
	down, up := tui.Key{Code: tui.KeyDown}, tui.Key{Code: tui.KeyUp}
	for b.Loop() {
		m, _ = tui.Update(m, down)
		m, _ = tui.Update(m, up)
	}
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}
