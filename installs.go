package runnermanager

import "time"

// RunnerInstalls are the runner releases installed on this host for the
// native backend (a data directory's runners/<version>/), as the loops read
// and prove them: the newest proven one, which a policy without a runner
// directory launches, and a newer one on trial, which one attempt proves
// (it listened, or ran a job) before every such policy launches it, and
// which is marked bad if that attempt ends before. install.Installs is the
// real one.
type RunnerInstalls interface {
	// Newest is the directory of the newest proven runner; an error when
	// none is installed.
	Newest() (string, error)
	// Trial is the runner on trial: the newest unproven one, newer than
	// the newest proven one and not marked bad.
	Trial() (RunnerTrial, bool)
	// Claim makes attempt the proof of the runner on trial in dir; false
	// when another attempt has it already.
	Claim(dir string, attempt AttemptID) bool
	// Promote makes the runner on trial in dir the one policies launch.
	Promote(dir string) error
	// MarkBad records that version failed (reason, one line): it is not
	// installed or proven again until the record's RetryAt.
	MarkBad(version, reason string) (BadRunner, error)
	// LastBad is the newest release marked bad that still counts.
	LastBad() (BadRunner, bool)
}

// RunnerTrial is the runner on trial.
type RunnerTrial struct {
	Version string
	Dir     string
	// Attempt is the attempt proving it; zero while none claimed it.
	Attempt AttemptID
}

// BadRunner is a release that failed to install or to prove itself.
type BadRunner struct {
	Version string
	At      time.Time
	Reason  string
	// RetryAt is when it may be tried again.
	RetryAt time.Time
}
