package fakerunner

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// The runner's job hook variables: the runner reads them from its
// environment when it builds a job (actions/runner
// src/Runner.Worker/JobExtension.cs:302 and :571).
const (
	EnvHookJobStarted   = "ACTIONS_RUNNER_HOOK_JOB_STARTED"
	EnvHookJobCompleted = "ACTIONS_RUNNER_HOOK_JOB_COMPLETED"
)

// The display names of the hooks' steps (actions/runner
// src/Runner.Common/Constants.cs:278-279).
const (
	StepJobStarted   = "Set up runner"
	StepJobCompleted = "Complete runner"
)

// stepSummaryLimit is the largest step summary the runner attaches
// (actions/runner src/Runner.Worker/FileCommandManager.cs:223).
const stepSummaryLimit = 1024 * 1024

// loadDotEnv sets every NAME=value line of root/.env in the process
// environment, over what it held, as the real listener does before
// anything else (actions/runner src/Runner.Listener/Program.cs:172-199).
func loadDotEnv(root string) {
	b, err := os.ReadFile(filepath.Join(root, ".env"))
	if err != nil {
		return
	}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimRight(line, "\r\n")
		if i := strings.IndexByte(line, '='); i > 0 {
			_ = os.Setenv(line[:i], line[i+1:])
		}
	}
}

// jobLog is a job's log as the runner uploads it: each step's output.
type jobLog struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	summary bytes.Buffer
}

func (j *jobLog) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.buf.Write(p)
}

func (j *jobLog) printf(format string, args ...any) { fmt.Fprintf(j, format+"\n", args...) }

func (j *jobLog) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.buf.String()
}

func (j *jobLog) addSummary(b []byte) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.summary.Write(b)
}

func (j *jobLog) stepSummary() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.summary.String()
}

// jobRun is one job's steps: the variables every step gets, and what the
// environment files of earlier steps added.
type jobRun struct {
	l *listener
	// setup and probed are what a CI setup took and a probe read.
	setup  *runnerproto.SetupReport
	probed *runnerproto.ProbeReport
	jr     runnerproto.JobRequest
	log    *jobLog
	env    []string // the job's variables, set over the runner's environment
	dir    string   // the steps' working directory
	cmdDir string   // the environment files' directory
}

// newJobRun prepares a job's steps in its folders: its GITHUB_* and
// RUNNER_* variables (the default variables a step and a hook have: docs
// "Running scripts before or after a job"; RUNNER_* are the runner
// context's, RunnerContext.cs:9-13, set in JobRunner.cs:165-176 and
// JobExtension.cs:212-221), and the directory of the steps' environment
// files (the runner's, under _work/_temp: FileCommandManager.cs:32). The
// rest of the runner's environment, HOME among it, passes to the steps
// unchanged (ProcessInvoker.cs:262-290 adds to the inherited
// environment); only a container job gets a HOME of its own
// (ContainerOperationProvider.cs:310-314).
func (l *listener) newJobRun(jr runnerproto.JobRequest, f jobFolders) *jobRun {
	owner, _, _ := strings.Cut(jr.Repository, "/")
	workspace := f.workspace
	cmdDir := filepath.Join(f.temp, "_runner_file_commands")
	_ = os.MkdirAll(cmdDir, 0o755)
	// GITHUB_WORKFLOW is the workflow's name, or its file's path when it
	// has none; the fake's workflows have none.
	workflow := jr.Workflow
	if _, rest, ok := strings.Cut(jr.Workflow, "/"); ok {
		if _, path, ok := strings.Cut(rest, "/"); ok {
			workflow, _, _ = strings.Cut(path, "@")
		}
	}
	runnerOS := map[string]string{"linux": "Linux", "darwin": "macOS", "windows": "Windows"}[runtime.GOOS]
	return &jobRun{l: l, jr: jr, log: &jobLog{}, dir: workspace, cmdDir: cmdDir, env: []string{
		"CI=true", "GITHUB_ACTIONS=true",
		"GITHUB_REPOSITORY=" + jr.Repository, "GITHUB_REPOSITORY_OWNER=" + owner,
		"GITHUB_WORKFLOW=" + workflow, "GITHUB_WORKFLOW_REF=" + jr.Workflow,
		"GITHUB_JOB=" + cmp.Or(jr.JobKey, jr.DisplayName),
		"GITHUB_RUN_ID=" + strconv.FormatInt(jr.RunID, 10), "GITHUB_RUN_NUMBER=1", "GITHUB_RUN_ATTEMPT=1",
		"GITHUB_WORKSPACE=" + workspace,
		"RUNNER_NAME=" + l.runner.AgentName, "RUNNER_OS=" + runnerOS, "RUNNER_TEMP=" + f.temp,
		"RUNNER_TOOL_CACHE=" + f.tools, "RUNNER_WORKSPACE=" + f.pipeline,
	}}
}

