//go:build linux

package daemon_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestVME2EJobs: 10 jobs through the daemon at max 2, each in a microVM
// of its own booted from the policy's image (QEMU's software CPU, as
// these machines cannot nest KVM): every job completed once, by its own
// runner, never more than 2 at once, each attempt metered from its VM's
// cgroup (QEMU's process tree where there are none), and nothing left
// (no VM directory, no registration).
func TestVME2EJobs(t *testing.T) {
	const jobs, most = 10, 2
	im := vmtest.FakeRunnerImage(t)
	w := newWorld(t)
	d, err := daemon.New(vmDaemonConfig(w.dataDir, w.github(), testLogger(t)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := vmPolicy(t, d, im.Dir)
	require.Equal(t, most, p.Max)

	stop := start(t, d)
	began := time.Now()
	for range jobs {
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"vm"}, Duration: 200 * time.Millisecond, MemoryBytes: 32 << 20})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	took := time.Since(began)
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		outcomes := map[string]int{}
		for _, a := range attemptsOf(t, d.Store(), p) {
			outcomes[string(a.State)+" "+a.Outcome.String()]++
		}
		assert.Equal(c, jobs, ended(t, d.Store(), p), "attempts by state and outcome: %v", outcomes)
	}, time.Minute, 100*time.Millisecond)
	require.Eventually(t, func() bool { return len(vmDirs(t, w.dataDir)) == 0 }, time.Minute, 100*time.Millisecond,
		"every attempt's VM directory (its overlay) is removed")
	require.NoError(t, stop())

	runners := map[string]bool{}
	var waits []time.Duration
	type span struct{ from, to time.Time }
	var spans []span
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, "completed", j.Status)
		assert.Equal(t, 1, j.Starts, "job %d ran once", j.ID)
		runners[j.RunnerName] = true
		waits = append(waits, j.StartedAt.Sub(j.QueuedAt))
		spans = append(spans, span{j.StartedAt, j.CompletedAt})
	}
	assert.Len(t, runners, jobs, "one ephemeral runner per job")
	peak := 0
	for _, s := range spans {
		at := 0
		for _, o := range spans {
			if !o.from.After(s.from) && o.to.After(s.from) {
				at++
			}
		}
		peak = max(peak, at)
	}
	assert.LessOrEqual(t, peak, most, "never more jobs at once than the policy's max")
	metered := 0
	source := rm.UsageFromProcessTree
	if c, err := platform.OpenCgroups("vme2e-probe"); err == nil {
		_ = c.Close()
		source = rm.UsageFromCgroup // QEMU runs in the attempt's cgroup
	}
	for _, a := range attemptsOf(t, d.Store(), p) {
		if a.Outcome.Kind == rm.CompletedJob && a.PID != 0 && a.Usage.PeakRSSBytes > 0 {
			metered++
			assert.Equal(t, source, a.Usage.Source, "attempt %s is metered from its VM's %s", a.ID, source)
		}
	}
	assert.NotZero(t, metered, "attempts are metered from their VMs")
	assert.Empty(t, w.gh.Runners(), "no registration left")
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	t.Logf("%d jobs at max %d in VMs (TCG): %v; queue→start p50 %v, max %v; %d of %d attempts metered",
		jobs, most, took.Round(time.Millisecond), waits[len(waits)/2].Round(time.Millisecond),
		slices.Max(waits).Round(time.Millisecond), metered, jobs)
}

