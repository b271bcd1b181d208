package github

import (
	"testing"
	"time"

	"github.com/actions/scaleset"
	"github.com/stretchr/testify/assert"
)

func TestPendingBook(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	base := func(id string, n int) scaleset.JobMessageBase {
		return scaleset.JobMessageBase{JobID: id, OwnerName: "acme", RepositoryName: "app", JobDisplayName: "job " + id,
			QueueTime: t0.Add(time.Duration(n) * time.Second)}
	}
	avail := func(id string, n int) *scaleset.JobAvailable {
		return &scaleset.JobAvailable{JobMessageBase: base(id, n)}
	}
	assigned := func(id string, n int) *scaleset.JobAssigned {
		return &scaleset.JobAssigned{JobMessageBase: base(id, n)}
	}
	stats := func(avail, acquired, assigned, running int) *scaleset.RunnerScaleSetStatistic {
		return &scaleset.RunnerScaleSetStatistic{TotalAvailableJobs: avail, TotalAcquiredJobs: acquired, TotalAssignedJobs: assigned, TotalRunningJobs: running}
	}
	type step struct {
		msg  *scaleset.RunnerScaleSetMessage
		st   *scaleset.RunnerScaleSetStatistic
		want []string // ids, oldest first; "*" marks assigned
	}
	for _, tc := range []struct {
		name  string
		steps []step
	}{
		{"offered then assigned", []step{
			{&scaleset.RunnerScaleSetMessage{JobAvailableMessages: []*scaleset.JobAvailable{avail("a", 1), avail("b", 2)}}, stats(2, 0, 0, 0), []string{"a", "b"}},
			{&scaleset.RunnerScaleSetMessage{JobAssignedMessages: []*scaleset.JobAssigned{assigned("a", 1)}}, stats(0, 1, 1, 0), []string{"a*", "b"}},
		}},
		{"started and completed go", []step{
			{&scaleset.RunnerScaleSetMessage{JobAssignedMessages: []*scaleset.JobAssigned{assigned("a", 1), assigned("b", 2), assigned("c", 3)}}, stats(0, 0, 3, 0), []string{"a*", "b*", "c*"}},
			{&scaleset.RunnerScaleSetMessage{JobStartedMessages: []*scaleset.JobStarted{{JobMessageBase: base("a", 1)}},
				JobCompletedMessages: []*scaleset.JobCompleted{{JobMessageBase: base("c", 3)}}}, stats(0, 0, 2, 1), []string{"b*"}},
		}},
		{"missed start: the statistics drop the oldest", []step{
			{&scaleset.RunnerScaleSetMessage{JobAssignedMessages: []*scaleset.JobAssigned{assigned("a", 1), assigned("b", 2)}}, stats(0, 0, 2, 0), []string{"a*", "b*"}},
			{&scaleset.RunnerScaleSetMessage{}, stats(0, 0, 2, 1), []string{"b*"}},
		}},
		{"no statistics: nothing pruned", []step{
			{&scaleset.RunnerScaleSetMessage{JobAvailableMessages: []*scaleset.JobAvailable{avail("a", 1)}}, nil, []string{"a"}},
		}},
		{"runnerRequestId names a job without jobId", []step{
			{&scaleset.RunnerScaleSetMessage{JobAssignedMessages: []*scaleset.JobAssigned{{JobMessageBase: scaleset.JobMessageBase{RunnerRequestID: 42}}}}, stats(0, 0, 1, 0), []string{"42*"}},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b pendingBook
			for i, s := range tc.steps {
				var got []string
				for _, j := range b.apply(s.msg, s.st, t0) {
					id := j.ID
					if j.Assigned {
						id += "*"
					}
					got = append(got, id)
					if j.ID == "a" {
						assert.Equal(t, "acme/app", j.Repository)
					}
				}
				assert.Equal(t, s.want, got, "step %d", i)
			}
		})
	}
	var b pendingBook
	var many []*scaleset.JobAvailable
	for i := range maxPending + 10 {
		many = append(many, avail(time.Duration(i).String(), i))
	}
	assert.Len(t, b.apply(&scaleset.RunnerScaleSetMessage{JobAvailableMessages: many}, nil, t0), maxPending, "bounded")
}
