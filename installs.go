package runnermanager

import "time"

// RunnerInstalls are the runner releases installed on this host, as the
// loops read and prove them: the newest proven one, which a policy that
// launches them (Launches) starts from, and a newer one on trial, which
// one attempt proves (it listened, or ran a job) before every such policy
// launches it, and which is marked bad if that attempt ends before. It
// also says what a policy whose runner GitHub refused as deprecated
// (exit code 7) needs, so the engine decides the hold and the package's
// owner the advice. runnerpkg.Installs is the real one.
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
	// Launches reports whether pol's attempts start from these installs
	// (and so may prove the runner on trial), rather than from a runner
	// of the policy's own: its runner directory, or the one its image
	// brings.
	Launches(pol Policy) bool
	// InstalledAt is when the runner pol launches was put in place (for
	// a policy that Launches, the newest install); zero when unknown. A
	// runner refused as deprecated holds pol's launches until one put in
	// place after the refusal.
	InstalledAt(pol Policy) time.Time
	// DeprecatedFix is what gets pol a runner GitHub accepts after it
	// refused pol's as deprecated: one line for the policy's note and the
	// log, ending with when launches resume.
	DeprecatedFix(pol Policy) string
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
