// Package fakerunner is a stand-in for the GitHub Actions runner's listener
// (bin/Runner.Listener) that talks to the fake GitHub of package fakegithub.
// It honours the real runner's contract: started as `Runner.Listener run`
// with the JIT configuration in ACTIONS_RUNNER_INPUT_JITCONFIG (never argv);
// its root is the parent of the directory of the resolved path of its own
// executable, where it writes the JIT files (and refuses to start if another
// runner's .runner is there); it goes online, takes one job, "runs" it by
// allocating and touching the memory and burning the CPU the job asks for,
// for the job's duration, reports the result and exits with the real
// listener's exit codes. Like the real runner it leaves its logs in the
// root's _diag/: Runner_<time>-utc.log from the start, and
// Worker_<time>-utc.log once it takes a job (the real listener's Worker
// process writes it). It reads its root's .env over its environment, and
// runs the job hooks ACTIONS_RUNNER_HOOK_JOB_STARTED and _COMPLETED name
// as the real runner does (hooks.go): as the job's first and last steps,
// with the job's GITHUB_* variables and environment files; their output,
// with the job's own step's, is the job's log, which it reports with the
// job's result and step summary (fakegithub.JobRecord.Log, StepSummary).
// Its folders follow the runner's per-job rules (folders.go): the work
// folder of .runner, relative to the root or absolute, used through a
// link as given; _temp emptied at each job's start and end, _actions
// deleted at its start, the workspace, _PipelineMapping and the tool
// cache (RUNNER_TOOL_CACHE, RUNNER_TOOLSDIRECTORY, AGENT_TOOLSDIRECTORY,
// else _work/_tool) kept; HOME passed through. A CI-shaped job (ci.go)
// and a probe job (probe.go) report their setup and their reading with
// the job's result.
//
// Main is usable from any program (the CLI demo dispatches to it when its
// own name is Runner.Listener): no flag globals, no os.Exit.
package fakerunner

import (
	"context"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/runner-manager/runner-manager/simulate/internal/runnerproto"
)

// The listener's exit codes (actions/runner's Constants.Runner.ReturnCode).
const (
	// ExitSuccess: one job done, or the registration was deleted while
	// idle, or stopped by a signal while idle.
	ExitSuccess = 0
	// ExitTerminated: bad configuration, runner unknown, refused root.
	ExitTerminated = 1
	// ExitRetryable: the service could not be reached for too long.
	ExitRetryable = 2
	// ExitSessionConflict: another listener holds this runner's session.
	ExitSessionConflict = 5
	// ExitVersionDeprecated: the version is deprecated and
	// ACTIONS_RUNNER_RETURN_VERSION_DEPRECATED_EXIT_CODE=1 was set.
	ExitVersionDeprecated = 7
)

// Version is the version the fake runner reports unless its bin/ holds a
// VersionFile.
const Version = runnerproto.RunnerVersion

// VersionFile, in the runner's bin/, names the version it reports instead
// of Version: the fake GitHub's packages of other releases carry one, so an
// installed update is a runner of the new version.
const VersionFile = runnerproto.VersionFile

// Config is one run of the listener.
type Config struct {
	// Root is the runner root: the JIT files are written there.
	Root string
	// JITConfig is the encoded JIT configuration (a secret: never printed).
	JITConfig string
	// ReturnDeprecated makes a deprecated version exit 7 instead of 1.
	ReturnDeprecated bool
	// Stdout receives the listener's log (also written to _diag/).
	Stdout io.Writer
	// GiveUpAfter is how long the service may stay unreachable before the
	// listener exits 2 (default 60 s).
	GiveUpAfter time.Duration
	// HTTPClient talks to the service (default: a plain client).
	HTTPClient *http.Client
	// BootDelay is how long the listener takes to start before it
	// connects; negative means none, 0 what the JIT configuration says
	// (the fake GitHub's WithRunnerBootDelay).
	BootDelay time.Duration
	// Version is the runner version reported (default Version).
	Version string
}

// Main runs the listener as a program. args are the program's arguments
// (os.Args[1:]; a leading path ending in Runner.Listener is skipped); the
// configuration comes from the environment; the root from the executable's
// resolved path. It returns the exit code.
func Main(args []string) int {
	if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "Runner.Listener") {
		args = args[1:]
	}
	out := os.Stdout
	if len(args) == 0 || args[0] != "run" {
		if len(args) > 0 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
			fmt.Fprintln(out, "usage: Runner.Listener run   (the JIT configuration comes from "+runnerproto.EnvJITConfig+")")
			return ExitSuccess
		}
		fmt.Fprintln(os.Stderr, "usage: Runner.Listener run   (the JIT configuration comes from "+runnerproto.EnvJITConfig+")")
		return ExitTerminated
	}
	for _, a := range args[1:] {
		if a == "--jitconfig" || strings.HasPrefix(a, "--jitconfig=") {
			fmt.Fprintln(os.Stderr, "refusing --jitconfig on the command line: anyone can read argv; pass it in "+runnerproto.EnvJITConfig)
			return ExitTerminated
		}
	}
	root, err := Root()
	if err != nil {
		fmt.Fprintln(os.Stderr, "cannot find the runner root:", err)
		return ExitTerminated
	}
	loadDotEnv(root)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, Config{
		Root:             root,
		JITConfig:        os.Getenv(runnerproto.EnvJITConfig),
		ReturnDeprecated: os.Getenv(runnerproto.EnvReturnDeprecated) == "1",
		Stdout:           out,
		Version:          versionIn(root),
	})
}

