package native

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// DefaultKeepFailed is how long a failed attempt's root directory is kept for
// debugging before a later Cleanup prunes it.
const DefaultKeepFailed = 24 * time.Hour

// adoptedPollEvery is how often an adopted process is looked at where the OS
// gives no exit notification for a process that is not our child.
const adoptedPollEvery = 2 * time.Second

// smallFile is the size up to which a top-level file of the installed runner
// (run.sh, config.sh, env.sh, .env, .path) is copied into an attempt root;
// larger ones are hard-linked like bin/.
const smallFile = 1 << 20

// skippedTopLevel are entries of an installed runner never carried into an
// attempt root: bin/ is rebuilt, _work/ and _diag/ are the attempt's own, and
// a configured runner's files would make every attempt the same runner.
var skippedTopLevel = map[string]bool{
	"bin": true, "_work": true, "_diag": true,
	".runner": true, ".credentials": true, ".credentials_rsaparams": true,
	".service": true, datadir.RunnerLogName: true,
}

// Launcher starts runners as processes of this host, each in a root
// directory of its own, <data>/attempts/<id>/:
//
//   - bin/ is a real directory whose files are hard links to the installed
//     runner's (copies when the data directory is on another filesystem), so
//     the runner, which takes the parent of its executable's real path as its
//     root, writes its JIT configuration into the attempt root and not into
//     the shared install;
//   - directories of the install (externals/) are symlinks to it; small
//     top-level files (run.sh, .env, .path) are copies;
//   - _work/ and _diag/ are the attempt's own; runner.log (0600) holds the
//     runner's stdout and stderr.
//
// The listener (bin/Runner.Listener run) gets the JIT configuration in
// ACTIONS_RUNNER_INPUT_JITCONFIG, never in argv, and an environment built
// from an allow-list (see WithPassEnv), never a copy of the manager's: a job
// reads every variable its runner has. It runs in a process group
// of its own on Unix, so Stop reaches the whole tree. On Windows there is no
// process group: Stop kills the listener only, and what the job left running
// outlives it (a gap to close with a job object).
//
// Cleanup keeps an attempt's logs under <data>/logs/<id>/ (runner.log, and
// _diag/ gzipped; datadir.Dir.PruneKeptLogs bounds them) and removes its root; a failed
// attempt's root is moved to
// <data>/attempts/.failed/<id>/ and kept for KeepFailed (DefaultKeepFailed),
// then pruned by a later Cleanup. Cleanup also prepares up to two spare
// roots per installed runner in <data>/attempts/.spare/, so that the next
// Launch renames one into place instead of building it: from "launch" to a
// started listener then takes a rename and a fork.
type Launcher struct {
	dir        datadir.Dir
	keepFailed time.Duration
	noKeptLogs bool // WithoutKeptLogs
	now        func() time.Time
	log        *slog.Logger
	passEnv    []string
	pollEvery  time.Duration
	spares     *spareRoots
	scrubOnce  sync.Once
	// copyWarned holds the installed runners whose files had to be copied
	// (not hard-linked): said once at WARN per runner, then at DEBUG.
	copyWarned sync.Map
	// contain keeps each attempt's processes together (contain.go).
	contain containment
	// homeFiles and homeLinks fill each attempt's fresh HOME (WithHome);
	// sharedHome gives runners the manager's own (WithSharedHome).
	homeFiles, homeLinks []string
	homeSet, sharedHome  bool
	// report, when set, writes the job report's hooks into each root
	// (WithJobReport).
	report *jobReport
}

var (
	_ rm.Launcher        = (*Launcher)(nil)
	_ rm.MemoryContainer = (*Launcher)(nil)
	_ rm.GroupMeter      = (*Launcher)(nil)
	_ rm.RootLister      = (*Launcher)(nil)
	_ rm.JobHookReader   = (*Launcher)(nil)
	_ rm.WarmLauncher    = (*Launcher)(nil)
)

// Option configures a Launcher.
type Option func(*Launcher)

// WithKeepFailed sets how long a failed attempt's root is kept for debugging;
// 0 removes it at once, like a successful one's.
func WithKeepFailed(d time.Duration) Option {
	return func(l *Launcher) { l.keepFailed = max(d, 0) }
}

// WithClock sets the clock that ages kept failed roots (tests).
func WithClock(now func() time.Time) Option {
	return func(l *Launcher) { l.now = now }
}

// WithoutKeptLogs makes Cleanup remove an attempt's logs with its root
// (tests and embedders that keep no history).
func WithoutKeptLogs() Option {
	return func(l *Launcher) { l.noKeptLogs = true }
}