// TestVME2EWarmSpare: a VM policy with a warm spare keeps a VM booted and
// its runner listening beyond the jobs; a job then starts in it without
// waiting for a boot, and a new spare takes its place.
func TestVME2EWarmSpare(t *testing.T) {
	im := vmtest.FakeRunnerImage(t)
	w := newWorld(t)
	d, err := daemon.New(vmDaemonConfig(w.dataDir, w.github(), testLogger(t)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := vmPolicyWith(t, d, im.Dir, func(p *rm.Policy) { p.Max, p.Spare = 1, 1 })
	stop := start(t, d)

	var spare string
	listening := func() bool {
		for _, r := range w.gh.Runners() {
			if r.Online && !r.Busy {
				spare = r.Name
				return true
			}
		}
		return false
	}
	booted := time.Now()
	require.Eventually(t, listening, 3*time.Minute, 50*time.Millisecond, "a warm VM's runner listens")
	t.Logf("the warm VM listened %v after the daemon's start", time.Since(booted).Round(time.Millisecond))

	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"vm"}, Duration: 200 * time.Millisecond, MemoryBytes: 16 << 20})
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
	jobs := w.gh.Jobs()
	require.Len(t, jobs, 1)
	j := jobs[0]
	assert.Equal(t, spare, j.RunnerName, "the job ran in the warm VM")
	wait := j.StartedAt.Sub(j.QueuedAt)
	t.Logf("a job on a warm VM (TCG): queue→start %v", wait.Round(time.Millisecond))
	// No boot was waited for: the runner that listened before the job
	// was queued took it (asserted above); the figure is only logged.
	require.Eventually(t, func() bool { return listening() && spare != j.RunnerName }, 3*time.Minute, 100*time.Millisecond,
		"a new warm VM takes the spare's place")

	require.NoError(t, stop())
	require.Eventually(t, func() bool { return len(vmDirs(t, w.dataDir)) == 0 }, time.Minute, 100*time.Millisecond,
		"every VM's directory is removed")
	assert.Empty(t, qemusOf(t, w.dataDir), "no QEMU is left")
	assert.Empty(t, w.gh.Runners(), "no registration is left")
	assert.Equal(t, 1, ended(t, d.Store(), p), "one attempt ran the job")
}

// TestVME2EColdStart: a VM policy without spares boots a VM for each job
// it is given, one at a time: each job is queued while no VM runs and no
// runner is registered, and is taken by the runner of the VM booted for
// it. Its queue → start (the cold start's figure in docs/vm.md) is
// logged, not asserted.
func TestVME2EColdStart(t *testing.T) {
	const jobs = 3
	im := vmtest.FakeRunnerImage(t)
	w := newWorld(t)
	d, err := daemon.New(vmDaemonConfig(w.dataDir, w.github(), testLogger(t)))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := vmPolicyWith(t, d, im.Dir, func(p *rm.Policy) { p.Max, p.Spare = 1, 0 })
	stop := start(t, d)

	var waits []time.Duration
	for i := range jobs {
		require.Empty(t, w.gh.Runners(), "no runner is registered before job %d is queued", i)
		require.Empty(t, qemusOf(t, w.dataDir), "no VM runs before job %d is queued", i)
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"vm"}, Duration: 100 * time.Millisecond, MemoryBytes: 16 << 20})
		ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
		require.NoError(t, w.gh.WaitJobsCompleted(ctx))
		cancel()
		require.Eventually(t, func() bool {
			return ended(t, d.Store(), p) == i+1 && len(vmDirs(t, w.dataDir)) == 0 && len(qemusOf(t, w.dataDir)) == 0 && len(w.gh.Runners()) == 0
		}, 2*time.Minute, 50*time.Millisecond, "job %d's attempt concluded, its VM, directory and registration gone", i)
	}
	require.NoError(t, stop())
	runners := map[string]bool{}
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, 1, j.Starts, "job %d ran once", j.ID)
		runners[j.RunnerName] = true
		waits = append(waits, j.StartedAt.Sub(j.QueuedAt))
	}
	assert.Len(t, runners, jobs, "each job in a VM of its own")
	slices.Sort(waits)
	t.Logf("a job on a cold VM (TCG), %d jobs one at a time: queue→start p50 %v, each %v",
		jobs, waits[len(waits)/2].Round(time.Millisecond), waits)
}

// vmDirs are the attempt directories left under the data directory's vm/
// (kept failed logs in .failed are not attempts).
func vmDirs(t *testing.T, dataDir string) []string {
	ents, err := os.ReadDir(filepath.Join(dataDir, "vm"))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.Name()[0] != '.' {
			out = append(out, e.Name())
		}
	}
	return out
}

// vmChildEnv carries the killed daemon's world from its parent test.
const vmChildEnv = "RUNNER_MANAGER_VM_CHILD"

type vmChild struct {
	URL, APIURL, DataDir string
}

