package reconcile_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// fakeInstalls is an rm.RunnerInstalls whose answers a test sets: the
// engine decides the hold, the port says which policies launch the
// installs, when their runner was put in place, and the fix.
type fakeInstalls struct {
	mu          sync.Mutex
	launches    bool
	installedAt time.Time
	trial       rm.RunnerTrial
	onTrial     bool
}

func (f *fakeInstalls) Newest() (string, error) { return "/runners/1.0.0", nil }

func (f *fakeInstalls) Trial() (rm.RunnerTrial, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.trial, f.onTrial
}

func (f *fakeInstalls) Claim(dir string, a rm.AttemptID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.trial.Attempt.IsZero() || dir != f.trial.Dir {
		return false
	}
	f.trial.Attempt = a
	return true
}

func (f *fakeInstalls) Promote(string) error { return nil }

func (f *fakeInstalls) MarkBad(version, reason string) (rm.BadRunner, error) {
	return rm.BadRunner{Version: version, Reason: reason}, nil
}

func (f *fakeInstalls) LastBad() (rm.BadRunner, bool) { return rm.BadRunner{}, false }

func (f *fakeInstalls) Launches(rm.Policy) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.launches
}

func (f *fakeInstalls) InstalledAt(rm.Policy) time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.installedAt
}

func (f *fakeInstalls) DeprecatedFix(pol rm.Policy) string { return "the fix for " + pol.Name }

func (f *fakeInstalls) put(at time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.installedAt = at
}

// A runner that exits 7 holds its policy's launches with the port's fix
// in its note, until the port says a runner was put in place after.
func TestDeprecatedRunnerHoldsUntilANewerOne(t *testing.T) {
	ins := &fakeInstalls{}
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 1), func(c *reconcile.Config) { c.Installs = ins })
	_, p := launchOne(t, e)
	p.exit(7)
	e.pass()
	assert.Empty(t, e.live(), "held")
	st := e.loop.Status()
	require.Len(t, st.Policies, 1)
	note := st.Policies[0].LastError
	assert.True(t, strings.HasPrefix(note, "runner version deprecated (exit code 7 at "), note)
	assert.True(t, strings.HasSuffix(note, "): the fix for "+e.policy.Name), note)
	assert.Contains(t, e.logs.String(), "launches paused: GitHub no longer accepts this runner version")

	e.clock.Advance(time.Second)
	e.pass()
	assert.Empty(t, e.live(), "still held")

	ins.put(e.clock.Now())
	e.clock.Advance(time.Second)
	e.pass()
	assert.Len(t, e.live(), 1, "a runner put in place after the refusal lifts the hold")
	assert.Contains(t, e.logs.String(), "a newer runner is there: launches resume")
}

// A policy that launches the installs, held by a refused runner, makes
// one launch: the one that proves the runner on trial.
func TestDeprecatedRunnerHoldLetsTheTrialProve(t *testing.T) {
	ins := &fakeInstalls{launches: true}
	e := newEnv(t, storetest.NewPolicy().Autoscale("home", 2), func(c *reconcile.Config) { c.Installs = ins })
	_, p := launchOne(t, e)
	ins.mu.Lock()
	ins.trial, ins.onTrial = rm.RunnerTrial{Version: "9.9.9", Dir: "/runners/9.9.9"}, true
	ins.mu.Unlock()
	p.exit(7)
	e.pass()
	live := e.live()
	require.Len(t, live, 1, "one launch proves the runner on trial")
	trial, _ := ins.Trial()
	assert.Equal(t, live[0].ID, trial.Attempt, "it claimed the trial")
	e.launcher.mu.Lock()
	spec := e.launcher.specs[len(e.launcher.specs)-1]
	e.launcher.mu.Unlock()
	assert.Equal(t, "/runners/9.9.9", spec.RunnerDir, "and starts from it")
	assert.Contains(t, e.loop.Status().Policies[0].LastError, "the next attempt proves runner 9.9.9")

	e.demand(2)
	e.clock.Advance(time.Second)
	e.pass()
	assert.Len(t, e.live(), 1, "the others wait for its word")
	assert.Contains(t, e.loop.Status().Policies[0].LastError, "proving runner 9.9.9 on attempt "+live[0].ID.String())
}
