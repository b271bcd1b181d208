package datadir

import (
	"os"
	"path/filepath"

	rm "github.com/runner-manager/runner-manager"
)

// The names under a data directory, spelled here alone (see the package
// doc for the tree). Changing one moves a user's data: a migration.
const (
	journalName  = "journal.db"
	lockName     = "manager.lock"
	socketName   = "manager.sock"
	daemonLog    = "daemon.log"
	stateDir     = "state"
	hostIDName   = "host-id"
	peaksName    = "memory-peaks.toml"
	runnersDir   = "runners"
	badDir       = ".bad"
	trialPrefix  = ".trial-"
	attemptsDir  = "attempts"
	failedDir    = ".failed"
	spareDir     = ".spare"
	containerDir = "failed-containers"
	logsDir      = "logs"
	vmDir        = "vm"
	overlaysDir  = ".overlays"
	slotsDir     = "slots"
	cachesDir    = "caches"
	credsDir     = "credentials"
)

// RunnerLogName is the file in an attempt root that receives the runner's
// stdout and stderr (the native launcher's), kept by KeepLogs.
const RunnerLogName = "runner.log"

// Dir is a data directory. Its methods say where each thing is under it;
// none of them touches the disk but those that say so.
type Dir struct{ root string }

// New is the data directory at root, made absolute (as given if the
// working directory cannot be read), so that its paths stay right for a
// process that changes directory, and for a runner whose working directory
// is under it.
func New(root string) Dir {
	if abs, err := filepath.Abs(root); err == nil {
		root = abs
	}
	return Dir{root: root}
}

// Root is the data directory itself.
func (d Dir) Root() string { return d.root }

// Create creates the data directory and its state/ (0700) if missing. An
// existing directory's mode is left alone.
func (d Dir) Create() error { return os.MkdirAll(d.State(), 0o700) }

// Journal is the SQLite journal's file (its WAL and shared memory beside
// it).
func (d Dir) Journal() string { return d.join(journalName) }

// LockFile is the file the daemon's Lock is taken on.
func (d Dir) LockFile() string { return d.join(lockName) }

// Socket is where the daemon's local API listens.
func (d Dir) Socket() string { return d.join(socketName) }

// DaemonLog is where a daemon run by launchd writes its output.
func (d Dir) DaemonLog() string { return d.join(daemonLog) }

// State holds what the host keeps across restarts: its id and the memory
// peaks.
func (d Dir) State() string { return d.join(stateDir) }

// HostIDFile holds the host's id (LoadOrCreateHostID).
func (d Dir) HostIDFile() string { return d.join(stateDir, hostIDName) }

// PeaksFile holds the memory peaks the meters bank (LoadPeaks, SavePeaks).
func (d Dir) PeaksFile() string { return d.join(stateDir, peaksName) }

// Runners holds the installed runners, one directory per version.
func (d Dir) Runners() string { return d.join(runnersDir) }

// Runner is where the runner of version is installed.
func (d Dir) Runner(version string) string { return d.join(runnersDir, version) }

// BadRunners holds one file per runner release that failed its trial.
func (d Dir) BadRunners() string { return d.join(runnersDir, badDir) }

// BadRunner marks the runner release version bad: it failed its trial.
func (d Dir) BadRunner(version string) string { return d.join(runnersDir, badDir, version) }

// RunnerTrial is where a runner release is staged before it is tried.
func (d Dir) RunnerTrial(version string) string { return d.join(runnersDir, trialPrefix+version) }

// Attempts holds the native attempts' roots: a runner whose working
// directory is under it is one of this data directory's.
func (d Dir) Attempts() string { return d.join(attemptsDir) }

// Attempt is the root of native attempt a (it may not exist).
func (d Dir) Attempt(a rm.AttemptID) string { return d.join(attemptsDir, a.String()) }

// FailedAttempts holds the roots of failed native attempts, kept a while
// for debugging.
func (d Dir) FailedAttempts() string { return d.join(attemptsDir, failedDir) }

// FailedAttempt is where the root of failed native attempt a is kept.
func (d Dir) FailedAttempt(a rm.AttemptID) string {
	return d.join(attemptsDir, failedDir, a.String())
}

// SpareRoots holds the attempt roots prepared for the next launches.
func (d Dir) SpareRoots() string { return d.join(attemptsDir, spareDir) }

// FailedContainerLogs holds a failed container attempt's runner output
// (<attempt>.log): its container goes at the attempt's end.
func (d Dir) FailedContainerLogs() string { return d.join(attemptsDir, containerDir) }

// KeptLogs holds the logs of ended attempts (KeepLogs, PruneKeptLogs).
func (d Dir) KeptLogs() string { return d.join(logsDir) }

// KeptLog is where the logs of attempt a are kept once it ended.
func (d Dir) KeptLog(a rm.AttemptID) string { return d.join(logsDir, a.String()) }

// RunnerLog is the path of native attempt a's runner log: in its root
// while it is live, then where KeepLogs kept it, or in the kept root of a
// failed attempt; the first when none exists (yet, or any more). It looks
// at the disk.
func (d Dir) RunnerLog(a rm.AttemptID) string {
	live := filepath.Join(d.Attempt(a), RunnerLogName)
	if _, err := os.Stat(live); err == nil {
		return live
	}
	for _, kept := range []string{
		filepath.Join(d.KeptLog(a), RunnerLogName),
		filepath.Join(d.FailedAttempt(a), RunnerLogName),
	} {
		if _, err := os.Stat(kept); err == nil {
			return kept
		}
	}
	return live
}

// VMs holds the VM attempts' directories.
func (d Dir) VMs() string { return d.join(vmDir) }

// VM is the directory of VM attempt a (it may not exist).
func (d Dir) VM(a rm.AttemptID) string { return d.join(vmDir, a.String()) }

// FailedVMs holds the console and QEMU logs of failed VM attempts, kept a
// while for debugging.
func (d Dir) FailedVMs() string { return d.join(vmDir, failedDir) }

// FailedVM is where the logs of failed VM attempt a are kept.
func (d Dir) FailedVM(a rm.AttemptID) string { return d.join(vmDir, failedDir, a.String()) }

// VMOverlays holds the templates the VM attempts' disks are made from.
func (d Dir) VMOverlays() string { return d.join(vmDir, overlaysDir) }

// Slots is reserved for the per-repository workspace slots (a work folder
// kept between one repository's jobs, leased to one attempt at a time,
// never shared across repositories). Nothing uses it yet.
func (d Dir) Slots() string { return d.join(slotsDir) }

// Caches is reserved for the per-repository dependency and tool caches,
// under one host-wide cap with Slots. Nothing uses it yet.
func (d Dir) Caches() string { return d.join(cachesDir) }

// Credentials holds the secrets `runner-manager auth login` stores on
// Linux (one 0600 file each, the directory 0700; credstore.File) and, on
// Windows, their DPAPI-encrypted files.
func (d Dir) Credentials() string { return d.join(credsDir) }

func (d Dir) join(elem ...string) string {
	return filepath.Join(append([]string{d.root}, elem...)...)
}
