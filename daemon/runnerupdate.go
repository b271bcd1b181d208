package daemon

import (
	"context"
	"strings"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/status"
)

// newRunnerWatch wires the runner package's watch (runnerpkg.Watch: the
// installed runner's deprecation schedule and, with
// Config.AutoUpdateRunner, its automatic update) to this daemon.
func (d *Daemon) newRunnerWatch() *runnerpkg.Watch {
	return &runnerpkg.Watch{
		GitHub: d.client, DataDir: d.cfg.DataDir, AutoUpdate: d.cfg.AutoUpdateRunner,
		RetrySoon: d.cfg.RunnerUpdateRetry, Host: d.host.ID, Policies: d.st.Policies, Log: d.log,
		Deprecation: func(ctx context.Context, scope rm.Scope, version string) (time.Time, time.Time, error) {
			dep, err := d.client.RunnerDeprecation(ctx, scope, version)
			return dep.Registration, dep.Runtime, err
		},
		Held:    d.runnerHeld,
		OnTrial: func() { d.supervisor().NudgeAll() },
	}
}

// runnerHeld reports whether a policy's launches are held because its
// runner exited 7 (the engine's note says so).
func (d *Daemon) runnerHeld() bool {
	for _, p := range d.Status().Policies {
		if strings.Contains(p.LastError, "runner version deprecated") {
			return true
		}
	}
	return false
}

// runnerStatus is Status's runner: the runner watch's state.
func (d *Daemon) runnerStatus() *status.Runner {
	if d.cfg.DataDir == "" {
		return nil
	}
	s := d.runner.State()
	rs := &status.Runner{AutoUpdate: d.cfg.AutoUpdateRunner, Version: s.Version, Latest: s.Latest,
		Trial: s.Trial.Version, TrialAttempt: s.Trial.Attempt, DaysLeft: s.DaysLeft}
	if b := s.Bad; b != nil {
		rs.Bad = &status.RunnerUpdateFailure{Version: b.Version, At: b.At, Reason: b.Reason, RetryAt: b.RetryAt}
	}
	if s.Scheduled {
		rs.ScheduleFrom = "github"
		if t := s.RuntimeEnds; !t.IsZero() {
			rs.RuntimeEnds = &t
		}
		if t := s.RegistrationEnds; !t.IsZero() {
			rs.RegistrationEnds = &t
		}
	}
	return rs
}
