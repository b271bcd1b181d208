package reconcile

import (
	"context"
	"errors"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// RunnerProcess is a runner process of this data directory found on the
// host: its environment names its attempt (RUNNER_MANAGER_ATTEMPT, set by
// the launcher) and its working directory is under <data>/attempts/.
type RunnerProcess struct {
	PID int
	// PGID is its process group: the listener the launcher started leads
	// its own, its job's processes share it.
	PGID    int
	Start   uint64
	Attempt rm.AttemptID
}

// sweep repairs, at start, what a crash can leave among processes: a
// runner whose attempt is not live in the journal is stopped (its group
// SIGTERM, then SIGKILL); a runner launched just before a crash, whose
// attempt is still registering with a registration but no pid, is written
// into its row (starting, pid, start stamp), so the pass adopts it instead
// of killing a runner that may hold a job. Runners of live attempts are left
// to their loop's first pass, which re-adopts them.
func (s *Supervisor) sweep(ctx context.Context) {
	procs, err := s.cfg.FindRunners(s.cfg.DataDir)
	if err != nil {
		s.log.Warn("cannot look for runner processes left behind", "err", err)
		return
	}
	byAttempt := make(map[rm.AttemptID][]RunnerProcess)
	for _, p := range procs {
		if p.PID == p.PGID { // group leaders only: job processes go with their group
			byAttempt[p.Attempt] = append(byAttempt[p.Attempt], p)
		}
	}
	grace := s.cfg.Loop.StopGrace
	if grace <= 0 {
		grace = DefaultStopGrace
	}
	for id, leaders := range byAttempt {
		a, err := s.cfg.Store.Attempt(ctx, id)
		switch {
		case errors.Is(err, store.ErrNotFound) || (err == nil && !a.Live()):
			for _, p := range leaders {
				s.log.Warn("stopping a runner process no live attempt owns", "attempt", id.String(), "pid", p.PID)
				if err := stopGroupAfter(p.PGID, grace); err != nil {
					s.log.Warn("could not stop the runner process", "pid", p.PID, "err", err)
				}
			}
		case err != nil:
			s.log.Warn("cannot read the attempt of a runner process", "attempt", id.String(), "err", err)
		case a.PID == 0 && a.State == rm.StateRegistering && a.GitHubRunnerID != 0 && len(leaders) == 1:
			b, err := a.MoveTo(rm.StateStarting, s.cfg.Now())
			if err != nil {
				continue
			}
			b.PID, b.ProcessStart = leaders[0].PID, leaders[0].Start
			if err := s.cfg.Store.RecordAttempt(ctx, b); err != nil {
				s.log.Warn("cannot record a runner launched before a crash", "attempt", id.String(), "err", err)
				continue
			}
			s.log.Info("found a runner launched before a crash; adopting it", "attempt", id.String(), "pid", b.PID)
		}
	}
}