// Root returns the runner root as the real runner finds it: the parent of
// the directory of the resolved path of the running executable.
func Root() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(exe)
	if err != nil {
		return "", err
	}
	return filepath.Dir(filepath.Dir(real)), nil
}

// versionIn is the version the runner in root reports: its bin/'s
// VersionFile, else Version.
func versionIn(root string) string {
	b, err := os.ReadFile(filepath.Join(root, "bin", VersionFile))
	if v := strings.TrimSpace(string(b)); err == nil && v != "" {
		return v
	}
	return Version
}

// listener is one run's state.
type listener struct {
	cfg      Config
	log      io.Writer
	hc       *http.Client
	runner   runnerproto.RunnerFile
	creds    runnerproto.Credentials
	key      *rsa.PrivateKey
	token    string
	session  string
	online   bool
	lastMsg  int64
	hostname string
}

// Run runs the listener until its one job is done, it is stopped, or it
// fails, and returns the exit code.
func Run(ctx context.Context, cfg Config) int {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.GiveUpAfter <= 0 {
		cfg.GiveUpAfter = time.Minute
	}
	if cfg.Version == "" {
		cfg.Version = Version
	}
	l := &listener{cfg: cfg, log: cfg.Stdout, hc: cfg.HTTPClient}
	if l.hc == nil {
		l.hc = &http.Client{}
	}
	l.hostname, _ = os.Hostname()
	if code, ok := l.configure(); !ok {
		return code
	}
	if diag, err := l.openDiag(); err == nil {
		defer diag.Close()
		l.log = io.MultiWriter(cfg.Stdout, diag)
	}
	if !l.boot(ctx) {
		l.printf("Runner listener stopped.")
		return ExitSuccess
	}
	return l.listen(ctx)
}

func (l *listener) printf(format string, args ...any) {
	fmt.Fprintf(l.log, time.Now().UTC().Format("2006-01-02 15:04:05Z")+": "+format+"\n", args...)
}

// configure decodes the JIT configuration and writes its files into the
// root, refusing a root that holds another runner.
func (l *listener) configure() (int, bool) {
	fail := func(format string, args ...any) (int, bool) {
		fmt.Fprintf(l.log, format+"\n", args...)
		return ExitTerminated, false
	}
	if l.cfg.JITConfig == "" {
		return fail("Not configured: set %s to a JIT configuration.", runnerproto.EnvJITConfig)
	}
	files, err := runnerproto.DecodeJITConfig(l.cfg.JITConfig)
	if err != nil {
		return fail("Cannot read the JIT configuration: %v", err)
	}
	var params runnerproto.RSAParams
	if json.Unmarshal(files[runnerproto.FileRunner], &l.runner) != nil || l.runner.AgentID == 0 || l.runner.ServerURL == "" ||
		json.Unmarshal(files[runnerproto.FileCredentials], &l.creds) != nil || l.creds.Data.ClientID == "" ||
		json.Unmarshal(files[runnerproto.FileRSAParams], &params) != nil {
		return fail("Cannot read the JIT configuration: %v: its files are not what a runner expects", runnerproto.ErrBadJITConfig)
	}
	if l.key, err = parseKey(params); err != nil {
		return fail("Cannot read the JIT configuration: %v: bad RSA parameters", runnerproto.ErrBadJITConfig)
	}
	if b, err := os.ReadFile(filepath.Join(l.cfg.Root, runnerproto.FileRunner)); err == nil {
		var prev runnerproto.RunnerFile
		if json.Unmarshal(b, &prev) != nil || prev.AgentID != l.runner.AgentID || prev.AgentName != l.runner.AgentName {
			return fail("Refusing to start: the runner root %s already holds the configuration of runner %q (%d); give each runner its own root.",
				l.cfg.Root, prev.AgentName, prev.AgentID)
		}
	}
	for _, name := range []string{runnerproto.FileRunner, runnerproto.FileCredentials, runnerproto.FileRSAParams} {
		if err := os.WriteFile(filepath.Join(l.cfg.Root, name), files[name], 0o600); err != nil {
			return fail("Cannot write %s into the runner root: %v", name, err)
		}
	}
	return 0, true
}

