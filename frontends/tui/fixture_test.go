package tui_test

import (
	"fmt"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/tui"
	"github.com/runner-manager/runner-manager/status"
)

// t0 is the fixtures' "now".
var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

const gib = 1 << 30
const mib = 1 << 20

var hostID = mustHost("4b8c2d6e9f1g3h5j7k9m2n4p60")

func mustHost(s string) rm.HostID {
	id, err := rm.ParseHostID(s)
	if err != nil {
		panic(err)
	}
	return id
}

// aid is the fixtures' attempt id number n.
func aid(n int) rm.AttemptID {
	id, err := rm.ParseAttemptID(fmt.Sprintf("q7zk3m5x9p2w4r6t8v0b1c%03d0", n))
	if err != nil {
		panic(err)
	}
	return id
}

// pid is the fixtures' policy id number n.
func pid(n int) rm.PolicyID {
	id, err := rm.ParsePolicyID(fmt.Sprintf("p0a1b2c3d4e5f6g7h8j9k0m%02d0", n))
	if err != nil {
		panic(err)
	}
	return id
}

var (
	polHome = pid(1)
	polGPU  = pid(2)
	polDocs = pid(3)
)

// hostSpares is the fixture host's bound on warm spares.
var hostSpares = 1

func at(hh, mm, ss int) time.Time { return time.Date(2025, 6, 1, hh, mm, ss, 0, time.UTC) }

// fixtureStatus is a busy host: three policies (one paused), four live
// attempts.
func fixtureStatus() status.Status {
	return status.Status{
		At:   t0,
		Host: rm.Host{ID: hostID, Name: "build-01", MemoryBytes: 16 * gib, CPUs: 8, OS: "linux", Arch: "amd64"},
		Memory: status.Memory{
			TotalBytes: 16 * gib, AvailableBytes: 9*gib + 512*mib, ReserveBytes: 2 * gib,
			CommittedBytes: 5 * gib, DiskFreeBytes: 120 * gib, DiskFloorBytes: 10 * gib, MaxSpares: &hostSpares,
		},
		Policies: []status.Policy{
			{ID: polHome, Name: "home", Target: "repo:octo/app group=Default scale-set=home", Mode: "scale-set",
				Live: 3, Idle: 1, Busy: 2, MinIdle: 1, Max: 4, Demand: 3, Admitted: 4,
				Spares: 1, SpareTarget: 2, SpareAuto: true, SpareCap: 8, Boot: 2300 * time.Millisecond,
				SpareNote: "spares: the host keeps 1 warm spares at most"},
			{ID: polGPU, Name: "gpu", Target: "org:acme group=Default labels=gpu,linux", Mode: "classic", Paused: true,
				Max: 2, Demand: 1, LastRefusal: "memory: needs 6.0G, 2.1G free"},
			{ID: polDocs, Name: "docs", Target: "repo:octo/docs group=Default scale-set=docs", Mode: "scale-set",
				Live: 1, Busy: 1, Max: 2, Demand: 1, Admitted: 1, SpareTarget: 1, SpareCap: 1},
		},
		Attempts: []status.Attempt{
			{ID: aid(1), Policy: polHome, RunnerName: rm.RunnerName(hostID, aid(1)), State: rm.StateBusy, Job: &rm.Job{ID: "j1", Name: "ci / build (linux)"},
				CreatedAt: at(11, 57, 10), RSSBytes: 1200 * mib, PeakRSSBytes: 1536 * mib, CPUMillicores: 1850},
			{ID: aid(2), Policy: polHome, RunnerName: rm.RunnerName(hostID, aid(2)), State: rm.StateBusy, Job: &rm.Job{ID: "j2", Name: "ci / test"},
				CreatedAt: at(11, 58, 30), RSSBytes: 700 * mib, PeakRSSBytes: 900 * mib, CPUMillicores: 950},
			{ID: aid(3), Policy: polHome, RunnerName: rm.RunnerName(hostID, aid(3)), State: rm.StateIdle,
				CreatedAt: at(11, 59, 40), RSSBytes: 120 * mib, PeakRSSBytes: 130 * mib, CPUMillicores: 10},
			{ID: aid(4), Policy: polDocs, RunnerName: rm.RunnerName(hostID, aid(4)), State: rm.StateBusy, Job: &rm.Job{ID: "j4", Name: "pages / deploy"},
				CreatedAt: at(11, 59, 0), RSSBytes: 300 * mib, PeakRSSBytes: 350 * mib, CPUMillicores: 400},
		},
		Budget:   rm.Budget{Limit: 5000, Remaining: 4821, Used: 179, Reset: at(12, 40, 0), SeenAt: t0},
		Refusals: map[string]int{"memory": 3},
	}
}

