package doctor_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// scaleSet is the host's policy's scale set at the fake GitHub, as the
// daemon would open it.
func (h host) scaleSet(t *testing.T) *github.ScaleSetTarget {
	t.Helper()
	c, err := h.setup().GitHub()
	require.NoError(t, err)
	ss, err := github.NewScaleSetTarget(t.Context(), c, h.policy.Target, github.ScaleSetOptions{
		Owner: "box", DisableUpdate: true, NamePrefix: rm.RunnerNamePrefix(h.host.ID),
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ss.Close(context.Background()) })
	return ss
}

// attempt records an attempt of the host's policy in state s, with the
// host's runner name unless other names another host's, registered in
// the scale set when register.
func (h host) attempt(t *testing.T, ss *github.ScaleSetTarget, s rm.AttemptState, register bool, edit func(*storetest.AttemptBuilder)) rm.Attempt {
	t.Helper()
	b := storetest.NewAttempt().Policy(h.policy.ID).Host(h.host.ID).State(s)
	if edit != nil {
		edit(b)
	}
	a := b.Build()
	if register {
		jit, err := ss.JITConfig(t.Context(), a.RunnerName)
		require.NoError(t, err)
		a.GitHubRunnerID = jit.RunnerID
	}
	require.NoError(t, h.st.RecordAttempt(t.Context(), a))
	return a
}

func (h host) registered(name string) bool {
	return slices.ContainsFunc(h.srv.Runners(), func(r fakegithub.RunnerRecord) bool { return r.Name == name })
}

// scaleSetCheck is the scale-set registrations check of a run.
func scaleSetCheck(t *testing.T, checks []doctor.Check) doctor.Check {
	t.Helper()
	var found []doctor.Check
	for _, c := range byName(checks)["registrations"] {
		if assert.Contains(t, c.Detail, `scale set "home"`, "a scale-set policy has no REST check: %s", c) {
			found = append(found, c)
		}
	}
	require.Len(t, found, 1, "%v", checks)
	return found[0]
}

func TestScaleSetLeftovers(t *testing.T) {
	h := newHost(t)
	ss := h.scaleSet(t)

	ended := h.attempt(t, ss, rm.StateFinished, true, nil)
	h.attempt(t, ss, rm.StateFailed, false, nil) // never registered: looked up, not found
	crashed := h.attempt(t, ss, rm.StateRegistering, true, nil)
	exited := exec.Command("true")
	require.NoError(t, exited.Run())
	dead := h.attempt(t, ss, rm.StateIdle, true, func(b *storetest.AttemptBuilder) {
		b.ProcessID(exited.Process.Pid).ProcessStart(1)
	})
	start, err := platform.StartTime(os.Getpid())
	require.NoError(t, err)
	running := h.attempt(t, ss, rm.StateIdle, true, func(b *storetest.AttemptBuilder) {
		b.ProcessID(os.Getpid()).ProcessStart(start)
	})
	old := h.attempt(t, ss, rm.StateFinished, true, func(b *storetest.AttemptBuilder) {
		b.CreatedAt(storetest.Now().Add(-8 * 24 * time.Hour))
	})
	other := h.attempt(t, ss, rm.StateFinished, true, func(b *storetest.AttemptBuilder) { b.Host(rm.NewHostID()) })
	restCalls := h.srv.CallsREST()

	checks, err := doctor.Run(t.Context(), h.setup())
	require.NoError(t, err)
	c := scaleSetCheck(t, checks)
	assert.Equal(t, doctor.Warn, c.Status)
	assert.Equal(t, `registrations of policy home (scale set "home" in repo:octo/app): looked up 4 runner names at the Actions service: 3 leftover`, c.Detail)
	assert.Contains(t, c.Hint, "doctor --fix")
	for _, a := range []rm.Attempt{ended, crashed, dead} {
		assert.Contains(t, c.Hint, a.RunnerName)
	}
	assert.Contains(t, c.Hint, dead.RunnerName+" (live in the journal, its runner process gone)")
	for _, a := range []rm.Attempt{running, old, other} {
		assert.NotContains(t, c.Hint, a.RunnerName)
	}
	// The REST calls: /rate_limit, the scope's runner downloads (twice:
	// credentials and runner version) and one registration token per
	// scale-set client; no runner list.
	assert.Zero(t, h.srv.Calls(fakegithub.RouteRepoRunners), "no REST runner list for a scale-set policy")
	t.Logf("REST calls of one run: %d", h.srv.CallsREST()-restCalls)

	t.Run("DaemonRunning", func(t *testing.T) {
		s := h.setup()
		s.Fix = true
		s.DaemonRunning = func(context.Context) (bool, error) { return true, nil }
		checks, err := doctor.Run(t.Context(), s)
		require.NoError(t, err)
		c := scaleSetCheck(t, checks)
		assert.Equal(t, doctor.Warn, c.Status)
		assert.Contains(t, c.Detail, "looked up 3 runner names", "the crashed registering attempt may be the daemon's")
		assert.Contains(t, c.Hint, "the running daemon")
		assert.True(t, h.registered(ended.RunnerName), "nothing is removed while the daemon runs")
	})

	s := h.setup()
	s.Fix = true
	checks, err = doctor.Run(t.Context(), s)
	require.NoError(t, err)
	c = scaleSetCheck(t, checks)
	assert.Equal(t, doctor.OK, c.Status, "%s", c)
	assert.Contains(t, c.Detail, "3 leftover: removed 3")
	for _, a := range []rm.Attempt{ended, crashed, dead} {
		assert.False(t, h.registered(a.RunnerName), a.RunnerName)
	}
	for _, a := range []rm.Attempt{running, old, other} {
		assert.True(t, h.registered(a.RunnerName), "not looked up, not removed: %s", a.RunnerName)
	}

	checks, err = doctor.Run(t.Context(), h.setup())
	require.NoError(t, err)
	c = scaleSetCheck(t, checks)
	assert.Equal(t, doctor.OK, c.Status)
	assert.Equal(t, `registrations of policy home (scale set "home" in repo:octo/app): looked up 4 runner names at the Actions service: 0 leftover`+
		` (a registration whose name the journal never wrote cannot be found: the Actions service lists no runners)`, c.Detail)
}