// WithLogger sets where the launcher notes what it could not do
// perfectly (a copy instead of hard links, a start time not read).
func WithLogger(log *slog.Logger) Option {
	return func(l *Launcher) { l.log = log }
}

// NewLauncher returns a launcher keeping attempt roots under
// dataDir/attempts and finding installed runners under dataDir/runners.
func NewLauncher(dataDir string, opts ...Option) *Launcher {
	l := &Launcher{
		dir:        datadir.New(dataDir),
		keepFailed: DefaultKeepFailed,
		now:        time.Now,
		log:        slog.Default(),
		pollEvery:  adoptedPollEvery,
	}
	for _, o := range opts {
		o(l)
	}
	l.spares = newSpareRoots(l.dir.SpareRoots(), l.log)
	return l
}

// Close removes the spare roots prepared for later launches; the launcher
// stays usable (a later Cleanup prepares spares again). Call it when the
// manager stops, or before checking that a data directory holds nothing.
func (l *Launcher) Close() error {
	return errors.Join(l.spares.drop(), l.closeCgroups())
}

// Root is the attempt's root directory (it may not exist).
func (l *Launcher) Root(a rm.AttemptID) string {
	return l.dir.Attempt(a)
}

// RunnerLog is the path of the attempt's runner.log: in its root while it
// is live, then where Cleanup kept it, or in the kept root of a failed
// attempt (datadir.Dir.RunnerLog).
func (l *Launcher) RunnerLog(a rm.AttemptID) string { return l.dir.RunnerLog(a) }

// RanJob reports whether the attempt's runner ran a job, from the trace the
// runner itself leaves: a Worker log in <root>/_diag/. It is local evidence,
// known the moment the runner exits, where GitHub's word on the job may come
// a poll later. Ask before Cleanup removes the root; false once it is gone.
func (l *Launcher) RanJob(a rm.AttemptID) bool {
	if a.IsZero() {
		return false
	}
	m, err := filepath.Glob(filepath.Join(l.Root(a), "_diag", runnerpkg.WorkerLogPattern))
	return err == nil && len(m) > 0
}

// Launch prepares the attempt's root from spec.RunnerDir (the newest runner
// under <data>/runners when empty) and starts its listener. ctx bounds the
// preparation only: the runner outlives it and is stopped with Stop. On error
// the root may exist; Cleanup removes it.
func (l *Launcher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	if spec.Attempt.IsZero() {
		return nil, errors.New("launch: the spec names no attempt")
	}
	if spec.JITConfig == "" {
		return nil, fmt.Errorf("launch attempt %s: no JIT configuration to start the runner with", spec.Attempt)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	runnerDir := spec.RunnerDir
	if runnerDir == "" {
		newest, err := runnerpkg.Newest(l.dir.Root())
		if err != nil {
			return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
		}
		runnerDir = newest
	}
	if err := os.MkdirAll(l.dir.Attempts(), 0o700); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	src, err := resolveRunner(runnerDir)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	root := l.Root(spec.Attempt)
	if _, err := os.Lstat(root); err == nil {
		return nil, fmt.Errorf("launch attempt %s: its root %s exists already: each attempt is launched once", spec.Attempt, root)
	}
	if !l.spares.take(src, root) {
		copied, err := buildRoot(src, root)
		if err != nil {
			return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
		}
		if copied > 0 {
			level := slog.LevelDebug
			if _, said := l.copyWarned.LoadOrStore(src, true); !said {
				level = slog.LevelWarn
			}
			l.log.Log(ctx, level, "runner files copied, not hard-linked: put the data directory on the runner's filesystem to save the copy",
				"attempt", spec.Attempt.String(), "files", copied, "runner", src)
		}
	}
	l.spares.launched(spec.Attempt, src)
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	if err := prepareWarm(root, spec); err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	home, err := l.prepareHome(root)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	logFile, err := os.OpenFile(filepath.Join(root, datadir.RunnerLogName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: runner log: %w", spec.Attempt, err)
	}
	env := warmEnv(l.environ(spec), spec, home)
	if l.report != nil {
		env = l.report.install(ctx, l.log, root, spec, env)
	}
	grp := l.attemptGroup(spec.Attempt)
	exe := filepath.Join(root, "bin", runnerpkg.ListenerName)
	cmd := &exec.Cmd{
		Path:        exe,
		Args:        []string{exe, "run"},
		Dir:         root,
		Env:         env,
		Stdout:      logFile,
		Stderr:      logFile,
		SysProcAttr: newProcessGroup(),
	}
	err = l.startRunner(spec.Attempt, cmd, grp)
	_ = logFile.Close() // the child holds its own descriptor
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: start %s: %w", spec.Attempt, exe, err)
	}
	p := &childProcess{pid: cmd.Process.Pid, cmd: cmd, done: make(chan struct{}), code: -1}
	// Read before anything reaps it: an exited child stays in the process
	// table until Wait, so its start time can still be read.
	if p.start, err = platform.StartTime(p.pid); err != nil {
		l.log.Warn("runner start time not read: it cannot be adopted after a restart",
			"attempt", spec.Attempt.String(), "pid", p.pid, "err", err)
	}
	l.remember(spec.Attempt, p.pid, p.start, p.done)
	go p.wait()
	return p, nil
}

// Adopt watches a runner started before a restart, if (pid, start) is still
// that process: on Linux through a pidfd, so its exit is seen at once;
// elsewhere by looking every 2 s. Its ExitCode is -1: the manager is not its
// parent. rm.ErrProcessGone when it is gone or another process now.
func (l *Launcher) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	if pid <= 0 || start == 0 {
		return nil, fmt.Errorf("adopt attempt %s: pid %d, start %d: %w", a, pid, start, rm.ErrProcessGone)
	}
	done, err := watchExit(pid, start, l.pollEvery)
	if err != nil {
		return nil, fmt.Errorf("adopt attempt %s (pid %d): %w", a, pid, err)
	}
	l.remember(a, pid, start, done)
	return &adoptedProcess{pid: pid, start: start, done: done}, nil
}