// openDiag opens the listener's log, _diag/Runner_<time>-utc.log, as the
// real listener names it.
func (l *listener) openDiag() (*os.File, error) { return openDiagLog(l.cfg.Root, "Runner_") }

// openDiagLog opens <root>/_diag/<prefix><yyyyMMdd-HHmmss>-utc.log, the
// real runner's names for its listener's (Runner_) and each job's worker's
// (Worker_) logs.
func openDiagLog(root, prefix string) (*os.File, error) {
	dir := filepath.Join(root, "_diag")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	name := prefix + time.Now().UTC().Format("20060102-150405") + "-utc.log"
	return os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

func parseKey(p runnerproto.RSAParams) (*rsa.PrivateKey, error) {
	var vals [6]*big.Int
	for i, s := range []string{p.Modulus, p.Exponent, p.D, p.P, p.Q, p.DP} {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) == 0 {
			return nil, errors.New("bad RSA parameter")
		}
		vals[i] = new(big.Int).SetBytes(b)
	}
	k := &rsa.PrivateKey{
		PublicKey: rsa.PublicKey{N: vals[0], E: int(vals[1].Int64())},
		D:         vals[2],
		Primes:    []*big.Int{vals[3], vals[4]},
	}
	if err := k.Validate(); err != nil {
		return nil, err
	}
	k.Precompute()
	return k, nil
}