// hook runs the job hook named by variable, as its step, and reports
// whether it succeeded (no hook named: true). As the runner does
// (actions/runner src/Runner.Worker/JobHookProvider.cs:38-93): it says the
// administrator configured it, refuses a file that does not exist, picks
// the shell by the script's extension (HostContext.cs:812-834, refusing
// any other with the runner's "is not a valid path to a script"), runs it
// with the job's variables and environment files, and processes those
// files after it, whatever its result.
func (j *jobRun) hook(ctx context.Context, variable, step string) bool {
	path := os.Getenv(variable)
	if path == "" {
		return true
	}
	kind := "job started hook"
	if variable == EnvHookJobCompleted {
		kind = "job completed hook"
	}
	j.log.printf("##[group]%s", step)
	j.log.printf("A %s has been configured by the self-hosted runner administrator", kind)
	if _, err := os.Stat(path); err != nil {
		j.log.printf("##[endgroup]")
		j.log.printf("##[error]File doesn't exist")
		return false
	}
	shell, args, format, err := hookShell(path, j.l.cfg.Root)
	if err != nil {
		j.log.printf("##[endgroup]")
		j.log.printf("##[error]%v", err)
		return false
	}
	j.log.printf("##[group]Run '%s'", path)
	j.log.printf("shell: %s %s", shell, format)
	j.log.printf("##[endgroup]")
	j.log.printf("##[endgroup]")
	return j.run(ctx, exec.CommandContext(ctx, shell, args...))
}

// hookShell is the program and arguments that run the hook at path, by
// its extension (HostContext.cs:812-834), and the arguments' format as
// the runner prints it (ScriptHandlerHelpers.cs:15-19).
func hookShell(path, root string) (shell string, args []string, format string, err error) {
	switch filepath.Ext(path) {
	case ".sh":
		if bash, err := exec.LookPath("bash"); err == nil {
			return bash, []string{"--noprofile", "--norc", "-e", "-o", "pipefail", path}, "--noprofile --norc -e -o pipefail {0}", nil
		}
		sh, err := exec.LookPath("sh")
		return sh, []string{"-e", path}, "-e {0}", err
	case ".ps1":
		ps, err := exec.LookPath("pwsh")
		if err != nil {
			ps, err = exec.LookPath("powershell")
		}
		return ps, []string{"-command", ". '" + path + "'"}, `-command ". '{0}'"`, err
	case ".js":
		// The runner's own node, under externals/ (HostContext.cs:831).
		nodes, _ := filepath.Glob(filepath.Join(root, "externals", "node*", "bin", "node"))
		if len(nodes) == 0 {
			return "", nil, "", errors.New("no node under the runner's externals/ to run " + path)
		}
		return nodes[len(nodes)-1], []string{path}, "{0}", nil
	}
	return "", nil, "", fmt.Errorf("%s is not a valid path to a script. Make sure it ends in '.sh', '.ps1' or '.js'.", path)
}

// script runs the job's own step, a shell script (sh -c) with the job's
// variables and environment files; its output goes to the job's log and
// the runner's. What it leaves running is the job's leftover.
func (j *jobRun) script(ctx context.Context, script string) bool {
	j.log.printf("##[group]Run %s", firstLine(script))
	j.log.printf("##[endgroup]")
	return j.run(ctx, exec.CommandContext(ctx, "sh", "-c", script))
}

