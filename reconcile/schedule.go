package reconcile

import (
	"errors"
	"fmt"
	"slices"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/status"
)

// schedule is the pass's last step: the next pass soon (ActiveRequeue)
// while anything is live, wanted or waiting to be concluded, rarely
// (IdleRequeue) otherwise, and never later than the earliest deadline the
// pass saw (a start timeout, the end of a job-word grace, a zombie grace,
// a scale-down delay, the launch budget's refill). While GitHub calls are
// held back (or failed in this pass) there is nothing to learn from GitHub
// before the driver's hold ends: the result names the deadline only (zero
// for none), and the driver wakes at whichever comes first.
func (p *pass) schedule(live, wanted int) Result {
	l := p.l
	res := Result{GitHubAnswered: p.ghOK}
	if p.isQuiet() {
		if !p.next.IsZero() {
			res.RequeueAfter = max(p.next.Sub(p.now), minRequeue)
		}
		return res
	}
	next := l.cfg.IdleRequeue
	// Warm spares alone keep a loop idle: their exits nudge it, and their
	// deadlines (listening, recycling) bound the wait (spares.go). Jobs
	// GitHub holds because the capacity told is taken keep it active: the
	// capacity is recomputed only by a pass, and when admission refused
	// the first job (memory held by other policies' runners) nothing of
	// this loop ends to nudge it; idle, it waited a minute for memory
	// that was free (bench, 100 policies: p99 63 s).
	l.mu.Lock()
	queued := l.demand.Queued
	l.mu.Unlock()
	active := live-p.liveSpares() > 0 || wanted > 0 || queued > 0
	for _, it := range p.items {
		if !it.concluded && !p.isSpare(it) {
			active = true
		}
	}
	if active {
		next = l.cfg.ActiveRequeue
	}
	if !p.next.IsZero() {
		if d := p.next.Sub(p.now); d < next {
			next = d
		}
	}
	res.RequeueAfter = max(next, minRequeue)
	return res
}

// err is the pass's error: the journal's make the driver back off the
// pass; GitHub's, classed as such, make it hold GitHub calls back.
func (p *pass) err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var gh error
	if len(p.ghErrs) > 0 {
		gh = &githubError{errors.Join(p.ghErrs...)}
	}
	if len(p.errs) > 0 {
		return errors.Join(append(slices.Clone(p.errs), gh)...)
	}
	return gh
}

// publish stores the loop's figures for Status.
func (p *pass) publish(live int) {
	l := p.l
	waits := p.waitStatus(live)
	l.mu.Lock()
	defer l.mu.Unlock()
	var passErr string
	if len(p.errs) > 0 {
		passErr = p.errs[0].Error()
	} else if len(p.ghErrs) > 0 {
		passErr = p.ghErrs[0].Error()
	}
	st := loopStatus{live: live, passErr: passErr, notes: map[rm.PolicyID]string{}}
	l.pruneStarts(p.now)
	for _, pol := range p.policies {
		ps := status.Policy{
			ID: pol.ID, Name: pol.Name, Target: pol.Target.String(), Mode: pol.Target.Mode().String(),
			Paused: pol.Paused, Monitor: pol.Monitor, MinIdle: pol.MinIdle, Max: pol.Max, Demand: l.demand.Wanted, Fleet: pol.Fleet,
			Admitted:          p.admitted[pol.ID],
			ExpectedPeakBytes: l.cfg.Admission.expectedPeak(l.cfg.Meters, pol),
			Wait:              waits,
			JobStart:          l.jobStartStatus(pol.ID),
		}
		if r, ok := l.refusals[pol.ID]; ok {
			ps.LastRefusal = r.String()
		}
		p.spareStatus(&ps)
		if n := p.notes[pol.ID]; n != "" {
			st.notes[pol.ID] = n
		}
		for _, it := range p.items {
			if it.pol.ID != pol.ID || !it.holdsSlot() {
				continue
			}
			ps.Live++
			switch it.a.State {
			case rm.StateIdle:
				ps.Idle++
			case rm.StateBusy:
				ps.Busy++
			}
		}
		st.policies = append(st.policies, ps)
	}
	for _, it := range p.items {
		if it.concluded {
			continue
		}
		as := status.Attempt{ID: it.a.ID, Policy: it.a.Policy, PolicyName: it.pol.Name, RunnerName: it.a.RunnerName, State: it.a.State,
			Job: status.KnownJob(it.a.Job), CreatedAt: it.a.CreatedAt, LastMessage: it.a.LastMessage}
		if l.cfg.Meters != nil && !it.exited {
			as.RSSBytes, _ = l.cfg.Meters.CurrentRSS(it.a.ID)
		}
		l.tab.update(it.a.ID, func(r *runtime) {
			r.peakRSS = max(r.peakRSS, as.RSSBytes)
			as.PeakRSSBytes = r.peakRSS
		})
		st.attempts = append(st.attempts, as)
	}
	st.jobs = p.jobsOf(servingPolicy(p.policies), waits.WaitReason)
	l.status = st
}

// snapshot returns the loop's figures as the last pass left them, with
// each policy's last error as of now: the pass's own (its notes, its
// errors) until the next pass, then the target's wait (credentials
// refused, GitHub unreachable), then the watch's failure, both read now,
// so that an error shows on every policy of the target the moment the
// watch meets it and goes the moment the watch recovers.
func (l *Loop) snapshot() loopStatus {
	waitErr, waitSince := l.cfg.Target.Demand.Waiting()
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.status
	st.policies = slices.Clone(st.policies)
	for i := range st.policies {
		ps := &st.policies[i]
		switch {
		case st.notes[ps.ID] != "":
			ps.LastError = st.notes[ps.ID]
		case st.passErr != "":
			ps.LastError = st.passErr
		case waitErr != nil:
			ps.LastError = fmt.Sprintf("waiting for GitHub since %s: %v", waitSince.Format(time.TimeOnly), waitErr)
		default:
			ps.LastError = l.watchErr
		}
	}
	if waitErr != nil {
		st.jobs = unavailable(st.jobs, waitErr, waitSince)
	}
	return st
}

// Status is the loop's part of a supervisor's Status: its policies and
// live attempts as the last pass saw them, with the host's memory as its
// admission last saw it.
func (l *Loop) Status() status.Status {
	snap := l.snapshot()
	return status.Status{At: l.cfg.Now(), Host: l.cfg.Host, Memory: l.cfg.Admission.Status(),
		Policies: snap.policies, Attempts: snap.attempts, Jobs: snap.jobs}
}
