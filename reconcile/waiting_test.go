package reconcile_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// TestStatusSaysWhyItWaits: a demand watch that recovers by itself (a
// scale set whose credentials were revoked) says why it is not serving,
// and the policy's status shows it the moment the watch meets it and
// until it serves again, with no pass in between (an idle loop passes
// rarely: the error showed late, and stayed ~30 s after recovery).
func TestStatusSaysWhyItWaits(t *testing.T) {
	e := newEnv(t, nil, nil)
	e.pass()
	require.Len(t, e.loop.Status().Policies, 1)
	assert.Empty(t, e.loop.Status().Policies[0].LastError)

	e.target.mu.Lock()
	e.target.waitErr = errors.New("GitHub refused the credentials")
	e.target.waitSince = e.clock.Now()
	e.target.mu.Unlock()
	e.clock.Advance(time.Second)
	got := e.loop.Status().Policies[0].LastError
	assert.Contains(t, got, "waiting for GitHub since")
	assert.Contains(t, got, "GitHub refused the credentials")

	e.target.mu.Lock()
	e.target.waitErr = nil
	e.target.mu.Unlock()
	assert.Empty(t, e.loop.Status().Policies[0].LastError, "cleared the moment the watch serves")
	e.pass()
	assert.Empty(t, e.loop.Status().Policies[0].LastError)
}

// TestQueuedJobsKeepTheLoopActive: jobs GitHub holds beyond the capacity
// told (none assigned, none live here) keep the loop passing at the active
// pace, so a capacity admission refused is told again as soon as memory
// frees; with nothing queued the loop idles.
func TestQueuedJobsKeepTheLoopActive(t *testing.T) {
	e := newEnv(t, storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 2).Spare(0).Active(), nil)
	e.loop.ReportDemand(rm.Demand{Queued: 3, At: e.clock.Now()})
	res := e.pass()
	assert.LessOrEqual(t, res.RequeueAfter, reconcile.DefaultActiveRequeue, "jobs wait at GitHub")
	e.loop.ReportDemand(rm.Demand{At: e.clock.Now()})
	res = e.pass()
	assert.Greater(t, res.RequeueAfter, reconcile.DefaultActiveRequeue, "nothing waits: idle")
}
