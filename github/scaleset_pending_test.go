package github_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
)

// lastListed is the last figure that carried the pending list.
func (l *demandLog) lastListed() (rm.Demand, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := len(l.d) - 1; i >= 0; i-- {
		if l.d[i].PendingListed {
			return l.d[i], true
		}
	}
	return rm.Demand{}, false
}

// TestScaleSetListsPendingJobs: the jobs GitHub offers or assigns and no
// runner started are listed by name, for both ways GitHub hands out jobs:
// offered (JobAvailable, then acquired, then assigned within capacity) and
// assigned directly, as reported of github.com, where jobs beyond
// capacity are in the statistics only. The list never holds more than the
// statistics count.
func TestScaleSetListsPendingJobs(t *testing.T) {
	for _, tc := range []struct {
		name   string
		direct bool
		// named: jobs listed while one is assigned and two wait beyond
		// capacity; assigned of them.
		named, assigned int
	}{
		{"offered", false, 3, 1},
		{"direct", true, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var opts []fakegithub.Option
			if tc.direct {
				opts = append(opts, fakegithub.WithDirectAssignment())
			}
			env := newFakeEnv(t, "PAT", opts...)
			st := newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{})
			for i := range 3 {
				env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{setName}, Name: []string{"build", "test", "lint"}[i]})
			}
			log, _ := watch(t, st, fixed(1))
			require.Eventually(t, func() bool {
				d, ok := log.lastListed()
				n := 0
				for _, j := range d.Pending {
					if j.Assigned {
						n++
					}
				}
				return ok && len(d.Pending) == tc.named && n == tc.assigned && d.Wanted == 1 && d.Queued == 2
			}, 10*time.Second, 10*time.Millisecond)
			d, _ := log.lastListed()
			for _, j := range d.Pending {
				assert.NotEmpty(t, j.ID)
				assert.Equal(t, fakeRepo, j.Repository)
				assert.Contains(t, []string{"build", "test", "lint"}, j.Name)
				assert.Equal(t, []string{setName}, j.Labels)
				assert.False(t, j.QueuedAt.IsZero())
			}
			for i := 1; i < len(d.Pending); i++ {
				assert.False(t, d.Pending[i].QueuedAt.Before(d.Pending[i-1].QueuedAt), "oldest first")
			}
		})
	}
}

// TestClassicListsPendingJobs: a classic target lists the queued jobs it
// owns by name; a queued job for a self-hosted runner that no target
// matches is listed as unmatched with every target's figure; a job for
// GitHub's own runners is not.
func TestClassicListsPendingJobs(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	gpu := newClassic(t, env, labelTarget(t, repoScope(t), "", "gpu"), github.ClassicOptions{PollInterval: time.Hour})
	for range 2 {
		env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "gpu"}, Name: "train"})
	}
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"self-hosted", "arm64"}, Name: "arm"})
	env.fake.EnqueueJob(fakegithub.JobSpec{Repo: fakeRepo, Labels: []string{"ubuntu-latest"}, Name: "hosted"})
	log, _ := watch(t, gpu, fixed(10))
	require.Eventually(t, log.wanted(2), 5*time.Second, 10*time.Millisecond)
	d, ok := log.lastListed()
	require.True(t, ok)
	require.Len(t, d.Pending, 2)
	for _, j := range d.Pending {
		assert.Equal(t, "train", j.Name)
		assert.Equal(t, fakeRepo, j.Repository)
		assert.NotZero(t, j.Number)
		assert.False(t, j.Assigned)
	}
	require.Len(t, d.Unmatched, 1)
	assert.Equal(t, "arm", d.Unmatched[0].Name)
	assert.Equal(t, []string{"self-hosted", "arm64"}, d.Unmatched[0].Labels)
}

// TestDeleteScaleSet: a scale set is deleted by id; one already gone is
// not an error (nothing is left to delete).
func TestDeleteScaleSet(t *testing.T) {
	env := newFakeEnv(t, "PAT")
	newScaleSet(t, env, scaleSetTarget(t, repoScope(t), "", setName), github.ScaleSetOptions{}) // creates it
	rec, ok := env.scaleSet(setName)
	require.True(t, ok)
	require.NoError(t, env.client.DeleteScaleSet(t.Context(), repoScope(t), rec.ID))
	_, ok = env.scaleSet(setName)
	assert.False(t, ok, "deleted at GitHub")
	assert.NoError(t, env.client.DeleteScaleSet(t.Context(), repoScope(t), rec.ID), "already gone")
}
