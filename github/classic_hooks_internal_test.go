package github

import (
	"log/slog"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	rm "github.com/runner-manager/runner-manager"
)

// TestWebhooksReliedOn: a repository watcher relies on its webhooks (the
// backstop poll, queued-only polls) once one came, while they keep coming,
// and stops for an hour when a queued job older than a delivery takes is
// found unannounced; a fresh one, or one announced, is no miss.
func TestWebhooksReliedOn(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	scope, err := rm.Repository("octo/repo")
	assert.NoError(t, err)
	w := &scopeWatcher{c: &Client{cfg: Config{Now: clock}, limiter: &limiter{}}, scope: scope, log: slog.New(slog.DiscardHandler),
		nudge: make(chan struct{}, 1), subs: map[*demandSub]struct{}{{idle: 2 * time.Second, busy: 2 * time.Second}: {}},
		polled: true}
	assert.False(t, w.relaxed(now), "no webhook yet")
	assert.Equal(t, 2*time.Second, w.interval())

	w.hookSeen(WorkflowJobEvent{Action: "queued", JobID: 1, RunID: 11})
	assert.True(t, w.relaxed(now))
	assert.Equal(t, WebhookBackstopPoll, w.interval(), "the backstop poll")
	w.NudgeQueued()
	assert.True(t, w.takeNudges(false), "a queued webhook's nudge reads the run it named alone")
	assert.False(t, w.takeNudges(false), "nothing announced since")
	w.c.limiter.core = rm.Budget{Limit: 5000, Remaining: 2000, Reset: now.Add(time.Hour), SeenAt: now}
	w.hookSeen(WorkflowJobEvent{Action: "queued", JobID: 3, RunID: 13})
	w.NudgeQueued()
	assert.False(t, w.takeNudges(false), "below half the budget: a full poll (free while unchanged), not a charged read")
	w.c.limiter.core = rm.Budget{}
	w.hookSeen(WorkflowJobEvent{Action: "queued", JobID: 2, RunID: 12})
	w.NudgeQueued()
	w.Nudge()
	assert.False(t, w.takeNudges(false), "any other nudge: a full poll")
	assert.False(t, w.takeNudges(true), "the interval ran out: a full poll")

	queued := func(id int64, age time.Duration) *jobState {
		return &jobState{id: id, status: "queued", queuedAt: now.Add(-age)}
	}
	w.checkAnnounced([]*jobState{queued(1, time.Minute), queued(2, time.Second)}, now)
	assert.True(t, w.relaxed(now), "announced, or too fresh for its webhook to have come")
	w.checkAnnounced([]*jobState{{id: 3, status: "in_progress", queuedAt: now.Add(-time.Minute)}}, now)
	assert.True(t, w.relaxed(now), "only queued jobs are looked at")
	w.checkAnnounced([]*jobState{queued(4, time.Minute)}, now)
	assert.False(t, w.relaxed(now), "a queued job a minute old without its webhook")
	assert.Equal(t, 2*time.Second, w.interval())
	w.hookSeen(WorkflowJobEvent{Action: "queued", JobID: 5, RunID: 15})
	w.NudgeQueued()
	assert.False(t, w.takeNudges(false), "full polls while not relied on")

	now = now.Add(missQuiet)
	w.hookSeen(WorkflowJobEvent{Action: "in_progress", JobID: 1})
	assert.True(t, w.relaxed(now), "relied on again an hour later")
	now = now.Add(hookFresh)
	assert.False(t, w.relaxed(now), "no webhook for ten minutes")

	org, err := rm.Organization("octo")
	assert.NoError(t, err)
	w.scope = org
	w.hookSeen(WorkflowJobEvent{Action: "queued", JobID: 9})
	assert.False(t, w.relaxed(now), "an organization's watcher re-reads the jobs webhooks name")
}
