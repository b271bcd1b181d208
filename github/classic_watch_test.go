package github_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strconv"
	"testing"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// routeRepoJob is the fake's route of GET .../actions/jobs/{job_id}.
const routeRepoJob = "GET /repos/{owner}/{repo}/actions/jobs/{job_id}"

// listCalls counts the run lists the fake answered.
func listCalls(env *fakeEnv) int { return env.fake.Calls(fakegithub.RouteRepoRuns) }

// TestClassicTargetsShareOnePoll: two label sets of one repository poll it
// once between them, and each is told only its own jobs.
func TestClassicTargetsShareOnePoll(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	gpu := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	cpu := newClassic(t, env, labelTarget(t, repoScope(t), "", "cpu"), github.ClassicOptions{PollInterval: time.Hour})
	for range 3 {
		env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}})
	}
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"cpu"}})

	gl, _ := watch(t, gpu, fixed(10))
	require.Eventually(t, gl.wanted(3), 5*time.Second, 10*time.Millisecond)
	cl, _ := watch(t, cpu, fixed(10))
	require.Eventually(t, cl.wanted(1), 5*time.Second, 10*time.Millisecond, "a target that joins learns the figure at once")
	assert.Equal(t, 3, listCalls(env), "one poll: queued, in progress, completed lately")
	assert.Equal(t, 4, env.fake.Calls(fakegithub.RouteRunJobs), "each run's jobs read once")

	// A nudge of either target polls once for both.
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"cpu"}})
	gpolls, cpolls := gl.count(), cl.count()
	cpu.Nudge()
	require.Eventually(t, cl.wanted(2), 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return gl.count() > gpolls }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 6, listCalls(env), "one more poll, not two")
	assert.Equal(t, 5, env.fake.Calls(fakegithub.RouteRunJobs), "only the new run's jobs are read")
	assert.Equal(t, cpolls+1, cl.count())
	d, _ := gl.last()
	assert.Equal(t, 3, d.Wanted)

	// Unchanged: revalidated, free.
	before := env.remaining()
	gpu.Nudge()
	require.Eventually(t, func() bool { return listCalls(env) == 9 }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return gl.count() > gpolls+1 }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, before, env.remaining(), "a poll of an unchanged repository costs no quota")
}

// TestClassicQueuedRunsReadAsNeeded: with more queued than the targets can
// run, a poll reads the newest queued runs only until each target knows of
// enough work to keep launching, and polls again at the busy interval.
func TestClassicQueuedRunsReadAsNeeded(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour, BusyPollInterval: time.Hour})
	for range 30 {
		env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})
	}
	log, _ := watch(t, ct, fixed(2))
	require.Eventually(t, log.wanted(6), 5*time.Second, 10*time.Millisecond, "2×2+2 jobs known")
	assert.Equal(t, 6, env.fake.Calls(fakegithub.RouteRunJobs), "6 runs read, not 30")
}

