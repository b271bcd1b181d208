//go:build unix

package jobreport_test

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/jobreport"
	"github.com/runner-manager/runner-manager/internal/tmptest"
)

func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(m.Run()))
}

var info = jobreport.Info{Attempt: "01JATTEMPT", Policy: "linux-small", Host: "build-1", Backend: "native"}

// install writes the hooks into a new root and returns it with the
// variables Install set, by name.
func install(t *testing.T, env []string, dotEnv string) (root string, set map[string]string) {
	t.Helper()
	root = t.TempDir()
	if dotEnv != "" {
		require.NoError(t, os.WriteFile(filepath.Join(root, ".env"), []byte(dotEnv), 0o644))
	}
	vars, err := jobreport.Install(root, info, env)
	require.NoError(t, err)
	set = map[string]string{}
	for _, kv := range vars {
		k, v, ok := strings.Cut(kv, "=")
		require.True(t, ok, kv)
		set[k] = v
	}
	return root, set
}

// runHook runs a hook as the runner does: bash --noprofile --norc -e -o
// pipefail <path> (actions/runner ScriptHandlerHelpers.cs:18), with the
// job's variables and a fresh step summary file. It returns the output,
// the exit status and the summary.
func runHook(t *testing.T, path string, env ...string) (out string, code int, summary string) {
	t.Helper()
	sum := filepath.Join(t.TempDir(), "step_summary")
	require.NoError(t, os.WriteFile(sum, nil, 0o600))
	cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", path)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "GITHUB_STEP_SUMMARY=" + sum,
		"GITHUB_REPOSITORY=octo/app", "GITHUB_WORKFLOW=CI", "GITHUB_WORKFLOW_REF=octo/app/.github/workflows/ci.yml@refs/heads/main",
		"GITHUB_JOB=build", "GITHUB_RUN_ID=4242", "GITHUB_RUN_ATTEMPT=1"}, env...)
	b, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	s, err := os.ReadFile(sum)
	require.NoError(t, err)
	return string(b), code, string(s)
}

func TestInstall(t *testing.T) {
	t.Run("OK", func(t *testing.T) {
		root, set := install(t, nil, "")
		dir := filepath.Join(root, jobreport.HookDir)
		assert.Equal(t, filepath.Join(dir, jobreport.StartedScript), set[jobreport.EnvJobStarted])
		assert.Equal(t, filepath.Join(dir, jobreport.CompletedScript), set[jobreport.EnvJobCompleted])
		info, err := os.Stat(dir)
		require.NoError(t, err)
		assert.Equal(t, os.FileMode(0o700), info.Mode().Perm())
		for _, p := range set {
			info, err := os.Stat(p)
			require.NoError(t, err)
			assert.Equal(t, os.FileMode(0o700), info.Mode().Perm(), "the hook is its owner's alone: never world-writable")
			assert.True(t, strings.HasSuffix(p, ".sh"), "the runner runs .sh, .ps1 or .js only")
		}
		entries, err := os.ReadDir(dir)
		require.NoError(t, err)
		assert.Len(t, entries, 2, "nothing but the two hooks")
	})
	t.Run("Placeholders", func(t *testing.T) {
		root := t.TempDir()
		odd := jobreport.Info{Attempt: "@@DIR@@", Policy: "it's", Host: "@@POLICY@@", Backend: "native"}
		_, err := jobreport.Install(root, odd, []string{jobreport.EnvJobCompleted + "=/opt/@@ROOT@@.sh"})
		require.NoError(t, err)
		started, err := os.ReadFile(filepath.Join(root, jobreport.HookDir, jobreport.StartedScript))
		require.NoError(t, err)
		completed, err := os.ReadFile(filepath.Join(root, jobreport.HookDir, jobreport.CompletedScript))
		require.NoError(t, err)
		assert.Contains(t, string(started), "for attempt '@@DIR@@': records")
		assert.Contains(t, string(started), "rm_user=''\n")
		assert.Contains(t, string(completed), `host "'@@POLICY@@'", policy "'it'\''s'" ("'native'", attempt "'@@DIR@@'")`)
		assert.Contains(t, string(completed), "rm_user='/opt/@@ROOT@@.sh'\n", "a word is filled in once, never read for placeholders")
		words := strings.NewReplacer("'@@DIR@@'", "", "'@@POLICY@@'", "", "'/opt/@@ROOT@@.sh'", "")
		for _, s := range []string{string(started), string(completed)} {
			assert.NotContains(t, words.Replace(s), "@@", "every placeholder filled")
		}
	})
	t.Run("Twice", func(t *testing.T) {
		root, _ := install(t, nil, "")
		_, err := jobreport.Install(root, info, nil)
		assert.NoError(t, err, "a root prepared again is written over")
	})
	t.Run("DotEnvLosesTheHooks", func(t *testing.T) {
		root, _ := install(t, nil, "LANG=C\nACTIONS_RUNNER_HOOK_JOB_STARTED=/opt/hooks/start.sh\nFOO=bar\nACTIONS_RUNNER_HOOK_JOB_COMPLETED=/opt/hooks/end.sh\n")
		b, err := os.ReadFile(filepath.Join(root, ".env"))
		require.NoError(t, err)
		assert.Equal(t, "LANG=C\nFOO=bar\n", string(b), "the listener sets .env over its environment: the user's hooks leave it, the rest stays")
		started, err := os.ReadFile(filepath.Join(root, jobreport.HookDir, jobreport.StartedScript))
		require.NoError(t, err)
		assert.Contains(t, string(started), "rm_user='/opt/hooks/start.sh'")
		completed, err := os.ReadFile(filepath.Join(root, jobreport.HookDir, jobreport.CompletedScript))
		require.NoError(t, err)
		assert.Contains(t, string(completed), "rm_user='/opt/hooks/end.sh'")
	})
}