// Cleanup ends the attempt's processes and removes its root. Every process
// left in the attempt (its cgroup's members; without one, its runner's
// process group and the processes carrying its environment marker) gets
// SIGTERM, then SIGKILL after the leftover grace, and is logged by
// command; its cgroup is removed. A failed attempt's root is moved to
// <data>/attempts/.failed/<id>/ and kept for KeepFailed. Every call also
// prunes kept roots older than that. A missing root is not an error.
func (l *Launcher) Cleanup(a rm.AttemptID, failed bool) error {
	if a.IsZero() {
		return errors.New("cleanup: no attempt named")
	}
	errs := []error{l.emptyAttempt(a)}
	root := l.Root(a)
	if _, err := os.Lstat(root); err == nil {
		errs = append(errs, unlinkWarm(root))
		if !l.noKeptLogs {
			errs = append(errs, l.dir.KeepLogs(a, root, l.now()))
		}
		if failed && l.keepFailed > 0 {
			errs = append(errs, l.keep(a, root))
		} else if err := datadir.RemoveAll(root); err != nil {
			errs = append(errs, fmt.Errorf("cleanup attempt %s: %w", a, err))
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		errs = append(errs, fmt.Errorf("cleanup attempt %s: %w", a, err))
	}
	errs = append(errs, l.pruneFailed())
	// Off the launch path: make the next launch from this runner cheap.
	l.spares.replenish(a)
	return errors.Join(errs...)
}

func (l *Launcher) keep(a rm.AttemptID, root string) error {
	kept := l.dir.FailedAttempt(a)
	if err := os.MkdirAll(filepath.Dir(kept), 0o700); err != nil {
		return fmt.Errorf("cleanup attempt %s: %w", a, err)
	}
	if err := datadir.RemoveAll(kept); err != nil {
		return fmt.Errorf("cleanup attempt %s: %w", a, err)
	}
	if err := os.Rename(root, kept); err != nil {
		return fmt.Errorf("cleanup attempt %s: keep its root: %w", a, err)
	}
	now := l.now()
	if err := os.Chtimes(kept, now, now); err != nil {
		return fmt.Errorf("cleanup attempt %s: %w", a, err)
	}
	if err := scrubRoot(kept); err != nil {
		return fmt.Errorf("cleanup attempt %s: remove the runner's credentials from its kept root: %w", a, err)
	}
	return nil
}

// scrubRoot removes every top-level file of a kept root but runner.log: the
// files the JIT configuration wrote (.runner, .credentials,
// .credentials_rsaparams, and whatever else it names), which would let
// anyone reading them act as the runner while its registration lasts, and
// the install's small copies, worth nothing for debugging. runner.log,
// _diag/ and _work/ stay. Removing by kind, not by name, also takes files a
// later runner version writes under names not known here.
func scrubRoot(root string) error {
	entries, err := os.ReadDir(root)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.Name() == datadir.RunnerLogName || !e.Type().IsRegular() {
			continue
		}
		if err := os.Remove(filepath.Join(root, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// pruneFailed removes kept roots older than keepFailed.
func (l *Launcher) pruneFailed() error {
	dir := l.dir.FailedAttempts()
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("prune failed attempts: %w", err)
	}
	now := l.now()
	// Roots kept by an earlier version still hold their credentials: scrub
	// each once, at this launcher's first prune.
	scrub := false
	l.scrubOnce.Do(func() { scrub = true })
	var errs []error
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			continue // removed meanwhile
		}
		path := filepath.Join(dir, e.Name())
		if now.Sub(info.ModTime()) >= l.keepFailed {
			if err := datadir.RemoveAll(path); err != nil {
				errs = append(errs, fmt.Errorf("prune failed attempt %s: %w", e.Name(), err))
			}
		} else if scrub && info.IsDir() {
			if err := scrubRoot(path); err != nil {
				errs = append(errs, fmt.Errorf("remove the runner's credentials from kept attempt %s: %w", e.Name(), err))
			}
		}
	}
	return errors.Join(errs...)
}

// resolveRunner returns the real, absolute path of the installed runner in
// runnerDir, checking it holds the listener.
func resolveRunner(runnerDir string) (string, error) {
	src, err := filepath.EvalSymlinks(runnerDir)
	if err == nil {
		src, err = filepath.Abs(src)
	}
	if err != nil {
		return "", fmt.Errorf("runner directory %s: %w (install one with `runner-manager runner install`, or fix the policy's runner directory)", runnerDir, err)
	}
	if _, err := os.Stat(filepath.Join(src, "bin", runnerpkg.ListenerName)); err != nil {
		return "", fmt.Errorf("runner directory %s has no bin/%s: %w (install one with `runner-manager runner install`, or fix the policy's runner directory)", runnerDir, runnerpkg.ListenerName, err)
	}
	return src, nil
}

// buildRoot builds an attempt root at root (which must not exist) from the
// installed runner at src (resolved), with an empty runner.log, and returns
// how many files were copied because hard links failed.
func buildRoot(src, root string) (copied int, err error) {
	if err := os.Mkdir(root, 0o700); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return 0, fmt.Errorf("attempt root %s exists already: each attempt is launched once", root)
		}
		return 0, err
	}
	n, err := linkTree(filepath.Join(src, "bin"), filepath.Join(root, "bin"))
	copied += n
	if err != nil {
		return copied, err
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		return copied, err
	}
	for _, e := range entries {
		name := e.Name()
		if skippedTopLevel[name] {
			continue
		}
		from, to := filepath.Join(src, name), filepath.Join(root, name)
		info, err := os.Stat(from)
		if err != nil {
			continue // a dangling link in the install: nothing to carry
		}
		switch {
		case info.IsDir():
			err = os.Symlink(from, to)
		case !info.Mode().IsRegular():
			continue
		case info.Size() <= smallFile:
			err = datadir.CopyFile(from, to, info.Mode().Perm())
		default:
			var c bool
			c, err = linkOrCopy(from, to)
			if c {
				copied++
			}
		}
		if err != nil {
			return copied, fmt.Errorf("attempt root: %s: %w", name, err)
		}
	}
	for _, dir := range []string{"_work", "_diag"} {
		if err := os.Mkdir(filepath.Join(root, dir), 0o700); err != nil {
			return copied, err
		}
	}
	log, err := os.OpenFile(filepath.Join(root, datadir.RunnerLogName), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return copied, err
	}
	return copied, log.Close()
}

// linkTree recreates the directory tree src at dst: directories made anew,
// files hard-linked (copied when that fails), symlinks recreated as they are.
func linkTree(src, dst string) (copied int, err error) {
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			info, err := d.Info()
			if err != nil {
				return err
			}
			return os.Mkdir(to, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(target, to)
		case d.Type().IsRegular():
			c, err := linkOrCopy(path, to)
			if c {
				copied++
			}
			return err
		}
		return nil // sockets, devices: nothing a runner needs
	})
	if err != nil {
		return copied, fmt.Errorf("attempt bin/: %w", err)
	}
	return copied, nil
}

// linkOrCopy hard-links src to dst, or copies it when linking fails (another
// filesystem: EXDEV; a filesystem without hard links), with src's mode.
// copied says which.
func linkOrCopy(src, dst string) (copied bool, err error) {
	linkErr := os.Link(src, dst)
	if linkErr == nil {
		return false, nil
	}
	info, err := os.Stat(src)
	if err != nil {
		return true, errors.Join(linkErr, err)
	}
	if err := datadir.CopyFile(src, dst, info.Mode().Perm()); err != nil {
		return true, errors.Join(linkErr, err)
	}
	return true, nil
}