// TestClassicEvidenceOnFirstPoll: a manager that starts after its runners
// took jobs (one still running, one done) is told on its first report
// which runner ran which job.
func TestClassicEvidenceOnFirstPoll(t *testing.T) {
	if testing.Short() {
		t.Skip("runs fake runners")
	}
	install := githubtest.BuildFakeRunner(t)
	env := newFakeEnv(t, "PAT")
	ct := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	m := &miniManager{t: t, target: ct, install: install, exited: map[*exec.Cmd]chan struct{}{}}
	done := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}, Duration: 10 * time.Millisecond})
	jit, err := ct.JITConfig(t.Context(), prefix+"done")
	require.NoError(t, err)
	m.launch(jit)
	require.NoError(t, env.fake.WaitFor(waitCtx(t, 30*time.Second), func() bool {
		j, _ := env.fake.Job(done)
		return j.Status == "completed"
	}))
	running := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}, Duration: 8 * time.Second}) // still running at the first poll, even on a loaded machine
	jit2, err := ct.JITConfig(t.Context(), prefix+"running")
	require.NoError(t, err)
	m.launch(jit2)
	require.NoError(t, env.fake.WaitFor(waitCtx(t, 30*time.Second), func() bool {
		j, _ := env.fake.Job(running)
		return j.Status == "in_progress"
	}))
	t.Cleanup(func() {
		// The running job ends on its own; its runner exits with it.
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		require.NoError(t, env.fake.WaitJobsCompleted(ctx))
		m.drain(ctx)
	})

	log, _ := watch(t, ct, fixed(4))
	require.Eventually(t, func() bool { return log.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	first, _ := log.last()
	assert.Equal(t, 1, first.Wanted, "the running job, on our runner")
	byJob := map[int64][]rm.JobEvent{}
	for _, e := range first.Events {
		byJob[e.JobNumber] = append(byJob[e.JobNumber], e)
	}
	require.Len(t, byJob[running], 1)
	assert.Equal(t, strconv.FormatInt(running, 10), byJob[running][0].JobID, "a classic job's id is its REST number")
	assert.Equal(t, rm.JobStarted, byJob[running][0].Kind)
	assert.Equal(t, prefix+"running", byJob[running][0].RunnerName)
	assert.Equal(t, jit2.RunnerID, byJob[running][0].RunnerID)
	completed := eventsOf(byJob[done], rm.JobCompleted)
	require.Len(t, completed, 1, "%v", first.Events)
	assert.Equal(t, prefix+"done", completed[0].RunnerName)
	assert.Equal(t, "success", completed[0].Result)

	// A second target of the repository joining later is told too.
	other := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	ol, _ := watch(t, other, fixed(4))
	require.Eventually(t, func() bool { return ol.count() > 0 }, 5*time.Second, 10*time.Millisecond)
	assert.Len(t, eventsOf(ol.events(), rm.JobCompleted), 1)
	assert.Len(t, eventsOf(ol.events(), rm.JobStarted), 2)
}

// TestClassicOrgWebhooksVerified: for an organization, a webhook names a
// job to look at; only what the API says of it counts. A replay (a signed
// payload under a new delivery id) of a job that is over, a job that does
// not exist, or a payload claiming labels the job does not have add no
// demand.
func TestClassicOrgWebhooksVerified(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	org, err := rm.Organization("octo-org")
	require.NoError(t, err)
	ct := newClassic(t, env, labelTarget(t, org, "", "gpu"), github.ClassicOptions{PollInterval: time.Hour, BusyPollInterval: time.Hour})
	log, _ := watch(t, ct, fixed(5))
	require.Eventually(t, log.wanted(0), 5*time.Second, 10*time.Millisecond)

	ev := func(delivery string, id int64, labels ...string) github.WorkflowJobEvent {
		return github.WorkflowJobEvent{Delivery: delivery, Action: "queued", JobID: id, Repository: fakeRepo, Organization: "octo-org", Labels: labels}
	}
	ours := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}})
	theirs := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"windows"}})

	polls := log.count()
	ct.Notify(ev("d1", ours, "self-hosted", "gpu"))
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, env.fake.Calls(routeRepoJob), "the job is read from the API")
	assert.Greater(t, log.count(), polls)

	for i, forged := range []github.WorkflowJobEvent{
		ev("d2", ours, "self-hosted", "gpu"), // the same job again, new delivery id
		ev("d3", 987654, "gpu"),              // no such job
		ev("d4", theirs, "gpu"),              // labels the job does not have
	} {
		polls := log.count()
		ct.Notify(forged)
		require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond, "delivery %d", i)
		d, _ := log.last()
		assert.Equal(t, 1, d.Wanted, "delivery %s adds no demand", forged.Delivery)
	}

	// Tracked jobs are re-read until they complete: unchanged, for free.
	before := env.remaining()
	polls = log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, before, env.remaining(), "an unchanged job is revalidated for free")
}

// TestClassicWebhookReplayAddsNoDemand: an organization target fed by the
// real webhook receiver; once its job completed, the queued delivery
// replayed (same signed body, new delivery id) leaves the demand at 0.
func TestClassicWebhookReplayAddsNoDemand(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fake runner")
	}
	install := githubtest.BuildFakeRunner(t)
	env := newFakeEnv(t, "PAT")
	org, err := rm.Organization("octo-org")
	require.NoError(t, err)
	ct := hookedClassic(t, env, org, github.ClassicOptions{PollInterval: time.Hour, BusyPollInterval: time.Hour})
	log, _ := watch(t, ct, fixed(2))
	require.Eventually(t, log.wanted(0), 5*time.Second, 10*time.Millisecond)

	id := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}, Duration: 10 * time.Millisecond})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "the queued webhook, verified")

	m := &miniManager{t: t, target: ct, install: install, exited: map[*exec.Cmd]chan struct{}{}}
	m.registerAndLaunch(prefix + "hooked")
	require.Eventually(t, func() bool {
		return len(eventsOf(log.events(), rm.JobCompleted)) == 1
	}, 30*time.Second, 10*time.Millisecond, "the completed webhook nudges a look that finds it done")
	d, _ := log.last()
	assert.Equal(t, 0, d.Wanted)
	assert.Equal(t, prefix+"hooked", eventsOf(log.events(), rm.JobCompleted)[0].RunnerName)

	var queued string
	for _, dl := range env.fake.Deliveries() {
		if dl.JobID == id && dl.Action == "queued" {
			queued = dl.ID
		}
	}
	require.NotEmpty(t, queued)
	polls := log.count()
	replay, err := env.fake.ReplayWebhook(t.Context(), queued)
	require.NoError(t, err)
	for _, dl := range env.fake.Deliveries() {
		if dl.ID == replay {
			assert.Equal(t, http.StatusOK, dl.Status, "the receiver took the replay (its signature is valid)")
		}
	}
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	d, _ = log.last()
	assert.Equal(t, 0, d.Wanted, "a replayed webhook adds no demand")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.drain(ctx)
}