// A leftover registration whose runner runs a job (here a fake runner the
// scale set's listener assigned one) is reported and not removed: GitHub
// refuses.
func TestScaleSetLeftoverBusy(t *testing.T) {
	h := newHost(t)
	ss := h.scaleSet(t)
	ctx, cancel := context.WithCancel(t.Context())
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		_ = ss.Watch(ctx, func() int { return 1 }, func(rm.Demand) {})
	}()
	a := storetest.NewAttempt().Policy(h.policy.ID).Host(h.host.ID).State(rm.StateFinished).Build()
	jit, err := ss.JITConfig(t.Context(), a.RunnerName)
	require.NoError(t, err)
	require.NoError(t, h.st.RecordAttempt(t.Context(), a))
	root := t.TempDir()
	ran := make(chan int)
	go func() {
		ran <- fakerunner.Run(ctx, fakerunner.Config{Root: root, JITConfig: jit.Encoded, Stdout: io.Discard})
	}()
	t.Cleanup(func() { cancel(); <-ran; <-watched })
	h.srv.EnqueueJob(fakegithub.JobSpec{Repo: "octo/app", Labels: []string{"home"}, Duration: time.Hour})
	wctx, wcancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer wcancel()
	require.NoError(t, h.srv.WaitFor(wctx, func() bool {
		return slices.ContainsFunc(h.srv.Runners(), func(r fakegithub.RunnerRecord) bool { return r.Name == a.RunnerName && r.Busy })
	}), "jobs %+v runners %+v", h.srv.Jobs(), h.srv.Runners())

	s := h.setup()
	s.Fix = true
	checks, err := doctor.Run(t.Context(), s)
	require.NoError(t, err)
	c := scaleSetCheck(t, checks)
	assert.Equal(t, doctor.Warn, c.Status)
	assert.Contains(t, c.Detail, "1 leftover: removed 0")
	assert.Equal(t, "GitHub refuses to remove a runner running a job; it goes when the job ends: "+a.RunnerName, c.Hint)
	assert.True(t, h.registered(a.RunnerName))
}

// A classic policy's leftovers are found in GitHub's REST runner list, as
// before, whatever the journal wrote; a scale-set policy beside it is
// looked up at the Actions service.
func TestClassicLeftovers(t *testing.T) {
	h := newHost(t)
	classic := storetest.NewPolicy().Name("gpu").Repository("octo/app").Host(h.host.ID).Labels("gpu").RunnerDir(h.policy.RunnerDir).Build()
	require.NoError(t, h.st.InsertPolicy(t.Context(), classic))
	c, err := h.setup().GitHub()
	require.NoError(t, err)
	prefix := rm.RunnerNamePrefix(h.host.ID)
	ct, err := github.NewClassicTarget(c, classic.Target, github.ClassicOptions{NamePrefix: prefix})
	require.NoError(t, err)
	_, err = ct.JITConfig(t.Context(), prefix+"unjournaled")
	require.NoError(t, err)

	checks, err := doctor.Run(t.Context(), h.setup())
	require.NoError(t, err)
	regs := byName(checks)["registrations"]
	require.Len(t, regs, 2, "%v", regs)
	assert.Equal(t, doctor.Check{Name: "registrations", Status: doctor.Warn, Detail: "registrations of repo:octo/app: 1 of this host, 1 leftover",
		Hint: "remove them with doctor --fix (daemon stopped): " + prefix + "unjournaled"}, regs[0])
	assert.Equal(t, doctor.OK, regs[1].Status)
	assert.Contains(t, regs[1].Detail, `scale set "home"`)
	assert.Equal(t, 1, h.srv.Calls(fakegithub.RouteRepoRunners))
	assert.Empty(t, h.srv.ScaleSets(), "doctor creates no scale set")

	s := h.setup()
	s.Fix = true
	checks, err = doctor.Run(t.Context(), s)
	require.NoError(t, err)
	assert.Equal(t, "registrations of repo:octo/app: 1 of this host, 1 leftover: removed 1", byName(checks)["registrations"][0].Detail)
	assert.False(t, h.registered(prefix+"unjournaled"))
}

// One run looks up at most 200 names of a policy: the newest.
func TestScaleSetLookupsBounded(t *testing.T) {
	h := newHost(t)
	ss := h.scaleSet(t)
	base := storetest.Now().Add(-time.Hour)
	var newest rm.Attempt
	for i := range 205 {
		newest = h.attempt(t, ss, rm.StateFinished, i == 204, func(b *storetest.AttemptBuilder) {
			b.CreatedAt(base.Add(time.Duration(i) * time.Second))
		})
	}
	began := time.Now()
	checks, err := doctor.Run(t.Context(), h.setup())
	require.NoError(t, err)
	t.Logf("a run with 200 lookups took %v", time.Since(began))
	c := scaleSetCheck(t, checks)
	assert.Equal(t, `registrations of policy home (scale set "home" in repo:octo/app): looked up 200 runner names at the Actions service`+
		` (the bound: ended attempts older than the newest 200 were not): 1 leftover`, c.Detail)
	assert.Contains(t, c.Hint, newest.RunnerName)
	assert.Equal(t, 200, h.srv.Calls(fakegithub.RouteAgentByName))
}