// TestStartedRecordsTheJob: the started hook writes the job as the runner
// sees it, which ReadJob reads back for the journal.
func TestStartedRecordsTheJob(t *testing.T) {
	root, set := install(t, nil, "")
	before := time.Now().Add(-time.Second)
	out, code, _ := runHook(t, set[jobreport.EnvJobStarted])
	assert.Equal(t, 0, code, out)
	assert.Empty(t, out, "the started hook says nothing")
	seen, ok := jobreport.ReadJob(root)
	require.True(t, ok)
	assert.Equal(t, "octo/app", seen.Repository)
	assert.Equal(t, "CI", seen.Workflow)
	assert.Equal(t, "octo/app/.github/workflows/ci.yml@refs/heads/main", seen.WorkflowRef)
	assert.Equal(t, "build", seen.Job)
	assert.Equal(t, int64(4242), seen.RunID)
	assert.False(t, seen.StartedAt.Before(before.Truncate(time.Second)), seen.StartedAt)
	assert.Equal(t, rm.Job{Workflow: "octo/app/.github/workflows/ci.yml@refs/heads/main", Name: "build", RunID: 4242}, seen.AsJob())
	info, err := os.Stat(filepath.Join(root, jobreport.HookDir, jobreport.JobFile))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
}

// track writes the usage file of an attempt whose job started between two
// samples: 10 MiB before the job, 60 then 30 MiB in it, CPU 1 s, 2 s, 2.5 s.
func track(t *testing.T, root string, at time.Time) {
	t.Helper()
	tr := jobreport.NewTracker(func(rm.AttemptID) string { return root }, nil)
	a := rm.NewAttemptID()
	sample := func(d time.Duration, rss uint64, cpu time.Duration, peak uint64, samples uint32) jobreport.Sample {
		return jobreport.Sample{Attempt: a, At: at.Add(d), RSSBytes: rss, CPUUsed: cpu,
			Usage: rm.AttemptUsage{PeakRSSBytes: peak, Samples: samples, Source: rm.UsageFromCgroup}}
	}
	tr.Observe([]jobreport.Sample{sample(-4*time.Second, 10<<20, time.Second, 10<<20, 1)})
	usage := readUsage(t, root)
	assert.Equal(t, "runner", usage["scope"], "no job seen yet: the runner's own figures")
	_, code, _ := runHook(t, filepath.Join(root, jobreport.HookDir, jobreport.StartedScript))
	require.Equal(t, 0, code)
	tr.Observe([]jobreport.Sample{sample(-2*time.Second, 60<<20, 2*time.Second, 60<<20, 2)})
	tr.Observe([]jobreport.Sample{sample(0, 30<<20, 2500*time.Millisecond, 60<<20, 3)})
}