// vmDaemonConfig is the daemon of the VM tests: TCG, small guests.
func vmDaemonConfig(dataDir string, gc github.Config, log *slog.Logger) daemon.Config {
	return daemon.Config{DataDir: dataDir, GitHub: gc,
		VM:          daemon.VMConfig{Accel: vm.AccelTCG, MemoryMiB: 256, CPUs: 1},
		SampleEvery: 200 * time.Millisecond, Logger: log}
}

// TestVME2EChildDaemon is the daemon that TestVME2EKilledDaemon runs in a
// child process and kills with SIGKILL.
func TestVME2EChildDaemon(t *testing.T) {
	raw := os.Getenv(vmChildEnv)
	if raw == "" {
		t.Skip("the daemon child of TestVME2EKilledDaemon")
	}
	var c vmChild
	require.NoError(t, json.Unmarshal([]byte(raw), &c))
	d, err := daemon.New(vmDaemonConfig(c.DataDir, github.Config{WebURL: c.URL, APIURL: c.APIURL, Token: token},
		slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))))
	require.NoError(t, err)
	_ = d.Run(context.Background()) // until killed
}

// TestVME2EKilledDaemon kills the daemon (a child process) with SIGKILL
// while VMs run jobs, and starts it again on the same data directory: the
// VMs alive at the kill are re-adopted by QEMU's pid and start stamp, or
// concluded, every job runs once, and nothing is left: no QEMU, no VM
// directory, no registration, no live attempt.
func TestVME2EKilledDaemon(t *testing.T) {
	if os.Getenv(vmChildEnv) != "" {
		t.Skip("in the child")
	}
	const jobs = 3
	im := vmtest.FakeRunnerImage(t)
	w := newWorld(t, fakegithub.WithRunnerLostAfter(10*time.Second))
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	first, err := daemon.New(vmDaemonConfig(w.dataDir, w.github(), log))
	require.NoError(t, err)
	p := vmPolicy(t, first, im.Dir)
	hostID := first.Host().ID
	require.NoError(t, first.Close())
	for range jobs {
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"vm"}, Duration: 8 * time.Second})
	}

	raw, err := json.Marshal(vmChild{URL: w.gh.URL(), APIURL: w.gh.APIURL(), DataDir: w.dataDir})
	require.NoError(t, err)
	child := exec.Command(os.Args[0], "-test.run=^TestVME2EChildDaemon$", "-test.count=1")
	child.Env = append(os.Environ(), vmChildEnv+"="+string(raw))
	var out syncBuffer
	child.Stdout, child.Stderr = &out, &out
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		if t.Failed() {
			t.Logf("killed daemon's log:\n%s", tail(out.String(), 60))
			t.Logf("restarted daemon's log:\n%s", tail(logs.String(), 60))
		}
	})
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	require.NoError(t, w.gh.WaitFor(ctx, func() bool {
		running := 0
		for _, j := range w.gh.Jobs() {
			if j.Status == "in_progress" {
				running++
			}
		}
		return running >= 2
	}), "the child daemon's VMs take jobs")
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	atKill := qemusOf(t, w.dataDir)
	require.NotEmpty(t, atKill, "the VMs outlive their daemon")

	d, err := daemon.New(vmDaemonConfig(w.dataDir, w.github(), log))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	require.Equal(t, hostID, d.Host().ID)
	stop := start(t, d)
	wctx, wcancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer wcancel()
	require.NoError(t, w.gh.WaitJobsCompleted(wctx))
	require.Eventually(t, func() bool {
		live, err := d.Store().LiveAttempts(t.Context(), hostID)
		return err == nil && len(live) == 0
	}, 2*time.Minute, 100*time.Millisecond, "every attempt concluded")
	require.Eventually(t, func() bool { return len(vmDirs(t, w.dataDir)) == 0 && len(qemusOf(t, w.dataDir)) == 0 },
		time.Minute, 100*time.Millisecond, "no VM and no VM directory left")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		assert.Empty(c, w.gh.Runners(), "no registration left")
	}, 90*time.Second, 100*time.Millisecond)
	require.NoError(t, stop())

	for _, j := range w.gh.Jobs() {
		assert.Equal(t, "completed", j.Status)
		assert.Equal(t, 1, j.Starts, "job %d ran exactly once", j.ID)
	}
	outcomes := map[string]int{}
	for _, a := range attemptsOf(t, d.Store(), p) {
		outcomes[a.Outcome.String()]++
	}
	assert.True(t, strings.Contains(logs.String(), "re-adopted runner process") || strings.Contains(logs.String(), "runner ended while the manager was down"),
		"the VMs alive at the kill were looked for")
	t.Logf("%d VMs alive at the kill; outcomes after the restart: %v", len(atKill), outcomes)
}

