package runnerpkg

import (
	"cmp"
	"context"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// How often Watch looks for a newer release: every updateEvery; at once
// when a policy's launches become held because GitHub refused its runner
// (exit code 7), or its version's runtime end is past; then every
// Watch.RetrySoon (default updateSoon) while that lasts. updateLook is how
// often the hold is looked for (an in-memory read); the deprecation
// schedule of the installed version is asked once per version per
// scheduleEvery.
const (
	updateEvery   = 6 * time.Hour
	updateSoon    = time.Minute
	updateLook    = 3 * time.Second
	scheduleEvery = 6 * time.Hour
)

// Watch keeps the installed runner's deprecation schedule known and, with
// AutoUpdate, the newest runner release installed (Updater: on trial
// until one attempt proves it). A daemon runs one (Run) and reads it for
// its status (State). Set the fields before Run; its state outlives a Run,
// as the data directory does.
type Watch struct {
	// GitHub gives the latest release (Updater).
	GitHub Releases
	// Deprecation asks GitHub when it stops registering and running
	// version's runners in scope (zero: it did not say); nil asks nothing.
	Deprecation func(ctx context.Context, scope rm.Scope, version string) (registration, runtime time.Time, err error)
	DataDir     string
	// AutoUpdate keeps the newest release installed (`[runner]
	// auto_update`); without it Run only keeps the schedule known.
	AutoUpdate bool
	// RetrySoon is how often the update looks again while a refused
	// runner holds a policy's launches (default a minute).
	RetrySoon time.Duration
	// Host is this host: the schedule is asked in the scope of its first
	// policy that launches the installed runner.
	Host rm.HostID
	// Policies lists the policies of the journal: the runner directories
	// they name are never pruned, and Host's give the schedule's scope.
	Policies func(ctx context.Context) ([]rm.Policy, error)
	// Held reports whether a policy's launches are held because GitHub
	// refused its runner (exit code 7); nil: never.
	Held func() bool
	// OnTrial, if set, is called when a newer runner was put on trial: a
	// held policy may launch its proof now.
	OnTrial func()
	Log     *slog.Logger

	mu        sync.Mutex
	latest    string // the latest release last seen
	schedules map[string]schedule
	// unusedAt is when no policy of this host was found to launch the
	// installed runner: asked again only updateSoon later, not at every
	// look (a journal read every 3 s).
	unusedAt time.Time
}

// schedule is GitHub's word on a version's deprecation, as last asked.
type schedule struct {
	registration, runtime time.Time
	ok                    bool
	askedAt               time.Time
}

// Run keeps the schedule known and, with AutoUpdate, the newest release
// installed, until ctx ends.
func (w *Watch) Run(ctx context.Context) {
	u := Updater{GitHub: w.GitHub, DataDir: w.DataDir, Log: w.Log, Keep: w.policyRunnerDirs}
	t := time.NewTicker(updateLook)
	defer t.Stop()
	var last time.Time
	wasRefused := false
	for {
		refused := w.refused()
		if w.AutoUpdate {
			due := time.Since(last)
			if last.IsZero() || due >= updateEvery || (refused && (!wasRefused || due >= cmp.Or(w.RetrySoon, updateSoon))) {
				last = time.Now()
				r := u.Once(ctx, updateEvery)
				if r.Version != "" {
					w.mu.Lock()
					w.latest = r.Version
					w.mu.Unlock()
				}
				if r.Trial && !r.Already && w.OnTrial != nil {
					w.OnTrial()
				}
			}
		}
		wasRefused = refused
		w.askSchedule(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// refused reports whether a policy's launches are held because its
// runner exited 7, or the installed version's runtime end is past.
func (w *Watch) refused() bool {
	if w.Held != nil && w.Held() {
		return true
	}
	s := w.State()
	return !s.RuntimeEnds.IsZero() && !time.Now().Before(s.RuntimeEnds)
}

// askSchedule asks GitHub for the installed version's deprecation
// schedule, once per version per scheduleEvery, in the scope of the
// first policy that launches it.
func (w *Watch) askSchedule(ctx context.Context) {
	if w.Deprecation == nil {
		return
	}
	dir, err := Newest(w.DataDir)
	if err != nil {
		return
	}
	version := filepath.Base(dir)
	w.mu.Lock()
	s, had := w.schedules[version]
	unused := w.unusedAt
	w.mu.Unlock()
	if had && time.Since(s.askedAt) < scheduleEvery || !unused.IsZero() && time.Since(unused) < updateSoon {
		return
	}
	scope, ok := w.scope(ctx)
	if !ok {
		if ctx.Err() == nil {
			w.mu.Lock()
			w.unusedAt = time.Now()
			w.mu.Unlock()
		}
		return
	}
	w.mu.Lock()
	w.unusedAt = time.Time{}
	w.mu.Unlock()
	s = schedule{askedAt: time.Now()}
	reg, run, err := w.Deprecation(ctx, scope, version)
	if err == nil {
		s.registration, s.runtime, s.ok = reg, run, true
	} else if ctx.Err() != nil {
		return
	} else if w.Log != nil {
		w.Log.Debug("the runner's deprecation schedule is unknown", "version", version, "err", err)
	}
	w.mu.Lock()
	if w.schedules == nil {
		w.schedules = map[string]schedule{}
	}
	w.schedules[version] = s
	w.mu.Unlock()
}

// scope is the scope of this host's first policy that launches the
// installed runner (Launches).
func (w *Watch) scope(ctx context.Context) (rm.Scope, bool) {
	if w.Policies == nil {
		return rm.Scope{}, false
	}
	ps, err := w.Policies(ctx)
	if err != nil {
		return rm.Scope{}, false
	}
	for _, p := range ps {
		if p.IsOwnedBy(w.Host) && Launches(p) && p.Target.Scope.Name != "" {
			return p.Target.Scope, true
		}
	}
	return rm.Scope{}, false
}

// policyRunnerDirs lists the runner directories the policies name.
func (w *Watch) policyRunnerDirs(ctx context.Context) ([]string, error) {
	if w.Policies == nil {
		return nil, nil
	}
	ps, err := w.Policies(ctx)
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

// State is the installed runner as Watch knows it: what is under the data
// directory, the update on trial or failed, and the dates GitHub gave.
type State struct {
	// Version is the newest proven runner ("" when none is installed).
	Version string
	// Latest is the newest release as last seen ("" before a look).
	Latest string
	// Trial is the runner on trial (Version "" when none).
	Trial rm.RunnerTrial
	// Bad is the last update that failed (download, checksum, or proof)
	// while it counts; nil when none.
	Bad *rm.BadRunner
	// Scheduled: GitHub gave Version's deprecation schedule, with
	// RegistrationEnds and RuntimeEnds (zero when it named no date).
	Scheduled                     bool
	RegistrationEnds, RuntimeEnds time.Time
	// DaysLeft is whole days from now to the earlier of the two dates
	// (negative once past); nil when neither is known.
	DaysLeft *int
}

// State reads the data directory and what Run learnt.
func (w *Watch) State() State {
	var s State
	if dir, err := Newest(w.DataDir); err == nil {
		s.Version = filepath.Base(dir)
	}
	if t, ok := Candidate(w.DataDir); ok {
		s.Trial = t
	}
	if b, ok := LastBad(w.DataDir); ok {
		s.Bad = &b
	}
	w.mu.Lock()
	s.Latest = w.latest
	sch := w.schedules[s.Version]
	w.mu.Unlock()
	if !sch.ok {
		return s
	}
	s.Scheduled, s.RegistrationEnds, s.RuntimeEnds = true, sch.registration, sch.runtime
	end := s.RuntimeEnds
	if !s.RegistrationEnds.IsZero() && (end.IsZero() || s.RegistrationEnds.Before(end)) {
		end = s.RegistrationEnds
	}
	if !end.IsZero() {
		days := daysUntil(time.Now(), end)
		s.DaysLeft = &days
	}
	return s
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
