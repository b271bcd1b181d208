//go:build linux

package reconcile_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// leavingStep is a job's step that leaves three processes behind and
// returns: one in the background of the runner's process group, one in a
// session of its own, one double-forked (init's child).
const leavingStep = `sleep 314 >/dev/null 2>&1 &
setsid sleep 313 >/dev/null 2>&1 &
sh -c 'sleep 312 >/dev/null 2>&1 &' &
sleep 0.1`

// enqueueScripted queues n jobs that run script as their step.
func (w *world) enqueueScripted(n int, d time.Duration, mem uint64, script string) {
	for range n {
		w.fake.EnqueueJob(fakegithub.JobSpec{Repo: e2eRepo, Labels: []string{e2eSet}, Duration: d,
			MemoryBytes: mem, CPUMillicores: 100, Script: script})
	}
}

// markedProcesses lists the live processes whose environment names an
// attempt of the world's policy (the launcher's marker, which a job's
// processes inherit), with their command names.
func (w *world) markedProcesses() []string {
	ids := map[string]bool{}
	for _, a := range w.attempts() {
		ids[a.ID.String()] = true
	}
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil {
			continue
		}
		for kv := range bytes.SplitSeq(env, []byte{0}) {
			if v, ok := bytes.CutPrefix(kv, []byte("RUNNER_MANAGER_ATTEMPT=")); ok && ids[string(v)] {
				stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
				if i := bytes.LastIndexByte(stat, ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
					break // a zombie: gone, not yet reaped
				}
				comm, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
				out = append(out, e.Name()+" "+strings.TrimSpace(string(comm)))
				break
			}
		}
	}
	return out
}

// containedWorld is a world whose launcher puts each attempt in a cgroup
// (skipping the test, saying why, where the host allows none), or forced
// to the fallback; its meters read the groups.
func containedWorld(t *testing.T, cgroup bool, o worldOpts) (*world, *native.Launcher) {
	w := newWorld(t, o)
	opts := []native.Option{native.WithLogger(w.log), native.WithLeftoverGrace(time.Second)}
	if !cgroup {
		opts = append(opts, native.WithoutCgroups())
	}
	l := native.NewLauncher(w.dataDir, opts...)
	t.Cleanup(func() { _ = l.Close() })
	if cgroup && l.CgroupsInUse() == "" {
		t.Skip("no cgroup can be made here (not root, nothing delegated): the fallback alone is tested")
	}
	if cgroup {
		t.Logf("cgroups: %s", l.CgroupsInUse())
	} else {
		t.Log("forced to the fallback: process group and environment marker")
	}
	w.meters = meter.New(filepath.Join(w.dataDir, "state", "memory-peaks.toml"), meter.WithLogger(w.log), meter.WithGroups(l))
	return w, l
}

func TestE2EJobLeftoversStopped(t *testing.T) {
	for _, cgroup := range []bool{true, false} {
		t.Run(map[bool]string{true: "Cgroup", false: "Fallback"}[cgroup], func(t *testing.T) {
			w, l := containedWorld(t, cgroup, worldOpts{mode: rm.ModeScaleSet, max: 2})
			const jobs = 4
			w.enqueueScripted(jobs, 200*time.Millisecond, 8<<20, leavingStep)
			w.run(w.supervisorConfig(l, nil))
			w.waitJobs(60 * time.Second)
			w.settled(30 * time.Second) // no process works under the attempts' directories
			assert.Empty(t, w.markedProcesses(), "no process of any attempt is alive")
			assert.Equal(t, jobs, strings.Count(w.logs.String(), "stopped the processes the attempt left behind"),
				"each attempt's leftovers are stopped and logged")
			assert.Contains(t, w.logs.String(), "sleep ×3")
			if cgroup {
				assert.Contains(t, w.logs.String(), "found_by=cgroup")
				ids, err := l.Cgroups().List()
				require.NoError(t, err)
				assert.Empty(t, ids, "every attempt's cgroup is removed")
				for _, a := range w.attempts() {
					assert.Equal(t, rm.UsageFromCgroup, a.Usage.Source, "attempt %s", a.ID)
				}
			}
		})
	}
}

