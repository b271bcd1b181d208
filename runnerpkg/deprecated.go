package runnerpkg

import (
	"os"
	"time"

	rm "github.com/runner-manager/runner-manager"
)

// Launches reports whether pol's attempts start from the runners installed
// in the data directory: it names no runner directory, and its backend
// runs the installed runner (a container's runner comes with its image,
// so a deprecation there means pulling a newer image, not installing).
func Launches(pol rm.Policy) bool {
	return pol.RunnerDir == "" && !pol.RunnerInImage()
}

// Launches implements rm.RunnerInstalls (Launches).
func (Installs) Launches(pol rm.Policy) bool { return Launches(pol) }

// InstalledAt implements rm.RunnerInstalls: the modification time of the
// directory of the runner pol launches (its own, else the newest
// installed), which Promote sets when a runner on trial is proven.
func (i Installs) InstalledAt(pol rm.Policy) time.Time {
	dir := pol.RunnerDir
	if dir == "" {
		newest, err := Newest(i.DataDir)
		if err != nil {
			return time.Time{}
		}
		dir = newest
	}
	info, err := os.Stat(dir)
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// installLatest is the command that installs the newest release by hand.
const installLatest = "`runner-manager runner install --latest`"

// DeprecatedFix implements rm.RunnerInstalls: for a container policy, a
// newer image; for one with a runner directory, a newer runner there; for
// one that launches the installed runners, the automatic update's state
// (on, off, or its last failure) or installing one by hand.
func (i Installs) DeprecatedFix(pol rm.Policy) string {
	switch {
	case pol.RunnerInImage():
		return "give the policy a newer runner image (`runner-manager policy edit " + pol.Name + " --image …`); launches resume then"
	case pol.RunnerDir != "":
		return "update the runner in " + pol.RunnerDir + ", or install one with " + installLatest + " and point the policy at it; launches resume once the policy or its runner changes"
	}
	if b, ok := LastBad(i.DataDir); ok {
		return "the update to runner " + b.Version + " failed (" + b.Reason + "); it is tried again at " + b.RetryAt.Local().Format(time.TimeOnly) + " or when a newer release comes, or install one with " + installLatest
	}
	fix := "install a newer runner with " + installLatest + "; launches resume once it is installed"
	if !i.AutoUpdate {
		return "automatic runner updates are off ([runner] auto_update = false): " + fix
	}
	return "the daemon installs the newest release and proves it on the next attempt (none newer yet: it looks again every minute); or " + fix
}
