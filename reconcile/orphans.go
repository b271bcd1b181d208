package reconcile

import (
	"context"
	"errors"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// findRunnerProcesses lists the runner processes of the data directory:
// those whose environment names an attempt and whose working directory is
// under AttemptsDir, in one look at the process table. Where the
// machine cannot tell (only Linux shows other processes' environments) it
// finds none: a runner orphaned by a crash between its launch and the
// journal write of its pid stops by itself once the next pass removes its
// registration.
func (s *Supervisor) findRunnerProcesses() ([]rm.RunnerProcess, error) {
	if s.cfg.AttemptsDir == "" {
		return nil, nil
	}
	procs, err := s.cfg.Machine.RunnerProcesses(s.cfg.AttemptsDir)
	if errors.Is(err, errors.ErrUnsupported) {
		return nil, nil
	}
	return procs, err
}

// sweep repairs, at start, what a crash can leave among processes: a
// runner whose attempt is not live in the journal is stopped (its group
// SIGTERM, then SIGKILL); a runner launched just before a crash, whose
// attempt is still registering with a registration but no pid, is written
// into its row (starting, pid, start stamp), so the pass adopts it instead
// of killing a runner that may hold a job. Runners of live attempts are left
// to their loop's first pass, which re-adopts them.
func (s *Supervisor) sweep(ctx context.Context) {
	procs, err := s.findRunnerProcesses()
	if err != nil {
		s.log.Warn("cannot look for runner processes left behind", "err", err)
		return
	}
	byAttempt := make(map[rm.AttemptID][]rm.RunnerProcess)
	for _, p := range procs {
		if p.Leader() { // job processes go with their group
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
				if err := s.cfg.Machine.StopRunnerProcess(p, grace); err != nil {
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
