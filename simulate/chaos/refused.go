package chaos

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// The release the fake publishes when it refuses the installed runner.
const (
	refusedRelease = "2.331.0"
	goodRelease    = "2.331.1"
)

// manageRunner installs the fake runner as the data directory's runner
// (<data>/runners/<RunnerVersion>, as `runner install` leaves it) and
// points the policy at it (no runner directory): the runner the daemon's
// automatic update replaces. The fake's new releases carry the same
// program, reporting their own version.
func (w *World) manageRunner(ctx context.Context) error {
	listener := filepath.Join(w.env.RunnerDir, "bin", fakegithub.ListenerName())
	if err := fakegithub.LayoutRunnerDir(datadir.New(w.DataDir).Runner(fakegithub.RunnerVersion), listener); err != nil {
		return fmt.Errorf("install the runner in the data directory: %w", err)
	}
	if _, err := w.CLI(ctx, "policy", "edit", "chaos", "--runner-dir", ""); err != nil {
		return err
	}
	w.Fake.SetRunnerReleaseProgram(listener)
	return nil
}

// refusedDrive: jobs run on the installed runner; then GitHub refuses its
// version (exit code 7 from its runners) as a newer release comes out, and
// more jobs queue. The daemon must install the release, prove it on one
// attempt and serve on; the fault's end is the refusal, so the recovery
// figure is the time from it to the next job started. With bad, the
// release's checksum is wrong: nothing can serve until a good release
// comes (the fault's end), which must then be installed and serve.
func refusedDrive(jobs int, bad bool) func(context.Context, *World, *Result) error {
	return func(ctx context.Context, w *World, r *Result) error {
		if err := w.manageRunner(ctx); err != nil {
			return err
		}
		w.Enqueue(jobs/2, 2*time.Second)
		if err := w.waitCompleted(ctx, jobs/4, true); err != nil {
			return err
		}
		w.Fake.SetLatestRunnerRelease(refusedRelease)
		if bad {
			w.Fake.BreakRunnerRelease(refusedRelease)
		}
		w.logf("refused: GitHub refuses runner %s; release %s is out (bad checksum: %v)", fakegithub.RunnerVersion, refusedRelease, bad)
		w.Fake.MarkRunnerVersionDeprecated()
		w.Enqueue(jobs-jobs/2, 2*time.Second)
		if !bad {
			w.markFaultEnd()
			return nil
		}
		// Nothing can serve: status must say why, the jobs wait.
		said, out := false, ""
		for deadline := time.Now().Add(2 * time.Minute); !said && time.Now().Before(deadline); {
			if err := sleep(ctx, time.Second); err != nil {
				return err
			}
			s, err := w.CLI(ctx, "status")
			out, said = s, err == nil && strings.Contains(s, "update to "+refusedRelease+" failed")
		}
		if !said {
			r.note("status never said the update failed:\n%s", out)
		}
		if c := countJobs(w.Fake.Jobs()); c.served > jobs/2 {
			r.note("%d jobs served while no runner could serve (at most %d before the refusal)", c.served, jobs/2)
		}
		if err := sleep(ctx, 5*time.Second); err != nil {
			return err
		}
		w.logf("refused: release %s is out, good", goodRelease)
		w.Fake.SetLatestRunnerRelease(goodRelease)
		w.markFaultEnd()
		return nil
	}
}