// boot waits out the listener's start-up, as the real one spends it
// starting, reading its configuration and connecting; false when ctx
// ended first.
func (l *listener) boot(ctx context.Context) bool {
	d := l.cfg.BootDelay
	if d == 0 {
		d = time.Duration(l.runner.FakeBootDelayMS) * time.Millisecond
	}
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// listen connects, takes one job and runs it.
func (l *listener) listen(ctx context.Context) int {
	for {
		code, done := l.connect(ctx)
		if done {
			return code
		}
		code, done = l.poll(ctx)
		if done {
			return code
		}
	}
}

// connect gets an access token and opens a session; done reports an exit.
func (l *listener) connect(ctx context.Context) (int, bool) {
	err := l.authenticate(ctx)
	if err == nil {
		err = l.openSession(ctx)
	}
	if err == nil {
		if !l.online {
			l.printf("√ Connected to GitHub")
			l.printf("Current runner version: '%s'", l.cfg.Version)
			l.printf("Listening for Jobs")
		}
		l.online = true
		return 0, false
	}
	return l.exitFor(ctx, err)
}

// exitFor maps a failure to the exit code the real listener would give.
func (l *listener) exitFor(ctx context.Context, err error) (int, bool) {
	var se *serviceError
	switch {
	case ctx.Err() != nil:
		l.printf("Runner listener stopped.")
		return ExitSuccess, true
	case errors.Is(err, errGone) && l.online:
		l.printf("The runner registration was deleted from the server; exiting.")
		return ExitSuccess, true
	case errors.Is(err, errGone):
		l.printf("Failed to connect: the runner registration was not found. %v", err)
		return ExitTerminated, true
	case errors.As(err, &se) && se.ex.TypeName == runnerproto.ExVersionDeprecated:
		l.printf("Runner version %s is deprecated and cannot receive messages. Install a newer runner.", l.cfg.Version)
		if l.cfg.ReturnDeprecated {
			return ExitVersionDeprecated, true
		}
		return ExitTerminated, true
	case errors.As(err, &se) && se.ex.TypeName == runnerproto.ExSessionConflict:
		l.printf("A session for this runner already exists.")
		return ExitSessionConflict, true
	case errors.As(err, &se):
		l.printf("Runner listener terminated: %v", err)
		return ExitTerminated, true
	default:
		l.printf("Runner listener gave up: the service was unreachable for %s: %v", l.cfg.GiveUpAfter, err)
		return ExitRetryable, true
	}
}

// poll long-polls for the job and runs it; done reports an exit, not done
// means reconnect (the session or the token lapsed).
func (l *listener) poll(ctx context.Context) (int, bool) {
	for {
		var msg runnerproto.Message
		q := url.Values{"sessionId": {l.session}, "lastMessageId": {strconv.FormatInt(l.lastMsg, 10)}}
		status, err := l.do(ctx, http.MethodGet, l.url("/messages?"+q.Encode()), "", nil, true, &msg)
		var se *serviceError
		switch {
		case err == nil && status == http.StatusOK && msg.MessageType == runnerproto.MessageTypeJobRequest:
			l.lastMsg = msg.MessageID
			var jr runnerproto.JobRequest
			if json.Unmarshal([]byte(msg.Body), &jr) != nil {
				l.printf("Ignoring a job message that cannot be read.")
				continue
			}
			if code, done := l.runJob(ctx, jr); done {
				return code, true
			}
		case err == nil:
			// 202: nothing yet.
		case errors.As(err, &se) && se.status == http.StatusUnauthorized:
			return 0, false // token lapsed: reconnect
		case errors.As(err, &se) && se.ex.TypeName != runnerproto.ExAgentNotFound && se.status == http.StatusNotFound:
			l.session = ""
			return 0, false // session lapsed: reconnect
		default:
			if ctx.Err() != nil {
				l.closeSession()
			}
			return l.exitFor(ctx, err)
		}
	}
}

// runJob runs one job; done is false when the job was taken back before it
// started (keep listening).
func (l *listener) runJob(ctx context.Context, jr runnerproto.JobRequest) (int, bool) {
	base := "/jobrequests/" + strconv.FormatInt(jr.RequestID, 10)
	if _, err := l.do(ctx, http.MethodPost, l.url(base+"/start"), "application/json", []byte("{}"), true, nil); err != nil {
		var se *serviceError
		if errors.As(err, &se) && se.ex.TypeName == runnerproto.ExJobNotFound {
			l.printf("Job %s was taken back before it started.", jr.DisplayName)
			return 0, false
		}
		if ctx.Err() != nil {
			// Stopped while reporting the start: the service may have
			// recorded it, so report the job canceled (a no-op if not).
			l.finish(ctx, base, "canceled")
			l.closeSession()
		}
		return l.exitFor(ctx, err)
	}
	l.printf("Running job: %s", jr.DisplayName)
	// The real listener hands each job to a Worker process, whose first act
	// is to open _diag/Worker_<time>-utc.log: the trace a manager reads to
	// know that a runner ran a job before GitHub says so.
	if wlog, err := openDiagLog(l.cfg.Root, "Worker_"); err == nil {
		defer wlog.Close()
		fmt.Fprintf(wlog, "%s: Worker started for job %s (request %d)\n", time.Now().UTC().Format("2006-01-02 15:04:05Z"), jr.DisplayName, jr.RequestID)
	}

	workCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	lost := make(chan struct{})
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		l.renew(workCtx, base, time.Duration(jr.RenewMS)*time.Millisecond, lost, cancel)
	}()
	// The job's steps: the started hook (its first step, always run), the
	// job's own work if the hook succeeded (a job's steps run on success),
	// then the completed hook (its last, always run). A hook that fails
	// fails the job (actions/runner JobExtension.cs:302-311, :571-580).
	// The job's folders first, as the runner's worker prepares them before
	// any step; a work folder it cannot make fails the job
	// (JobRunner.cs:146-157).
	folders, err := l.prepareFolders(jr.Repository)
	run := l.newJobRun(jr, folders)
	hooksOK := err == nil
	if err != nil {
		run.log.printf("##[error]%v", err)
	} else {
		hooksOK = run.hook(workCtx, EnvHookJobStarted, StepJobStarted)
	}
	if hooksOK {
		if jr.CI != nil && !run.ciSetup(workCtx, *jr.CI) {
			hooksOK = false
		}
		if len(jr.Probe) > 0 {
			run.probe(jr.Probe)
		}
		if hooksOK && jr.Script != "" {
			run.script(workCtx, jr.Script)
		}
		if hooksOK {
			work(workCtx, time.Duration(jr.DurationMS)*time.Millisecond, jr.MemoryBytes, jr.CPUMillicores)
		}
	}
	if err == nil && workCtx.Err() == nil && !run.hook(workCtx, EnvHookJobCompleted, StepJobCompleted) {
		hooksOK = false
	}
	cancel()
	<-renewDone
	folders.cleanup()

	result := jr.Result
	if !hooksOK {
		result = "failed"
	}
	select {
	case <-lost:
		l.printf("Job %s was canceled by the server.", jr.DisplayName)
		l.closeSession()
		return ExitSuccess, true
	default:
	}
	if ctx.Err() != nil {
		result = "canceled"
	}
	if err := l.finishWith(ctx, base, runnerproto.Finish{Result: result, Log: run.log.String(), StepSummary: run.log.stepSummary(),
		Setup: run.setup, Probe: run.probed}); err != nil {
		l.printf("Could not report the end of job %s: %v", jr.DisplayName, err)
	}
	l.printf("Job %s completed with result: %s", jr.DisplayName, titleCase(result))
	if jr.HangAfter && ctx.Err() == nil {
		// A hung runner: its job is over at GitHub, its process is not.
		l.printf("Hanging after job %s until stopped.", jr.DisplayName)
		<-ctx.Done()
	}
	l.closeSession()
	return ExitSuccess, true
}

func titleCase(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