func readUsage(t *testing.T, root string) map[string]string {
	t.Helper()
	path := filepath.Join(root, jobreport.HookDir, jobreport.UsageFile)
	info, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), info.Mode().Perm())
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.NotContains(t, strings.ToLower(string(b)), "jit")
	kv := map[string]string{}
	for line := range strings.Lines(string(b)) {
		if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok {
			kv[k] = v
		}
	}
	return kv
}

func TestTracker(t *testing.T) {
	root, _ := install(t, nil, "")
	track(t, root, time.Now())
	usage := readUsage(t, root)
	// The job's window starts at the last sample before its record was
	// seen: CPU from 1 s to 2.5 s over 4 s; busiest 1 s over 2 s; the
	// peak is the job's, not the runner's 10 MiB before it.
	assert.Equal(t, map[string]string{
		"sampled_at": usage["sampled_at"], "scope": "job",
		"peak_rss_bytes": strconv.Itoa(60 << 20), "peak_memory": "60MiB",
		"cpu_avg_millicores": "375", "cpu_avg_cores": "0.38",
		"cpu_busiest_millicores": "500", "cpu_busiest_cores": "0.50",
		"samples": "2", "source": "cgroup",
		"seq": "3", "end": "3", // the third write, whole
	}, usage)
	info, err := os.Stat(filepath.Join(root, jobreport.HookDir, jobreport.UsageFile))
	require.NoError(t, err)
	assert.EqualValues(t, 512, info.Size(), "each write covers the whole file")
	entries, err := os.ReadDir(filepath.Join(root, jobreport.HookDir))
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{jobreport.StartedScript, jobreport.CompletedScript, jobreport.JobFile, jobreport.UsageFile}, names,
		"no temporary file left behind")

	t.Run("SymlinkedDir", func(t *testing.T) {
		root, elsewhere := t.TempDir(), t.TempDir()
		require.NoError(t, os.Symlink(elsewhere, filepath.Join(root, jobreport.HookDir)))
		tr := jobreport.NewTracker(func(rm.AttemptID) string { return root }, nil)
		tr.Observe([]jobreport.Sample{{Attempt: rm.NewAttemptID(), At: time.Now(), RSSBytes: 1}})
		entries, err := os.ReadDir(elsewhere)
		require.NoError(t, err)
		assert.Empty(t, entries, "the manager writes into the root's own directory, never where a link points")
	})
	t.Run("FIFO", func(t *testing.T) {
		root, _ := install(t, nil, "")
		require.NoError(t, syscall.Mkfifo(filepath.Join(root, jobreport.HookDir, jobreport.UsageFile), 0o600))
		tr := jobreport.NewTracker(func(rm.AttemptID) string { return root }, nil)
		tr.Observe([]jobreport.Sample{{Attempt: rm.NewAttemptID(), At: time.Now(), RSSBytes: 1}})
		// Reached: a FIFO put in its place does not hold the meters.
	})
	t.Run("NoHooks", func(t *testing.T) {
		bare := t.TempDir()
		tr := jobreport.NewTracker(func(rm.AttemptID) string { return bare }, nil)
		tr.Observe([]jobreport.Sample{{Attempt: rm.NewAttemptID(), At: time.Now(), RSSBytes: 1}})
		entries, err := os.ReadDir(bare)
		require.NoError(t, err)
		assert.Empty(t, entries, "an attempt without hooks (report off, another backend) gets no file")
	})
}

