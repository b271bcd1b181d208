package reconcile

import "time"

// listBound is how old a runner list may be for the reasons a pass needs
// one: the list handed to the pass was sent at or after it. Every reason
// keeps the guarantee the pass had when each loop listed for itself:
//
//   - the first pass: a list sent at most ActiveRequeue ago. The loop has
//     done nothing yet that a list must show; the pass observes its
//     journal's runners by it and reaps registrations no live attempt owns,
//     and a registration a list shows is a leftover or another live
//     attempt's, however old the list (liveElsewhere, and a concluded
//     attempt is judged only by a list sent after its end).
//   - a runner found gone after a restart (needTrace): a list sent at or
//     after its exit was seen, as concludeExited waits for.
//   - a scale-down: at most ActiveRequeue old, the age below which a pass
//     scaled down on the list it had.
//   - the refresh while runners are live, and OrphanListEvery: at most half
//     the interval old, so the loop's list is at most 1.5 times the interval
//     old, and one request serves every loop of the scope due within half
//     an interval.
//   - the loop fell idle: a list sent after the last pass that concluded
//     an attempt (its EndedAt), which shows whatever the runners concluded
//     until then left, and which reapRegistrations acts on (it judges an
//     ended attempt's registration only by a list sent after the end).
//     Such a list, when it is the only reason, waits until half an
//     interval after that conclusion (listRunners): another loop's list
//     may answer it by then, or the loop be live again.
//
// The list is always newer than the one the loop holds.
func (p *pass) listBound(first, needTrace, scaleDown, refresh, idle, orphan bool, traceAfter time.Time) time.Time {
	l := p.l
	var bound time.Time
	later := func(t time.Time) {
		if t.After(bound) {
			bound = t
		}
	}
	if first || scaleDown {
		later(p.now.Add(-l.cfg.ActiveRequeue))
	}
	if needTrace {
		later(traceAfter)
	}
	if refresh {
		later(p.now.Add(-l.cfg.RunnerListEvery / 2))
	}
	if orphan {
		later(p.now.Add(-l.cfg.OrphanListEvery / 2))
	}
	if idle {
		later(l.lastEnd)
	}
	if l.listed {
		later(l.listAt.Add(time.Nanosecond))
	}
	return bound
}