// vmPolicy writes the VM policy of the tests: a scale set "vm" at max 2.
func vmPolicy(t *testing.T, d *daemon.Daemon, image string) rm.Policy {
	t.Helper()
	return vmPolicyWith(t, d, image, func(*rm.Policy) {})
}

// vmPolicyWith is vmPolicy changed by edit before it is written.
func vmPolicyWith(t *testing.T, d *daemon.Daemon, image string, edit func(*rm.Policy)) rm.Policy {
	t.Helper()
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", "vm")
	require.NoError(t, err)
	p := rm.Policy{ID: rm.NewPolicyID(), Name: "vm", Host: d.Host().ID, Target: target, Max: 2,
		MemoryEstimate: 300 << 20, Backend: rm.BackendVM, VM: rm.VMSettings{Image: image}}
	edit(&p)
	require.NoError(t, d.Store().InsertPolicy(t.Context(), p))
	return p
}

// qemusOf are the QEMU processes of VMs under dataDir: their console is
// one of its attempt directories'.
func qemusOf(t *testing.T, dataDir string) []int {
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	prefix := "file:" + filepath.Join(dataDir, "vm") + "/"
	var pids []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range strings.Split(string(b), "\x00") {
			if strings.HasPrefix(arg, prefix) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// TestVME2EOrphanVMsAtStart: a daemon killed at the wrong moment leaves
// VMs running that the journal cannot name: one of an attempt it does not
// know, and one launched after its runner's registration but before the
// journal had its QEMU's pid. The restarted daemon stops both QEMUs and
// removes their directories: the first by the sweep of the VM launcher's
// roots at start, the second when its first pass concludes the attempt
// Failed(LaunchFailed) and removes its registration.
func TestVME2EOrphanVMsAtStart(t *testing.T) {
	im := vmtest.FakeRunnerImage(t)
	w := newWorld(t)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon's log:\n%s", tail(logs.String(), 60))
		}
	})
	cfg := vmDaemonConfig(w.dataDir, w.github(), log)
	d, err := daemon.New(cfg)
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := vmPolicy(t, d, im.Dir)
	host := d.Host().ID

	// What the killed daemon left: two registrations, a journal row for
	// the second (registering, no pid), and a VM for each.
	reg, err := github.NewScaleSetTarget(t.Context(), d.GitHub(), p.Target, github.ScaleSetOptions{})
	require.NoError(t, err)
	unknown, unlogged := rm.NewAttemptID(), rm.NewAttemptID()
	jitUnknown, err := reg.JITConfig(t.Context(), "orphan-"+unknown.String())
	require.NoError(t, err)
	jitUnlogged, err := reg.JITConfig(t.Context(), rm.RunnerName(host, unlogged))
	require.NoError(t, err)
	require.NoError(t, d.Store().RecordAttempt(t.Context(), storetest.NewAttempt().ID(unlogged).Policy(p.ID).Host(host).
		State(rm.StateRegistering).RunnerName(jitUnlogged.RunnerName).GitHubRunnerID(jitUnlogged.RunnerID).CreatedAt(time.Now()).Build()))
	killed, err := vm.NewLauncher(w.dataDir, vm.Settings{Image: im.Dir, MemoryMiB: cfg.VM.MemoryMiB, CPUs: cfg.VM.CPUs,
		Accel: vm.AccelTCG, Forward: []string{vm.HostPortOf(w.gh.URL()), vm.HostPortOf(w.gh.APIURL())}})
	require.NoError(t, err)
	var vms []rm.Process
	for a, jit := range map[rm.AttemptID]rm.JITConfig{unknown: jitUnknown, unlogged: jitUnlogged} {
		proc, err := killed.Launch(t.Context(), rm.LaunchSpec{Attempt: a, Policy: p, JITConfig: jit.Encoded})
		require.NoError(t, err)
		t.Cleanup(func() { _ = proc.Stop(context.Background(), time.Second) })
		vms = append(vms, proc)
	}
	require.Eventually(t, func() bool {
		online := 0
		for _, r := range w.gh.Runners() {
			if r.Online {
				online++
			}
		}
		return online == 2
	}, 3*time.Minute, 100*time.Millisecond, "the orphan VMs' runners listen: they would not end by themselves")
	require.Len(t, qemusOf(t, w.dataDir), 2)

	stop := start(t, d)
	for _, proc := range vms {
		select {
		case <-proc.Done():
		case <-time.After(time.Minute):
			t.Fatalf("QEMU %d still runs a minute after the daemon's start", proc.PID())
		}
	}
	require.Eventually(t, func() bool { return len(vmDirs(t, w.dataDir)) == 0 && len(qemusOf(t, w.dataDir)) == 0 },
		time.Minute, 100*time.Millisecond, "no VM and no VM directory left")
	require.Eventually(t, func() bool {
		a, err := d.Store().Attempt(t.Context(), unlogged)
		return err == nil && !a.Live()
	}, time.Minute, 100*time.Millisecond, "the attempt launched before the crash is concluded")
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		for _, r := range w.gh.Runners() {
			assert.NotEqual(c, jitUnlogged.RunnerName, r.Name, "its registration is removed")
		}
	}, 90*time.Second, 100*time.Millisecond)
	require.NoError(t, stop())

	a, err := d.Store().Attempt(t.Context(), unlogged)
	require.NoError(t, err)
	assert.Equal(t, rm.Failed, a.Outcome.Kind)
	assert.Equal(t, rm.LaunchFailed, a.Outcome.Reason)
	assert.Contains(t, logs.String(), `cleaned a left-over attempt directory" attempt=`+unknown.String())
	_, err = d.Store().Attempt(t.Context(), unknown)
	assert.Error(t, err, "the journal never knew the first")
	require.NoError(t, killed.Close())
}