func TestE2EMemoryLimitOOMKilled(t *testing.T) {
	w, l := containedWorld(t, true, worldOpts{mode: rm.ModeScaleSet, max: 1})
	if !l.Cgroups().HasMemoryController() {
		t.Skip("the attempts' cgroups have no memory controller here: no limit can be set")
	}
	w.policy.MemoryLimit = rm.MinMemoryLimit
	require.NoError(t, w.st.UpdatePolicy(t.Context(), w.policy))
	w.fake.EnqueueJob(fakegithub.JobSpec{Repo: e2eRepo, Labels: []string{e2eSet}, Duration: 5 * time.Second, MemoryBytes: 600 << 20})
	_, stop := w.run(w.supervisorConfig(l, nil))

	var killed rm.Attempt
	w.waitFor(60*time.Second, "an attempt concluded OOMKilled", func() bool {
		for _, a := range w.attempts() {
			if a.Outcome.Reason == rm.OOMKilled {
				killed = a
				return true
			}
		}
		return false
	})
	t.Logf("outcome: %s", killed.Outcome)
	assert.Contains(t, killed.Outcome.Detail, "at its memory limit of 256MiB")
	assert.GreaterOrEqual(t, killed.Usage.PeakRSSBytes, rm.MinMemoryLimit-(16<<20), "its peak is what the kernel saw")
	require.Eventually(t, func() bool { return len(w.meters.PeaksOf(w.policy.ID)) > 0 }, 10*time.Second, 20*time.Millisecond,
		"its peak counts among the policy's")
	assert.GreaterOrEqual(t, w.meters.PeaksOf(w.policy.ID)[0], rm.MinMemoryLimit-(16<<20))

	// No more launches. The fake keeps the killed runner's job in progress
	// (and its registration busy) as GitHub does until it gives the runner
	// up, so the world settles but for that registration.
	w.policy.Paused = true
	require.NoError(t, w.st.UpdatePolicy(t.Context(), w.policy))
	require.Eventually(t, func() bool {
		live, err := w.st.ActiveAttempts(context.Background(), w.policy.ID)
		ids, _ := l.Cgroups().List()
		return err == nil && len(live) == 0 && countRunnerProcesses(w.dataDir) == 0 && len(ids) == 0
	}, 60*time.Second, 20*time.Millisecond, "no live attempt, runner process or cgroup is left")
	stop()
}

// containChildEnv carries the manager child's world from its parent test.
const containChildEnv = "RUNNER_MANAGER_E2E_CONTAIN_CHILD"

// TestE2EContainChildSupervisor is the manager run in a child process by
// TestE2EContainedAfterRestart, which kills it with SIGKILL.
func TestE2EContainChildSupervisor(t *testing.T) {
	w := childWorldOf(t, containChildEnv, "TestE2EContainedAfterRestart")
	l := native.NewLauncher(w.dataDir, native.WithLogger(w.log))
	w.meters = meter.New(filepath.Join(w.dataDir, "state", "memory-peaks.toml"), meter.WithGroups(l))
	sup, err := reconcile.NewSupervisor(w.supervisorConfig(l, nil))
	require.NoError(t, err)
	_ = sup.Run(context.Background()) // until killed
}

func TestE2EContainedAfterRestart(t *testing.T) {
	if os.Getenv(containChildEnv) != "" {
		t.Skip("in the child")
	}
	w, l := containedWorld(t, true, worldOpts{mode: rm.ModeScaleSet, max: 2})
	const jobs = 4
	w.enqueueScripted(jobs, 3*time.Second, 48<<20, `setsid sleep 311 >/dev/null 2>&1 &`)

	raw, err := json.Marshal(childWorld{URL: w.fake.URL(), APIURL: w.fake.APIURL(), DataDir: w.dataDir, Host: w.host.ID, Policy: w.policy.ID})
	require.NoError(t, err)
	child := exec.Command(os.Args[0], "-test.run=^TestE2EContainChildSupervisor$", "-test.count=1")
	child.Env = append(os.Environ(), containChildEnv+"="+string(raw))
	var out syncBuffer
	child.Stdout, child.Stderr = &out, &out
	require.NoError(t, child.Start())
	t.Cleanup(func() {
		_ = child.Process.Kill()
		if t.Failed() {
			t.Logf("killed manager's log:\n%s", tail(out.String(), 100))
		}
	})
	// Two jobs running, and their runners' pids in the journal: a runner
	// takes its job as soon as it is up, maybe before the manager wrote
	// its pid, and a kill between the two leaves an attempt with none.
	w.waitFor(60*time.Second, "two jobs running under the first manager", func() bool {
		running, recorded := 0, 0
		for _, j := range w.fake.Jobs() {
			if j.Status == "in_progress" {
				running++
			}
		}
		for _, a := range w.attempts() {
			if a.Live() && a.PID != 0 && platform.Alive(a.PID, a.ProcessStart) {
				recorded++
			}
		}
		return running >= 2 && recorded >= 2
	})
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	var busy []rm.Attempt
	for _, a := range w.attempts() {
		if a.Live() && a.PID != 0 && platform.Alive(a.PID, a.ProcessStart) {
			busy = append(busy, a)
		}
	}
	require.NotEmpty(t, busy, "runners outlived the killed manager")
	for _, a := range busy {
		_, ok := l.GroupUsage(a.ID)
		require.True(t, ok, "attempt %s has its cgroup", a.ID)
	}

	// Restart (in this process): the same journal, data directory and groups.
	w.run(w.supervisorConfig(l, nil))
	for _, a := range busy {
		require.Eventually(t, func() bool {
			u, ok := w.meters.Peek(a.ID)
			return ok && u.Source == rm.UsageFromCgroup && u.PeakRSSBytes >= 48<<20
		}, 30*time.Second, 20*time.Millisecond, "attempt %s is metered on from its cgroup", a.ID)
	}
	w.waitJobs(90 * time.Second)
	w.settled(30 * time.Second)
	assert.Empty(t, w.markedProcesses(), "no process of any attempt is alive, those of the re-adopted ones included")
	ids, err := l.Cgroups().List()
	require.NoError(t, err)
	assert.Empty(t, ids, "every attempt's cgroup is removed")
	for _, a := range busy {
		got, err := w.st.Attempt(t.Context(), a.ID)
		require.NoError(t, err)
		assert.Equal(t, rm.UsageFromCgroup, got.Usage.Source)
	}
}