// TestClassicRepoWebhooksSpareReads: a repository target fed by the real
// webhook receiver is told a job's start and end the moment the webhooks
// come, and reads the run's jobs once (for its labels, while queued), not
// again for its runner or its end; what a webhook says of a job the
// watcher does not hold, or a replay, changes nothing.
func TestClassicRepoWebhooksSpareReads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fake runner")
	}
	install := githubtest.BuildFakeRunner(t)
	env := newFakeEnv(t, "PAT")
	ct := hookedClassic(t, env, repoScope(t), github.ClassicOptions{PollInterval: time.Hour, BusyPollInterval: time.Hour})
	// The job's queued webhook comes before anyone watches (it nudges
	// nobody), so that the first poll is the only one until a nudge.
	id := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}, Duration: 300 * time.Millisecond})
	require.NoError(t, env.fake.WaitFor(waitCtx(t, 10*time.Second), func() bool { d := env.fake.Deliveries(); return len(d) == 1 && d[0].Status != 0 }))
	log, _ := watch(t, ct, fixed(2))
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)
	require.Equal(t, 1, env.fake.Calls(fakegithub.RouteRunJobs), "the queued run is read for its labels")
	lists := listCalls(env)

	m := &miniManager{t: t, target: ct, install: install, exited: map[*exec.Cmd]chan struct{}{}, quiet: true}
	jit := m.registerAndLaunch(prefix + "hooked")
	require.Eventually(t, func() bool {
		return len(eventsOf(log.events(), rm.JobCompleted)) == 1
	}, 30*time.Second, 10*time.Millisecond, "the completed webhook is taken")
	started := eventsOf(log.events(), rm.JobStarted)
	require.Len(t, started, 1)
	assert.Equal(t, prefix+"hooked", started[0].RunnerName)
	assert.Equal(t, jit.RunnerID, started[0].RunnerID)
	done := eventsOf(log.events(), rm.JobCompleted)[0]
	assert.Equal(t, id, done.JobNumber)
	assert.Equal(t, strconv.FormatInt(id, 10), done.JobID)
	assert.Equal(t, "success", done.Result)
	assert.Equal(t, prefix+"hooked", done.RunnerName)
	d, _ := log.last()
	assert.Equal(t, 0, d.Wanted)
	assert.Equal(t, lists, listCalls(env), "the start and the end need no poll")
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteRunJobs))

	// A poll later: the run left the lists, its job known done: no read.
	polls := log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return listCalls(env) > lists }, 5*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, env.fake.Calls(fakegithub.RouteRunJobs), "a run known done is not read")
	assert.Len(t, eventsOf(log.events(), rm.JobCompleted), 1, "told once")

	// Replays of every delivery of the job: nothing new.
	for _, dl := range env.fake.Deliveries() {
		if dl.JobID == id && dl.ReplayOf == "" {
			_, err := env.fake.ReplayWebhook(t.Context(), dl.ID)
			require.NoError(t, err)
		}
	}
	polls = log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	d, _ = log.last()
	assert.Equal(t, 0, d.Wanted, "replayed webhooks add no demand")
	assert.Len(t, eventsOf(log.events(), rm.JobStarted), 1)
	assert.Len(t, eventsOf(log.events(), rm.JobCompleted), 1)

	// A job started before the watcher held it (never read queued): the
	// webhook is not taken on its word, it only nudges; the poll reads the
	// run and tells its runner.
	env.fake.DeliverWebhooks("", "")
	unseen := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}, Duration: 2 * time.Second})
	m.registerAndLaunch(prefix + "unseen")
	require.NoError(t, env.fake.WaitFor(waitCtx(t, 30*time.Second), func() bool {
		j, _ := env.fake.Job(unseen)
		return j.Status == "in_progress"
	}))
	reads := env.fake.Calls(fakegithub.RouteRunJobs)
	ct.Notify(github.WorkflowJobEvent{Delivery: "forged-looking", Action: "in_progress", JobID: unseen, Repository: fakeRepo,
		Labels: []string{"gpu"}, RunnerName: prefix + "someone-else", RunnerID: 1})
	require.Eventually(t, func() bool {
		for _, e := range eventsOf(log.events(), rm.JobStarted) {
			if e.JobNumber == unseen {
				return true
			}
		}
		return false
	}, 10*time.Second, 10*time.Millisecond)
	for _, e := range eventsOf(log.events(), rm.JobStarted) {
		if e.JobNumber == unseen {
			assert.Equal(t, prefix+"unseen", e.RunnerName, "the API's word, not the webhook's")
			assert.Equal(t, strconv.FormatInt(unseen, 10), e.JobID, "a classic job's id is its REST number")
		}
	}
	assert.Greater(t, env.fake.Calls(fakegithub.RouteRunJobs), reads, "read from the API")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, env.fake.WaitJobsCompleted(ctx))
	m.drain(ctx)
}