func exit(c int) *int { return &c }

// fixtureHistory is the journal's view: the live attempts and two ended.
func fixtureHistory() []rm.Attempt {
	a1 := rm.Attempt{ID: aid(1), Policy: polHome, State: rm.StateBusy, RunnerName: rm.RunnerName(hostID, aid(1)),
		Job:       rm.Job{ID: "0f8fad5b-d9cb-469f-a165-70867728950e", RunID: 123, Workflow: "ci", Name: "build (linux)"},
		CreatedAt: at(11, 57, 10), RegisterAt: at(11, 57, 10).Add(200 * time.Millisecond),
		StartedAt: at(11, 57, 11).Add(300 * time.Millisecond), IdleAt: at(11, 57, 14), BusyAt: at(11, 57, 20),
	}
	a2 := rm.Attempt{ID: aid(2), Policy: polHome, State: rm.StateBusy, RunnerName: rm.RunnerName(hostID, aid(2)),
		Job:       rm.Job{ID: "457", Number: 457, RunID: 123, Workflow: "ci", Name: "test"},
		CreatedAt: at(11, 58, 30), RegisterAt: at(11, 58, 30), StartedAt: at(11, 58, 31), BusyAt: at(11, 58, 40)}
	a3 := rm.Attempt{ID: aid(3), Policy: polHome, State: rm.StateIdle, RunnerName: rm.RunnerName(hostID, aid(3)),
		CreatedAt: at(11, 59, 40), RegisterAt: at(11, 59, 40), StartedAt: at(11, 59, 41), IdleAt: at(11, 59, 45)}
	a4 := rm.Attempt{ID: aid(4), Policy: polDocs, State: rm.StateBusy, RunnerName: rm.RunnerName(hostID, aid(4)),
		Job:       rm.Job{ID: "900", Number: 900, RunID: 77, Workflow: "pages", Name: "deploy"},
		CreatedAt: at(11, 59, 0), RegisterAt: at(11, 59, 0), StartedAt: at(11, 59, 1), BusyAt: at(11, 59, 5)}
	a5 := rm.Attempt{ID: aid(5), Policy: polHome, State: rm.StateFinished, RunnerName: rm.RunnerName(hostID, aid(5)),
		Job:       rm.Job{ID: "455", Number: 455, RunID: 122, Workflow: "ci", Name: "lint"},
		ExitCode:  exit(0),
		Usage:     rm.AttemptUsage{PeakRSSBytes: 800 * mib, CPUAvgMillicores: 600, CPUPeakMillicores: 1900, Samples: 120},
		Outcome:   rm.Outcome{Kind: rm.CompletedJob},
		CreatedAt: at(11, 40, 0), RegisterAt: at(11, 40, 0), StartedAt: at(11, 40, 1), BusyAt: at(11, 40, 9), EndedAt: at(11, 44, 0)}
	a6 := rm.Attempt{ID: aid(6), Policy: polGPU, State: rm.StateFailed, RunnerName: rm.RunnerName(hostID, aid(6)),
		Job:         rm.Job{ID: "901", Number: 901, RunID: 78, Workflow: "夜間", Name: "テスト"}, // wide runes
		Outcome:     rm.FailedWith(rm.StartTimeout, "no runner online after 5m"),
		LastMessage: "killed the process tree after the start timeout",
		CreatedAt:   at(11, 30, 0), RegisterAt: at(11, 30, 0), StartedAt: at(11, 30, 2), EndedAt: at(11, 35, 2)}
	return []rm.Attempt{a3, a4, a2, a1, a5, a6}
}

// loaded is a model that has read the fixtures once, at 80×24.
func loaded() tui.Model {
	m := tui.NewModel(80, 24, t0)
	m, _ = tui.Update(m, tui.StatusLoaded{Status: fixtureStatus()})
	m, _ = tui.Update(m, tui.AttemptsLoaded{Attempts: fixtureHistory()})
	return m
}

// send applies events in order and returns the model and every command.
func send(m tui.Model, evs ...tui.Event) (tui.Model, []tui.Command) {
	var all []tui.Command
	for _, ev := range evs {
		var cmds []tui.Command
		m, cmds = tui.Update(m, ev)
		all = append(all, cmds...)
	}
	return m, all
}

func runes(s string) []tui.Event {
	evs := make([]tui.Event, 0, len(s))
	for _, r := range s {
		evs = append(evs, tui.Key{Code: tui.KeyRune, Rune: r})
	}
	return evs
}

func key(c tui.KeyCode) tui.Event { return tui.Key{Code: c} }