// TestCompletedReport: the completed hook prints the job's figures, as
// the tracker wrote them, and adds them to the step summary.
func TestCompletedReport(t *testing.T) {
	root, set := install(t, nil, "")
	track(t, root, time.Now())
	out, code, summary := runHook(t, set[jobreport.EnvJobCompleted])
	assert.Equal(t, 0, code, out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	require.Len(t, lines, 6, out)
	assert.Equal(t, "runner-manager: what this job used, as the manager metered it", lines[0])
	assert.Equal(t, "  peak memory   60MiB", lines[1])
	assert.Equal(t, "  CPU           0.38 cores on average, 0.50 cores at its busiest", lines[2])
	assert.Regexp(t, `^  duration      0m0[0-9]s$`, lines[3])
	assert.Equal(t, "  ran on        host build-1, policy linux-small (native, attempt 01JATTEMPT)", lines[4])
	assert.Regexp(t, `^  measured      the job, from its cgroup: 2 samples, the last [0-9]+ s ago$`, lines[5])
	assert.Contains(t, summary, "### Runner footprint\n")
	assert.Contains(t, summary, "| Peak memory | 60MiB |\n")
	assert.Contains(t, summary, "| CPU, average | 0.38 cores |\n")
	assert.Contains(t, summary, "| CPU, busiest | 0.50 cores |\n")
	assert.Regexp(t, regexp.MustCompile(`\| Duration \| 0m0[0-9]s \|\n`), summary)
	assert.Contains(t, summary, "| Host | build-1 |\n")
	assert.Contains(t, summary, "| Policy | linux-small (native) |\n")
}

// TestCompletedTornRead: a usage file whose first and last write numbers
// differ (a read that caught a write half done) is read again, and never
// printed.
func TestCompletedTornRead(t *testing.T) {
	root, set := install(t, nil, "")
	track(t, root, time.Now())
	path := filepath.Join(root, jobreport.HookDir, jobreport.UsageFile)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(path, []byte(strings.Replace(string(b), "end=3", "end=2", 1)), 0o600))
	out, code, _ := runHook(t, set[jobreport.EnvJobCompleted])
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "  usage         not metered yet")
	assert.NotContains(t, out, "60MiB")
}

// TestReportNeverFails: with nothing to read and a step summary it cannot
// write, the manager's hooks still exit 0 and say what they know.
func TestReportNeverFails(t *testing.T) {
	root, set := install(t, nil, "")
	// The started hook cannot write its record (a directory where its
	// temporary file goes: a permission would not stop root).
	require.NoError(t, os.Mkdir(filepath.Join(root, jobreport.HookDir, jobreport.JobFile+".tmp"), 0o700))
	out, code, _ := runHook(t, set[jobreport.EnvJobStarted])
	assert.Equal(t, 0, code, out)
	assert.Empty(t, out)
	out, code, _ = runHook(t, set[jobreport.EnvJobCompleted], "GITHUB_STEP_SUMMARY=/nonexistent/dir/summary")
	assert.Equal(t, 0, code, out)
	assert.Contains(t, out, "  usage         not metered yet")
	assert.Contains(t, out, "  duration      unknown")
	assert.Contains(t, out, "host build-1, policy linux-small")
}