// TestClassicRepoWebhookStartSparesInProgressRead: once a webhook said on
// which runner a held job started, polls while it runs do not read its
// run (a read would be charged: the run changed), nor after it ends.
func TestClassicRepoWebhookStartSparesInProgressRead(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fake runner")
	}
	install := githubtest.BuildFakeRunner(t)
	env := newFakeEnv(t, "PAT")
	ct := hookedClassic(t, env, repoScope(t), github.ClassicOptions{PollInterval: time.Hour, BusyPollInterval: time.Hour})
	log, _ := watch(t, ct, fixed(2))
	require.Eventually(t, log.wanted(0), 5*time.Second, 10*time.Millisecond)
	id := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}, Duration: 6 * time.Second})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond)

	m := &miniManager{t: t, target: ct, install: install, exited: map[*exec.Cmd]chan struct{}{}, quiet: true}
	m.registerAndLaunch(prefix + "long")
	require.Eventually(t, func() bool { return len(eventsOf(log.events(), rm.JobStarted)) == 1 }, 30*time.Second, 10*time.Millisecond)
	reads := env.fake.Calls(fakegithub.RouteRunJobs)
	polls := log.count()
	ct.Nudge() // while it runs
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	j, _ := env.fake.Job(id)
	require.Equal(t, "in_progress", j.Status, "the poll saw it running (the job lasts 6 s)")
	assert.Equal(t, reads, env.fake.Calls(fakegithub.RouteRunJobs), "a run whose start a webhook told is not read while it runs")
	d, _ := log.last()
	assert.Equal(t, 1, d.Wanted, "in progress on our runner")

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, env.fake.WaitJobsCompleted(ctx))
	require.Eventually(t, func() bool { return len(eventsOf(log.events(), rm.JobCompleted)) == 1 }, 10*time.Second, 10*time.Millisecond)
	polls = log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, reads, env.fake.Calls(fakegithub.RouteRunJobs), "nor once it is done")
	m.drain(ctx)
}

// TestClassicRepoWebhooksBackstopPoll: once a repository's webhooks are
// seen to come, the watcher polls every WebhookBackstopPoll instead of its
// interval, and a queued job's webhook makes it read the run it names,
// with no list (three charged lists saved).
func TestClassicRepoWebhooksBackstopPoll(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	ct := hookedClassic(t, env, repoScope(t), github.ClassicOptions{PollInterval: 100 * time.Millisecond, BusyPollInterval: 100 * time.Millisecond})
	log, _ := watch(t, ct, fixed(4))
	require.Eventually(t, func() bool { return log.count() > 0 }, 10*time.Second, 10*time.Millisecond)
	lists := listCalls(env)
	require.Eventually(t, func() bool { return listCalls(env) >= lists+6 }, 10*time.Second, 10*time.Millisecond, "polls about every second (the interval, spaced) with no webhook yet")

	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})
	require.Eventually(t, log.wanted(1), 10*time.Second, 10*time.Millisecond)
	// At the interval a poll comes every second; relying on the webhooks,
	// the next is 30 s after the last.
	quiet := func() bool {
		n := listCalls(env)
		time.Sleep(1500 * time.Millisecond)
		return listCalls(env) == n
	}
	require.Eventually(t, quiet, 15*time.Second, 10*time.Millisecond, "a second and a half without a poll")
	settled := listCalls(env)

	reads := env.fake.Calls(fakegithub.RouteRunJobs)
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})
	require.Eventually(t, log.wanted(2), 10*time.Second, 10*time.Millisecond, "the queued webhook's poll")
	assert.Equal(t, settled, listCalls(env), "no list: the run the webhook named is read")
	assert.Equal(t, reads+1, env.fake.Calls(fakegithub.RouteRunJobs), "once")

	// A stream of queued webhooks (one every 100 ms) is spaced as nudges
	// always are: each poll closer than a second to the last (queued runs
	// alone or not) waits the rest of the second first. (The test's
	// client records the waits without waiting.)
	before := len(env.sleeps.all())
	for range 10 {
		env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"gpu"}})
		time.Sleep(100 * time.Millisecond)
	}
	require.Eventually(t, log.wanted(12), 10*time.Second, 10*time.Millisecond, "each announced run read")
	spaced := 0
	for _, d := range env.sleeps.all()[before:] {
		if d > 0 && d <= time.Second {
			spaced++
		}
	}
	assert.Positive(t, spaced, "polls after the first of the stream waited for the second to pass")
}