// TestVME2EGuestOOM: a job over its VM policy's memory limit meets the
// guest's OOM killer (the guest is the limit's size); the daemon concludes
// the attempt Failed(OOMKilled), banks the limit as its peak, and cleans
// the VM.
func TestVME2EGuestOOM(t *testing.T) {
	const limit = 256 << 20
	im := vmtest.FakeRunnerImage(t)
	w := newWorld(t)
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("daemon's log:\n%s", tail(logs.String(), 60))
		}
	})
	d, err := daemon.New(vmDaemonConfig(w.dataDir, w.github(), log))
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := vmPolicyWith(t, d, im.Dir, func(p *rm.Policy) { p.Max, p.MemoryLimit = 1, limit })
	stop := start(t, d)
	w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: []string{"vm"}, Duration: 3 * time.Second, MemoryBytes: 220 << 20})

	var oom rm.Attempt
	require.Eventually(t, func() bool {
		for _, a := range attemptsOf(t, d.Store(), p) {
			if a.Outcome.Kind == rm.Failed {
				oom = a
				return true
			}
		}
		return false
	}, 3*time.Minute, 100*time.Millisecond, "the attempt whose job the guest's OOM killer ended is concluded")
	require.NoError(t, stop())
	require.Eventually(t, func() bool { return len(vmDirs(t, w.dataDir)) == 0 && len(qemusOf(t, w.dataDir)) == 0 },
		time.Minute, 100*time.Millisecond, "no VM and no VM directory left")

	assert.Equal(t, rm.OOMKilled, oom.Outcome.Reason, "outcome %s", oom.Outcome)
	assert.GreaterOrEqual(t, oom.Usage.PeakRSSBytes, uint64(limit), "the limit is banked as the job's peak")
	t.Logf("outcome %s, peak %d MiB (%s)", oom.Outcome, oom.Usage.PeakRSSBytes>>20, oom.Usage.Source)
}