// TestUserHookChained: a hook the runner's environment named runs after
// the manager's part, as the runner would run it, with its effect and its
// exit status.
func TestUserHookChained(t *testing.T) {
	dir := t.TempDir()
	envFile := filepath.Join(dir, "github_env")
	require.NoError(t, os.WriteFile(envFile, nil, 0o600))
	user := filepath.Join(dir, "user hook's.sh")
	require.NoError(t, os.WriteFile(user, []byte("echo \"user hook ran for $GITHUB_JOB\"\necho FROM_USER=yes >>\"$GITHUB_ENV\"\nfalse\necho not reached: -e holds\n"), 0o700))

	for _, which := range []string{jobreport.EnvJobStarted, jobreport.EnvJobCompleted} {
		t.Run(which, func(t *testing.T) {
			require.NoError(t, os.Truncate(envFile, 0))
			root, set := install(t, []string{which + "=/elsewhere.sh", which + "=" + user}, "")
			out, code, _ := runHook(t, set[which], "GITHUB_ENV="+envFile)
			assert.Equal(t, 1, code, "the user's hook fails the step as it would alone: %s", out)
			assert.Contains(t, out, "user hook ran for build\n")
			assert.NotContains(t, out, "not reached", "the user's hook runs with -e, as the runner runs it")
			b, err := os.ReadFile(envFile)
			require.NoError(t, err)
			assert.Equal(t, "FROM_USER=yes\n", string(b), "its environment file is the job's")
			if which == jobreport.EnvJobStarted {
				_, ok := jobreport.ReadJob(root)
				assert.True(t, ok, "the manager's part ran first")
			} else {
				assert.Contains(t, out, "runner-manager: what this job used")
			}
		})
	}
	t.Run("NotAScript", func(t *testing.T) {
		py := filepath.Join(dir, "hook.py")
		require.NoError(t, os.WriteFile(py, []byte("print(1)\n"), 0o700))
		_, set := install(t, []string{jobreport.EnvJobCompleted + "=" + py}, "")
		out, code, _ := runHook(t, set[jobreport.EnvJobCompleted])
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, py+" is not a valid path to a script. Make sure it ends in '.sh', '.ps1' or '.js'.",
			"refused with the runner's own words, as the runner alone would")
	})
	t.Run("Missing", func(t *testing.T) {
		_, set := install(t, []string{jobreport.EnvJobStarted + "=/nonexistent/hook.sh"}, "")
		out, code, _ := runHook(t, set[jobreport.EnvJobStarted])
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, "File doesn't exist")
	})
	t.Run("FromDotEnv", func(t *testing.T) {
		_, set := install(t, []string{jobreport.EnvJobCompleted + "=/from/the/environment.sh"},
			jobreport.EnvJobCompleted+"="+user+"\n")
		out, code, _ := runHook(t, set[jobreport.EnvJobCompleted], "GITHUB_ENV="+envFile)
		assert.Equal(t, 1, code, out)
		assert.Contains(t, out, "user hook ran", "the .env's hook is the one the listener would have run")
	})
	t.Run("Succeeds", func(t *testing.T) {
		ok := filepath.Join(dir, "ok.sh")
		require.NoError(t, os.WriteFile(ok, []byte("echo fine\n"), 0o700))
		_, set := install(t, []string{jobreport.EnvJobStarted + "=" + ok}, "")
		out, code, _ := runHook(t, set[jobreport.EnvJobStarted])
		assert.Equal(t, 0, code, out)
		assert.Equal(t, "fine\n", out)
	})
}

