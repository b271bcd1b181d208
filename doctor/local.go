package doctor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/store"
)

// dataDir checks the data directory's existence and mode (0700: runner
// logs hold job output); with Fix it tightens the mode. It reports whether
// the other checks can go on.
func (r *run) dataDir() bool {
	dir := r.DataDir
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		r.add(fail("data-dir", "data directory "+dir, "it does not exist: run `runner-manager init`"))
		return false
	case err != nil:
		r.add(fail("data-dir", "data directory "+dir, err.Error()))
		return false
	case !fi.IsDir():
		r.add(fail("data-dir", "data directory "+dir, "it is a file, not a directory: give a directory with --data-dir"))
		return false
	case fi.Mode().Perm()&0o077 == 0:
		r.add(ok("data-dir", "data directory "+dir))
	case !r.Fix:
		r.add(warn("data-dir", fmt.Sprintf("data directory %s is mode %04o", dir, fi.Mode().Perm()),
			fmt.Sprintf("others may read runner logs: chmod 700 %s (or doctor --fix)", dir)))
	default:
		if err := os.Chmod(dir, 0o700); err != nil {
			r.add(fail("data-dir", "data directory mode", err.Error()))
		} else {
			r.add(ok("data-dir", fmt.Sprintf("data directory %s: mode %04o tightened to 0700", dir, fi.Mode().Perm())))
		}
	}
	return true
}

// disk checks the data directory's free space against the floor.
func (r *run) disk() Check {
	free, err := platform.DiskFree(r.DataDir)
	floor := bytesize.Format(r.DiskFloor)
	switch {
	case err != nil:
		return warn("disk", "free disk", err.Error())
	case free < r.DiskFloor:
		return fail("disk", fmt.Sprintf("free disk: %s, below the floor of %s", bytesize.Format(free), floor),
			"no runner starts until there is more: free space, or lower [admission] disk_floor")
	}
	return ok("disk", fmt.Sprintf("free disk: %s (floor %s)", bytesize.Format(free), floor))
}

// memory checks the host's memory against the reserve.
func (r *run) memory() Check {
	total, _, err := platform.HostMemory()
	reserve := bytesize.Format(r.MemoryReserve)
	switch {
	case err != nil:
		return warn("memory", "host memory", err.Error())
	case total <= r.MemoryReserve:
		return fail("memory", fmt.Sprintf("memory: %s, not more than the reserve of %s", bytesize.Format(total), reserve),
			"no runner can be admitted: lower [admission] memory_reserve")
	}
	return ok("memory", fmt.Sprintf("memory: %s, of which %s reserved", bytesize.Format(total), reserve))
}

// runners checks the policies' runner directories and the installed
// runner, and looks for runners that exited 7 (version deprecated) this
// week. It returns the newest installed runner's directory.
func (r *run) runners(ctx context.Context, st store.Store, mine []rm.Policy) (string, error) {
	installed, installErr := runnerpkg.Newest(r.DataDir)
	needsInstalled := false
	for _, p := range mine {
		if p.RunnerInImage() {
			continue // its runner is its image's
		}
		if p.RunnerDir == "" {
			needsInstalled = true
		} else if _, err := os.Stat(runnerpkg.ListenerPath(p.RunnerDir)); err != nil {
			r.add(fail("runner-dir", fmt.Sprintf("policy %s: runner dir %s", p.Name, p.RunnerDir),
				"it holds no runner: policy edit "+p.Name+" --runner-dir DIR, or runner install"))
		}
	}
	switch {
	case installErr != nil && needsInstalled:
		r.add(fail("runner", "installed runner", installErr.Error()))
	case installErr == nil:
		r.add(ok("runner", "installed runner "+filepath.Base(installed)))
	}
	failed, err := st.Attempts(ctx, store.AttemptFilter{Since: time.Now().Add(-7 * 24 * time.Hour), States: []rm.AttemptState{rm.StateFailed}, Limit: 200})
	if err == nil {
		for _, at := range failed {
			if at.ExitCode != nil && *at.ExitCode == 7 {
				r.add(fail("runner-version", "runner version", "a runner exited 7 (version deprecated) on "+at.EndedAt.Local().Format(time.DateTime)+": run `runner-manager runner install`"))
				break
			}
		}
	}
	return installed, installErr
}