// run runs one step's command in the workspace with the job's variables
// and fresh environment files, its output in the job's log (and the
// runner's), then takes what those files say; false when it failed.
func (j *jobRun) run(ctx context.Context, cmd *exec.Cmd) bool {
	files := j.envFiles()
	cmd.Dir = j.dir
	cmd.Env = append(append(os.Environ(), j.env...), files.vars()...)
	out := io.MultiWriter(j.log, j.l.log)
	cmd.Stdout, cmd.Stderr = out, out
	// A step's leftovers may hold its output open: do not wait for them.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	j.take(files)
	if err != nil {
		code := -1
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		}
		j.log.printf("##[error]Process completed with exit code %d.", code)
		if ctx.Err() == nil {
			j.l.printf("The step failed: %v", err)
		}
		return false
	}
	return true
}

// stepFiles are one step's environment files (FileCommandManager.cs:42-73:
// a new file per command per step).
type stepFiles struct{ env, path, output, state, summary string }

func (f stepFiles) vars() []string {
	return []string{"GITHUB_ENV=" + f.env, "GITHUB_PATH=" + f.path, "GITHUB_OUTPUT=" + f.output,
		"GITHUB_STATE=" + f.state, "GITHUB_STEP_SUMMARY=" + f.summary}
}

func (j *jobRun) envFiles() stepFiles {
	var b [16]byte
	_, _ = rand.Read(b[:])
	suffix := hex.EncodeToString(b[:])
	f := stepFiles{}
	for prefix, p := range map[string]*string{"set_env_": &f.env, "add_path_": &f.path, "set_output_": &f.output,
		"save_state_": &f.state, "step_summary_": &f.summary} {
		*p = filepath.Join(j.cmdDir, prefix+suffix)
		_ = os.WriteFile(*p, nil, 0o644)
	}
	return f
}

// take processes a step's environment files for the steps after it:
// GITHUB_ENV's variables and GITHUB_PATH's directories join the job's
// variables, GITHUB_STEP_SUMMARY's content the job's step summary
// (refused over 1 MiB, as the runner refuses it).
func (j *jobRun) take(f stepFiles) {
	if b, err := os.ReadFile(f.env); err == nil {
		j.env = append(j.env, parseEnvFile(b)...)
	}
	if b, err := os.ReadFile(f.path); err == nil {
		for line := range strings.Lines(string(b)) {
			if dir := strings.TrimSpace(line); dir != "" {
				j.env = append(j.env, "PATH="+dir+string(os.PathListSeparator)+j.lookup("PATH"))
			}
		}
	}
	if b, err := os.ReadFile(f.summary); err == nil && len(b) > 0 {
		if len(b) > stepSummaryLimit {
			j.log.printf("##[error]$GITHUB_STEP_SUMMARY upload aborted, supports content up to a size of %dk, got %dk.",
				stepSummaryLimit/1024, len(b)/1024)
		} else {
			j.log.addSummary(b)
		}
	}
	for _, p := range []string{f.env, f.path, f.output, f.state, f.summary} {
		_ = os.Remove(p)
	}
}

// lookup is the job's value of name: the last of its variables, else the
// runner's environment.
func (j *jobRun) lookup(name string) string {
	for i := len(j.env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(j.env[i], "="); ok && k == name {
			return v
		}
	}
	return os.Getenv(name)
}

// parseEnvFile reads GITHUB_ENV's two forms, NAME=value and a
// NAME<<DELIMITER block (actions/runner FileCommandManager.cs:160-219,
// read by EnvFileKeyValuePairs, :353-440).
func parseEnvFile(b []byte) []string {
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if name, delim, ok := strings.Cut(line, "<<"); ok && !strings.Contains(name, "=") {
			var val []string
			for sc.Scan() && sc.Text() != delim {
				val = append(val, sc.Text())
			}
			out = append(out, name+"="+strings.Join(val, "\n"))
			continue
		}
		if name, _, ok := strings.Cut(line, "="); ok && name != "" {
			out = append(out, line)
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}