// TestClassicOrgWebhooksSpareReads: an organization target reads a job a
// webhook named once (while queued); its start and end come by webhook,
// and a poll while it runs does not read it again, nor one once it ended.
// The polls come on nudges alone (busy interval an hour): a timed poll
// while the runner starts would re-read the queued job (free, as it is
// unchanged) or read its start before the webhook comes, as it should.
func TestClassicOrgWebhooksSpareReads(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a fake runner")
	}
	install := githubtest.BuildFakeRunner(t)
	env := newFakeEnv(t, "PAT")
	org, err := rm.Organization("octo-org")
	require.NoError(t, err)
	ct := hookedClassic(t, env, org, github.ClassicOptions{PollInterval: time.Hour, BusyPollInterval: time.Hour})
	log, _ := watch(t, ct, fixed(2))
	require.Eventually(t, log.wanted(0), 5*time.Second, 10*time.Millisecond)

	id := env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}, Duration: 6 * time.Second})
	require.Eventually(t, log.wanted(1), 5*time.Second, 10*time.Millisecond, "the queued webhook, verified")
	require.Equal(t, 1, env.fake.Calls(routeRepoJob))

	m := &miniManager{t: t, target: ct, install: install, exited: map[*exec.Cmd]chan struct{}{}, quiet: true}
	m.registerAndLaunch(prefix + "org")
	require.Eventually(t, func() bool { return len(eventsOf(log.events(), rm.JobStarted)) == 1 }, 30*time.Second, 10*time.Millisecond, "the in_progress webhook is taken")
	started := eventsOf(log.events(), rm.JobStarted)
	assert.Equal(t, prefix+"org", started[0].RunnerName)
	polls := log.count()
	ct.Nudge() // while it runs
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	j, _ := env.fake.Job(id)
	require.Equal(t, "in_progress", j.Status, "the poll came while it ran (the job lasts 6 s)")
	assert.Equal(t, 1, env.fake.Calls(routeRepoJob), "a job whose start a webhook told is not read while it runs")
	d, _ := log.last()
	assert.Equal(t, 1, d.Wanted, "in progress on our runner")

	require.Eventually(t, func() bool {
		return len(eventsOf(log.events(), rm.JobCompleted)) == 1
	}, 30*time.Second, 10*time.Millisecond, "the completed webhook is taken")
	polls = log.count()
	ct.Nudge()
	require.Eventually(t, func() bool { return log.count() > polls }, 5*time.Second, 10*time.Millisecond)
	assert.Equal(t, 1, env.fake.Calls(routeRepoJob), "nor once it ended")
	assert.Len(t, eventsOf(log.events(), rm.JobStarted), 1)
	d, _ = log.last()
	assert.Equal(t, 0, d.Wanted)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.drain(ctx)
}

// hookedClassic is a classic target of scope (label gpu) fed by the real
// webhook receiver, to which the fake sends its workflow_job webhooks.
func hookedClassic(t *testing.T, env *fakeEnv, scope rm.Scope, opts github.ClassicOptions) *github.ClassicTarget {
	t.Helper()
	ct := newClassic(t, env, labelTarget(t, scope, "", "gpu"), opts)
	const secret = "It's a Secret to Everybody"
	hooks := httptest.NewServer(github.NewWebhookHandler([]byte(secret), ct.Notify))
	t.Cleanup(hooks.Close)
	env.fake.DeliverWebhooks(hooks.URL, secret)
	return ct
}