func TestReadJob(t *testing.T) {
	write := func(t *testing.T, body string) string {
		root, _ := install(t, nil, "")
		require.NoError(t, os.WriteFile(filepath.Join(root, jobreport.HookDir, jobreport.JobFile), []byte(body), 0o600))
		return root
	}
	t.Run("FirstValueWins", func(t *testing.T) {
		root := write(t, "job=build\njob=forged\nrun_id=x\nworkflow=CI\x1b[31m\n")
		seen, ok := jobreport.ReadJob(root)
		require.True(t, ok)
		assert.Equal(t, "build", seen.Job)
		assert.Zero(t, seen.RunID, "not a number")
		assert.Equal(t, "CI[31m", seen.Workflow, "control characters dropped")
	})
	t.Run("Long", func(t *testing.T) {
		root := write(t, "job="+strings.Repeat("x", 1000)+"\n")
		seen, ok := jobreport.ReadJob(root)
		require.True(t, ok)
		assert.Len(t, seen.Job, 256)
	})
	t.Run("Huge", func(t *testing.T) {
		root := write(t, "job=a\n"+strings.Repeat("y", 1<<20))
		seen, ok := jobreport.ReadJob(root)
		assert.True(t, ok)
		assert.Equal(t, "a", seen.Job)
	})
	t.Run("Symlink", func(t *testing.T) {
		root, _ := install(t, nil, "")
		target := filepath.Join(t.TempDir(), "elsewhere")
		require.NoError(t, os.WriteFile(target, []byte("job=build\n"), 0o600))
		require.NoError(t, os.Symlink(target, filepath.Join(root, jobreport.HookDir, jobreport.JobFile)))
		_, ok := jobreport.ReadJob(root)
		assert.False(t, ok, "a record is a file of the root, never one it points at")
	})
	t.Run("None", func(t *testing.T) {
		_, ok := jobreport.ReadJob(t.TempDir())
		assert.False(t, ok)
		_, ok = jobreport.ReadJob(write(t, "\n"))
		assert.False(t, ok, "an empty record names nothing")
	})
}

// BenchmarkHooks is what the manager's hooks add to a job: both run as
// the runner runs them, with the figures of a tracked job (the budget is
// under a second).
func BenchmarkHooks(b *testing.B) {
	root := b.TempDir()
	vars, err := jobreport.Install(root, info, nil)
	require.NoError(b, err)
	tr := jobreport.NewTracker(func(rm.AttemptID) string { return root }, nil)
	tr.Observe([]jobreport.Sample{{Attempt: rm.NewAttemptID(), At: time.Now(), RSSBytes: 50 << 20, CPUUsed: time.Second,
		Usage: rm.AttemptUsage{PeakRSSBytes: 50 << 20, Samples: 1, Source: rm.UsageFromCgroup}}})
	sum := filepath.Join(root, "summary")
	env := []string{"PATH=" + os.Getenv("PATH"), "GITHUB_STEP_SUMMARY=" + sum, "GITHUB_REPOSITORY=octo/app", "GITHUB_JOB=build"}
	for b.Loop() {
		for _, kv := range vars {
			_, path, _ := strings.Cut(kv, "=")
			cmd := exec.Command("bash", "--noprofile", "--norc", "-e", "-o", "pipefail", path)
			cmd.Env = env
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			if err := cmd.Run(); err != nil {
				b.Fatal(err, out.String())
			}
		}
	}
}

// BenchmarkTrackerObserve is the daemon's side per sample: 50 live
// attempts with hooks, running jobs or idle (their usage file rewritten
// in place either way).
func BenchmarkTrackerObserve(b *testing.B) {
	for _, busy := range []bool{true, false} {
		b.Run(map[bool]string{true: "Busy50", false: "Idle50"}[busy], func(b *testing.B) {
			base := b.TempDir()
			samples := make([]jobreport.Sample, 50)
			roots := map[rm.AttemptID]string{}
			for i := range samples {
				a := rm.NewAttemptID()
				roots[a] = filepath.Join(base, a.String())
				require.NoError(b, os.Mkdir(roots[a], 0o700))
				_, err := jobreport.Install(roots[a], info, nil)
				require.NoError(b, err)
				if busy {
					require.NoError(b, os.WriteFile(filepath.Join(roots[a], jobreport.HookDir, jobreport.JobFile), []byte("job=build\n"), 0o600))
				}
				samples[i] = jobreport.Sample{Attempt: a, RSSBytes: 50 << 20, Usage: rm.AttemptUsage{PeakRSSBytes: 50 << 20, Samples: 1}}
			}
			tr := jobreport.NewTracker(func(a rm.AttemptID) string { return roots[a] }, nil)
			at := time.Now()
			for b.Loop() {
				at = at.Add(2 * time.Second)
				for i := range samples {
					samples[i].At = at
					samples[i].CPUUsed += time.Second
				}
				tr.Observe(samples)
			}
		})
	}
}
