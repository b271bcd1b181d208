package daemon

import (
	"cmp"
	"context"
	"path/filepath"
	"strings"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// How often the automatic runner update looks for a newer release: every
// runnerUpdateEvery; at once when a policy's launches become held because
// GitHub refused its runner (exit code 7), or its version's runtime end is
// past; then every runnerUpdateSoon while that lasts. runnerUpdateLook is
// how often the hold is looked for (an in-memory read); the deprecation
// schedule of the installed version is asked once per version per
// runnerScheduleEvery.
const (
	runnerUpdateEvery   = 6 * time.Hour
	runnerUpdateSoon    = time.Minute
	runnerUpdateLook    = 3 * time.Second
	runnerScheduleEvery = 6 * time.Hour
)

// runnerWatch is what the daemon knows of its installed runner beyond
// the data directory: the latest release last seen and the deprecation
// schedules asked, by version.
type runnerWatch struct {
	mu        sync.Mutex
	latest    string
	schedules map[string]schedule
	// unusedAt is when no policy of this host was found to launch the
	// installed runner: asked again only runnerUpdateSoon later, not at
	// every look (a journal read every 3 s).
	unusedAt time.Time
}

type schedule struct {
	dep     github.RunnerDeprecation
	ok      bool
	askedAt time.Time
}

// watchRunner keeps the installed runner's deprecation schedule known and,
// with Config.AutoUpdateRunner, the newest runner release installed
// (runnerpkg.Updater: on trial until one attempt proves it) until ctx ends.
func (d *Daemon) watchRunner(ctx context.Context) {
	u := runnerpkg.Updater{GitHub: d.client, DataDir: d.cfg.DataDir, Log: d.log, Keep: d.policyRunnerDirs}
	t := time.NewTicker(runnerUpdateLook)
	defer t.Stop()
	var last time.Time
	wasRefused := false
	for {
		refused := d.runnerRefused()
		if d.cfg.AutoUpdateRunner {
			due := time.Since(last)
			if last.IsZero() || due >= runnerUpdateEvery || (refused && (!wasRefused || due >= cmp.Or(d.cfg.RunnerUpdateRetry, runnerUpdateSoon))) {
				last = time.Now()
				r := u.Once(ctx, runnerUpdateEvery)
				if r.Version != "" {
					d.runner.mu.Lock()
					d.runner.latest = r.Version
					d.runner.mu.Unlock()
				}
				if r.Trial && !r.Already {
					d.supervisor().NudgeAll() // a runner on trial: a held policy may launch its proof now
				}
			}
		}
		wasRefused = refused
		d.askSchedule(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// runnerRefused reports whether a policy's launches are held because its
// runner exited 7, or the installed version's runtime end is past.
func (d *Daemon) runnerRefused() bool {
	for _, p := range d.Status().Policies {
		if strings.Contains(p.LastError, "runner version deprecated") {
			return true
		}
	}
	if rs := d.runnerStatus(); rs != nil && rs.RuntimeEnds != nil && !time.Now().Before(*rs.RuntimeEnds) {
		return true
	}
	return false
}

// askSchedule asks GitHub for the installed version's deprecation
// schedule, once per version per runnerScheduleEvery, in the scope of
// the first policy that launches it.
func (d *Daemon) askSchedule(ctx context.Context) {
	dir, err := runnerpkg.Newest(d.cfg.DataDir)
	if err != nil {
		return
	}
	version := filepath.Base(dir)
	d.runner.mu.Lock()
	s, had := d.runner.schedules[version]
	unused := d.runner.unusedAt
	d.runner.mu.Unlock()
	if had && time.Since(s.askedAt) < runnerScheduleEvery || !unused.IsZero() && time.Since(unused) < runnerUpdateSoon {
		return
	}
	scope, ok := d.runnerScope(ctx)
	if !ok {
		if ctx.Err() == nil {
			d.runner.mu.Lock()
			d.runner.unusedAt = time.Now()
			d.runner.mu.Unlock()
		}
		return
	}
	d.runner.mu.Lock()
	d.runner.unusedAt = time.Time{}
	d.runner.mu.Unlock()
	s = schedule{askedAt: time.Now()}
	dep, err := d.client.RunnerDeprecation(ctx, scope, version)
	if err == nil {
		s.dep, s.ok = dep, true
	} else if ctx.Err() != nil {
		return
	} else {
		d.log.Debug("the runner's deprecation schedule is unknown", "version", version, "err", err)
	}
	d.runner.mu.Lock()
	if d.runner.schedules == nil {
		d.runner.schedules = map[string]schedule{}
	}
	d.runner.schedules[version] = s
	d.runner.mu.Unlock()
}

// runnerScope is the scope of this host's first policy that launches the
// installed runner (no runner directory, native backend).
func (d *Daemon) runnerScope(ctx context.Context) (rm.Scope, bool) {
	ps, err := d.st.Policies(ctx)
	if err != nil {
		return rm.Scope{}, false
	}
	for _, p := range ps {
		if p.IsOwnedBy(d.host.ID) && p.RunnerDir == "" && !p.RunnerInImage() && p.Target.Scope.Name != "" {
			return p.Target.Scope, true
		}
	}
	return rm.Scope{}, false
}

// runnerStatus is Status's runner: what is installed under the data
// directory, the update on trial or failed, and the dates GitHub gave.
func (d *Daemon) runnerStatus() *reconcile.RunnerStatus {
	if d.cfg.DataDir == "" {
		return nil
	}
	rs := &reconcile.RunnerStatus{AutoUpdate: d.cfg.AutoUpdateRunner}
	if dir, err := runnerpkg.Newest(d.cfg.DataDir); err == nil {
		rs.Version = filepath.Base(dir)
	}
	if t, ok := runnerpkg.Candidate(d.cfg.DataDir); ok {
		rs.Trial, rs.TrialAttempt = t.Version, t.Attempt
	}
	if b, ok := runnerpkg.LastBad(d.cfg.DataDir); ok {
		rs.Bad = &reconcile.RunnerUpdateFailure{Version: b.Version, At: b.At, Reason: b.Reason, RetryAt: b.At.Add(runnerpkg.BadFor)}
	}
	d.runner.mu.Lock()
	rs.Latest = d.runner.latest
	s := d.runner.schedules[rs.Version]
	d.runner.mu.Unlock()
	if s.ok {
		rs.ScheduleFrom = "github"
		var end time.Time
		if !s.dep.Runtime.IsZero() {
			t := s.dep.Runtime
			rs.RuntimeEnds, end = &t, t
		}
		if !s.dep.Registration.IsZero() {
			t := s.dep.Registration
			rs.RegistrationEnds = &t
			if end.IsZero() || t.Before(end) {
				end = t
			}
		}
		if !end.IsZero() {
			days := daysUntil(time.Now(), end)
			rs.DaysLeft = &days
		}
	}
	return rs
}

// daysUntil is the whole days from now to end, rounded down (negative once
// past: -1 within the first day after).
func daysUntil(now, end time.Time) int {
	d := end.Sub(now)
	days := int(d / (24 * time.Hour))
	if d < 0 && d%(24*time.Hour) != 0 {
		days--
	}
	return days
}

// policyRunnerDirs lists the runner directories this host's policies name.
func (d *Daemon) policyRunnerDirs(ctx context.Context) ([]string, error) {
	ps, err := d.st.Policies(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range ps {
		if p.RunnerDir != "" {
			out = append(out, p.RunnerDir)
		}
	}
	return out, nil
}
