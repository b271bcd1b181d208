package storetest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/store"
)

// Run is the conformance suite of store.Store: every implementation passes
// it. open returns a new, empty store for one subtest and arranges for it
// to be closed when the subtest ends. Subtests run in parallel.
func Run(t *testing.T, open func(t *testing.T) store.Store) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s store.Store)
	}{
		{"Hosts", testHosts},
		{"HostNotFound", testHostNotFound},
		{"HostWithoutID", testHostWithoutID},
		{"PolicyRoundTrip", testPolicyRoundTrip},
		{"PolicyByName", testPolicyByName},
		{"PolicyNotFound", testPolicyNotFound},
		{"PolicyInvalid", testPolicyInvalid},
		{"PolicyConflicts", testPolicyConflicts},
		{"PolicyUpdate", testPolicyUpdate},
		{"Policies", testPolicies},
		{"PolicyDelete", testPolicyDelete},
		{"PolicyDeleteLive", testPolicyDeleteLive},
		{"MovePolicy", testMovePolicy},
		{"MovePolicyNotFound", testMovePolicyNotFound},
		{"PolicyPurge", testPolicyPurge},
		{"PolicyTargetTaken", testPolicyTargetTaken},
		{"ApplyPolicies", testApplyPolicies},
		{"ApplyPoliciesAllOrNothing", testApplyPoliciesAllOrNothing},
		{"AttemptRoundTrip", testAttemptRoundTrip},
		{"AttemptAnyStateOnInsert", testAttemptAnyStateOnInsert},
		{"AttemptInvalid", testAttemptInvalid},
		{"AttemptUnknownPolicy", testAttemptUnknownPolicy},
		{"AttemptNotFound", testAttemptNotFound},
		{"AttemptLifecycle", testAttemptLifecycle},
		{"AttemptIllegalTransition", testAttemptIllegalTransition},
		{"AttemptKeepsCreatedAt", testAttemptKeepsCreatedAt},
		{"ActiveAttempts", testActiveAttempts},
		{"LiveAttempts", testLiveAttempts},
		{"AttemptsFilter", testAttemptsFilter},
		{"ForceAttempt", testForceAttempt},
		{"Canceled", testCanceled},
		{"Concurrent", testConcurrent},
		{"Sessions", testSessions},
		{"SessionInvalid", testSessionInvalid},
		{"ScaleSets", testScaleSets},
		{"JobTimes", testJobTimes},
		{"SpareAuto", testSpareAuto},
		{"FleetPolicy", testFleetPolicy},
		{"HostLease", testHostLease},
		{"HostLeaseInvalid", testHostLeaseInvalid},
		{"HostLeaseRace", testHostLeaseRace},
		{"IntegrityCheck", testIntegrityCheck},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			tt.fn(t, open(t))
		})
	}
}

// normTime puts a time in UTC without a monotonic reading, so a value
// read back compares equal to what was written.
func normTime(t time.Time) time.Time { return t.UTC().Round(0) }

func normAttempt(a rm.Attempt) rm.Attempt {
	for _, p := range []*time.Time{&a.CreatedAt, &a.RegisterAt, &a.StartedAt, &a.IdleAt, &a.BusyAt, &a.EndedAt, &a.UpdatedAt} {
		*p = normTime(*p)
	}
	return a
}

func normPolicy(p rm.Policy) rm.Policy {
	p.CreatedAt, p.UpdatedAt = normTime(p.CreatedAt), normTime(p.UpdatedAt)
	return p
}

func normHost(h rm.Host) rm.Host {
	h.SeenAt = normTime(h.SeenAt)
	return h
}

func ids(as []rm.Attempt) []rm.AttemptID {
	var out []rm.AttemptID
	for _, a := range as {
		out = append(out, a.ID)
	}
	return out
}

// mustPolicy inserts a new valid policy and returns it.
func mustPolicy(t *testing.T, s store.Store, b *PolicyBuilder) rm.Policy {
	t.Helper()
	p := b.Build()
	require.NoError(t, s.InsertPolicy(t.Context(), p))
	return p
}

func mustRecord(t *testing.T, s store.Store, as ...rm.Attempt) {
	t.Helper()
	for _, a := range as {
		require.NoError(t, s.RecordAttempt(t.Context(), a))
	}
}

func testHosts(t *testing.T, s store.Store) {
	ctx := t.Context()
	b := NewHost().Name("b-host").Memory(1<<63 + 7) // the top bit must survive
	a := NewHost().Name("a-host").OS("darwin", "arm64")
	hb, ha := b.Build(), a.Build()
	require.NoError(t, s.PutHost(ctx, hb))
	require.NoError(t, s.PutHost(ctx, ha))

	got, err := s.Host(ctx, hb.ID)
	require.NoError(t, err)
	assert.Equal(t, normHost(hb), normHost(got))

	hs, err := s.Hosts(ctx)
	require.NoError(t, err)
	require.Len(t, hs, 2)
	assert.Equal(t, []string{"a-host", "b-host"}, []string{hs[0].Name, hs[1].Name}, "hosts are listed by name")

	// Put replaces.
	hb.Name, hb.CPUs, hb.SeenAt = "c-host", 64, time.Time{}
	require.NoError(t, s.PutHost(ctx, hb))
	got, err = s.Host(ctx, hb.ID)
	require.NoError(t, err)
	assert.Equal(t, normHost(hb), normHost(got))
	hs, err = s.Hosts(ctx)
	require.NoError(t, err)
	assert.Len(t, hs, 2)
}

func testHostNotFound(t *testing.T, s store.Store) {
	_, err := s.Host(t.Context(), rm.NewHostID())
	require.ErrorIs(t, err, store.ErrNotFound)
	hs, err := s.Hosts(t.Context())
	require.NoError(t, err)
	assert.Empty(t, hs)
}

func testHostWithoutID(t *testing.T, s store.Store) {
	err := s.PutHost(t.Context(), NewHost().ID(rm.HostID{}).Build())
	require.ErrorIs(t, err, rm.ErrInvalid)
}

func testPolicyRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	h := NewHost().Build()
	require.NoError(t, s.PutHost(ctx, h))
	tests := map[string]rm.Policy{
		"ScaleSet": NewPolicy().Repository("acme/repo").Host(h.ID).Autoscale("home", 2).Active().Build(),
		"Labels": NewPolicy().Org("acme").Group("builders").Labels("linux", "gpu", "x64").
			Max(5).MinIdle(2).Spare(3).MemoryEstimate(1<<63 + 1).RunnerDir("/opt/runner").Paused().Monitor().Build(),
		"Enterprise":     NewPolicy().Enterprise("big-co").Autoscale("ent", 1).Backend("").Build(),
		"MemoryLimit":    NewPolicy().Repository("acme/limited").Host(h.ID).Autoscale("lim", 2).MemoryLimit(3 << 30).Build(),
		"LimitFromPeaks": NewPolicy().Repository("acme/peaks").Host(h.ID).Autoscale("pk", 2).MemoryLimit(rm.MemoryLimitFromPeaks).Build(),
		"Container": NewPolicy().Repository("acme/boxed").Host(h.ID).Autoscale("box", 4).MemoryLimit(2 << 30).
			Container(rm.ContainerSettings{Image: "ghcr.io/actions/actions-runner:latest", CPUs: 1.5, Network: "bridge",
				Env: []string{"HTTP_PROXY", "CI_*"}, Volumes: []string{"/var/cache/go:/cache:ro", "npm:/npm"}}).Build(),
		"ContainerImageOnly": NewPolicy().Repository("acme/boxed2").Host(h.ID).Autoscale("box2", 1).
			Container(rm.ContainerSettings{Image: "localhost/runner:test"}).Build(),
		"VM": NewPolicy().Repository("acme/vm").Host(h.ID).Autoscale("vm", 2).MemoryLimit(1 << 30).
			VM(rm.VMSettings{Image: "/var/lib/runner-manager/images/debian"}).Build(),
		"VMForward": NewPolicy().Repository("acme/vmfwd").Host(h.ID).Autoscale("vmfwd", 1).
			VM(rm.VMSettings{Image: "/images/runner", Forward: []string{"127.0.0.1:8080", "cache.lan:443"}}).Build(),
	}
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.InsertPolicy(ctx, p))
			got, err := s.Policy(ctx, p.ID)
			require.NoError(t, err)
			assert.Equal(t, normPolicy(p), normPolicy(got))
			assert.Equal(t, p.Target.Key(), got.Target.Key())
		})
	}
}

func testPolicyByName(t *testing.T, s store.Store) {
	p := mustPolicy(t, s, NewPolicy().Name("home-builds"))
	got, err := s.PolicyByName(t.Context(), "home-builds")
	require.NoError(t, err)
	assert.Equal(t, p.ID, got.ID)
	_, err = s.PolicyByName(t.Context(), "other")
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testPolicyNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := NewPolicy().Build()
	_, err := s.Policy(ctx, p.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	require.ErrorIs(t, s.UpdatePolicy(ctx, p), store.ErrNotFound)
	require.ErrorIs(t, s.DeletePolicy(ctx, p.ID), store.ErrNotFound)
	ps, err := s.Policies(ctx)
	require.NoError(t, err)
	assert.Empty(t, ps, "a refused update must not insert")
}

func testPolicyInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	tests := map[string]rm.Policy{
		"Name":         NewPolicy().Name("no spaces").Build(),
		"Host":         NewPolicy().Host(rm.HostID{}).Build(),
		"Repository":   NewPolicy().Repository("not-a-repo").Build(),
		"Both":         NewPolicy().Autoscale("home", 1).Labels("linux").Build(),
		"Label":        NewPolicy().Labels("has space").Build(),
		"MaxBelowIdle": NewPolicy().Max(1).MinIdle(2).Build(),
		"MaxZero":      NewPolicy().Max(0).Build(),
	}
	// A backend's settings are its own to check (rm.BackendKind), where
	// policies are made (rm.Policy.ValidateWith): a store holds every
	// policy to the rules all of them share (rm.Policy.Validate).
	for name, p := range tests {
		t.Run(name, func(t *testing.T) {
			err := s.InsertPolicy(ctx, p)
			require.ErrorIs(t, err, rm.ErrInvalid)
			_, err = s.Policy(ctx, p.ID)
			require.ErrorIs(t, err, store.ErrNotFound, "an invalid policy must not be written")
		})
	}
	// An update is validated too.
	p := mustPolicy(t, s, NewPolicy())
	p.Max = 0
	require.ErrorIs(t, s.UpdatePolicy(ctx, p), rm.ErrInvalid)
	got, err := s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, 1, got.Max)
}

func testPolicyConflicts(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy().Name("home"))

	sameID := NewPolicy().ID(p.ID).Name("other").Build()
	require.ErrorIs(t, s.InsertPolicy(ctx, sameID), store.ErrConflict)

	sameName := NewPolicy().Name("home").Build()
	err := s.InsertPolicy(ctx, sameName)
	require.ErrorIs(t, err, store.ErrConflict)
	assert.Contains(t, err.Error(), `"home"`, "the error names the taken name")
	_, err = s.Policy(ctx, sameName.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	// Renaming onto a taken name.
	q := mustPolicy(t, s, NewPolicy().Name("work"))
	q.Name = "home"
	require.ErrorIs(t, s.UpdatePolicy(ctx, q), store.ErrConflict)
	got, err := s.Policy(ctx, q.ID)
	require.NoError(t, err)
	assert.Equal(t, "work", got.Name)
}

func testPolicyUpdate(t *testing.T, s store.Store) {
	ctx := t.Context()
	created := Now().Add(-time.Hour)
	p := mustPolicy(t, s, NewPolicy().Name("home").Autoscale("home", 2).CreatedAt(created))

	p.Name = "home-2"
	p.Max, p.MinIdle, p.Paused, p.MemoryEstimate, p.MemoryLimit = 4, 1, true, 3<<30, 1<<30
	p.Target = rm.ScaleTarget{Scope: rm.Scope{Kind: rm.ScopeOrganization, Name: "acme"}, RunnerGroup: "big", Labels: []string{"arm64", "linux"}}
	p.Backend, p.Container = rm.BackendContainer, rm.ContainerSettings{Image: "runner:2", CPUs: 2, Network: "host", Env: []string{"GOPROXY"}, Volumes: []string{"cache:/cache"}}
	p.CreatedAt = Now() // ignored: a policy keeps its creation time
	require.NoError(t, s.UpdatePolicy(ctx, p))

	got, err := s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.True(t, got.CreatedAt.Equal(created), "created %v, want %v", got.CreatedAt, created)
	assert.False(t, got.UpdatedAt.Before(created), "UpdatedAt is stamped on update")
	want := normPolicy(p)
	want.CreatedAt, want.UpdatedAt = normTime(got.CreatedAt), normTime(got.UpdatedAt)
	assert.Equal(t, want, normPolicy(got))

	_, err = s.PolicyByName(ctx, "home")
	require.ErrorIs(t, err, store.ErrNotFound, "the old name is free after a rename")

	p.Backend, p.Container, p.VM = rm.BackendVM, rm.ContainerSettings{}, rm.VMSettings{Image: "/images/runner"}
	require.NoError(t, s.UpdatePolicy(ctx, p))
	got, err = s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, rm.BackendVM, got.Backend)
	assert.Equal(t, p.VM, got.VM)
	assert.True(t, got.Container.IsZero())

	p.VM.Forward = []string{"registry.lan:5000"}
	require.NoError(t, s.UpdatePolicy(ctx, p))
	got, err = s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, []string{"registry.lan:5000"}, got.VM.Forward, "an update replaces the forwards")
	p.VM.Forward = nil
	require.NoError(t, s.UpdatePolicy(ctx, p))
	got, err = s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.Nil(t, got.VM.Forward, "and clears them")

	p.Cold = true
	require.NoError(t, s.UpdatePolicy(ctx, p))
	got, err = s.Policy(ctx, p.ID)
	require.NoError(t, err)
	assert.True(t, got.Cold, "a policy keeps its cold switch")
}

func testPolicies(t *testing.T, s store.Store) {
	for _, n := range []string{"zeta", "alpha", "mid"} {
		mustPolicy(t, s, NewPolicy().Name(n))
	}
	ps, err := s.Policies(t.Context())
	require.NoError(t, err)
	var names []string
	for _, p := range ps {
		names = append(names, p.Name)
	}
	assert.Equal(t, []string{"alpha", "mid", "zeta"}, names)
}

// A removed policy is kept with its attempts as history: out of
// Policies and PolicyByName, in RemovedPolicies and Policy with its
// RemovedAt; its name and scale set are free for a new policy.
func testPolicyDelete(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy().Name("home").Autoscale("home", 2))
	other := mustPolicy(t, s, NewPolicy())
	done := NewAttempt().Policy(p.ID).State(rm.StateFinished).Build()
	failed := NewAttempt().Policy(p.ID).State(rm.StateFailed).Build()
	kept := NewAttempt().Policy(other.ID).State(rm.StateFinished).Build()
	mustRecord(t, s, done, failed, kept)

	before := time.Now()
	require.NoError(t, s.DeletePolicy(ctx, p.ID))
	got, err := s.Policy(ctx, p.ID)
	require.NoError(t, err, "a removed policy is kept")
	assert.Equal(t, "home", got.Name, "with its name")
	assert.Equal(t, "home", got.Target.ScaleSet)
	assert.False(t, got.RemovedAt.Before(before.Truncate(time.Microsecond)), "RemovedAt %s is stamped", got.RemovedAt)
	for _, a := range []rm.Attempt{done, failed} {
		_, err = s.Attempt(ctx, a.ID)
		require.NoError(t, err, "its attempts stay as history")
	}
	hist, err := s.Attempts(ctx, store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	assert.Len(t, hist, 2)

	assert.Equal(t, []string{other.Name}, policyNames(t, s), "Policies lists the policies in force")
	_, err = s.PolicyByName(ctx, "home")
	require.ErrorIs(t, err, store.ErrNotFound)
	removed, err := s.RemovedPolicies(ctx)
	require.NoError(t, err)
	require.Len(t, removed, 1)
	assert.Equal(t, p.ID, removed[0].ID)
	assert.Equal(t, "home", removed[0].Name)
	assert.False(t, removed[0].RemovedAt.IsZero())

	require.ErrorIs(t, s.DeletePolicy(ctx, p.ID), store.ErrNotFound, "removed once")
	changed := p
	changed.Max = 5
	require.ErrorIs(t, s.UpdatePolicy(ctx, changed), store.ErrNotFound, "a removed policy is not changed")
	require.ErrorIs(t, s.InsertPolicy(ctx, p), store.ErrConflict, "its id stays taken")
	require.ErrorIs(t, s.RecordAttempt(ctx, NewAttempt().Policy(p.ID).Build()), store.ErrConflict, "it gets no new attempts")

	again := mustPolicy(t, s, NewPolicy().Name("home").Autoscale("home", 1))
	got, err = s.PolicyByName(ctx, "home")
	require.NoError(t, err, "the name is free again")
	assert.Equal(t, again.ID, got.ID)
	require.NoError(t, s.DeletePolicy(ctx, again.ID))
	removed, err = s.RemovedPolicies(ctx)
	require.NoError(t, err)
	require.Len(t, removed, 2, "two removed policies may share a name")
	assert.Equal(t, []rm.PolicyID{p.ID, again.ID}, []rm.PolicyID{removed[0].ID, removed[1].ID}, "by name, then by when removed")
}

// PurgePolicy deletes a policy, in force or removed, with its attempts.
func testPolicyPurge(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, removedFirst := range []bool{false, true} {
		p := mustPolicy(t, s, NewPolicy())
		other := mustPolicy(t, s, NewPolicy())
		done := NewAttempt().Policy(p.ID).State(rm.StateFinished).Build()
		kept := NewAttempt().Policy(other.ID).State(rm.StateFinished).Build()
		mustRecord(t, s, done, kept)
		if removedFirst {
			require.NoError(t, s.DeletePolicy(ctx, p.ID))
		}
		require.NoError(t, s.PurgePolicy(ctx, p.ID))
		_, err := s.Policy(ctx, p.ID)
		require.ErrorIs(t, err, store.ErrNotFound)
		_, err = s.Attempt(ctx, done.ID)
		require.ErrorIs(t, err, store.ErrNotFound, "its attempts go with it")
		_, err = s.Attempt(ctx, kept.ID)
		require.NoError(t, err, "another policy's attempts stay")
		require.ErrorIs(t, s.PurgePolicy(ctx, p.ID), store.ErrNotFound)
	}
	removed, err := s.RemovedPolicies(ctx)
	require.NoError(t, err)
	assert.Empty(t, removed)

	live := mustPolicy(t, s, NewPolicy())
	mustRecord(t, s, NewAttempt().Policy(live.ID).State(rm.StateBusy).Build())
	require.ErrorIs(t, s.PurgePolicy(ctx, live.ID), store.ErrConflict, "not while it has live attempts")
}

// One scale set is one policy's: a second policy in force serving the same
// scope, group and scale set (without case) is refused, by InsertPolicy,
// UpdatePolicy and ApplyPolicies alike, with an error naming the other.
// Classic policies may share labels; a removed policy frees its scale set.
func testPolicyTargetTaken(t *testing.T, s store.Store) {
	ctx := t.Context()
	home := mustPolicy(t, s, NewPolicy().Name("home").Repository("acme/app").Autoscale("home", 1))
	check := func(t *testing.T, err error) {
		t.Helper()
		require.ErrorIs(t, err, store.ErrConflict)
		var taken *store.TargetTakenError
		require.ErrorAs(t, err, &taken)
		assert.Equal(t, "home", taken.Other)
		assert.Equal(t, home.ID, taken.OtherID)
		assert.Contains(t, err.Error(), `policy "home" serves it already`)
	}
	t.Run("Insert", func(t *testing.T) {
		check(t, s.InsertPolicy(ctx, NewPolicy().Name("twin").Repository("acme/app").Autoscale("HOME", 1).Build()))
		_, err := s.PolicyByName(ctx, "twin")
		require.ErrorIs(t, err, store.ErrNotFound)
	})
	t.Run("Update", func(t *testing.T) {
		p := mustPolicy(t, s, NewPolicy().Name("moving").Repository("acme/app").Autoscale("elsewhere", 1))
		p.Target.ScaleSet = "home"
		check(t, s.UpdatePolicy(ctx, p))
		got, err := s.Policy(ctx, p.ID)
		require.NoError(t, err)
		assert.Equal(t, "elsewhere", got.Target.ScaleSet)
		p.Target.ScaleSet, p.Max = "elsewhere", 3
		require.NoError(t, s.UpdatePolicy(ctx, p), "a policy keeps its own scale set")
	})
	t.Run("Apply", func(t *testing.T) {
		check(t, s.ApplyPolicies(ctx, store.PolicyChanges{Insert: []rm.Policy{
			NewPolicy().Name("fine").Build(),
			NewPolicy().Name("twin").Repository("acme/app").Autoscale("home", 1).Build(),
		}}))
		_, err := s.PolicyByName(ctx, "fine")
		require.ErrorIs(t, err, store.ErrNotFound, "nothing applied")
	})
	t.Run("Elsewhere", func(t *testing.T) {
		mustPolicy(t, s, NewPolicy().Repository("acme/other").Autoscale("home", 1))
		mustPolicy(t, s, NewPolicy().Repository("acme/app").Group("gpu").Autoscale("home", 1))
		mustPolicy(t, s, NewPolicy().Repository("acme/app").Labels("home"))
		mustPolicy(t, s, NewPolicy().Repository("acme/app").Labels("home"))
	})
	t.Run("FreedByRemoval", func(t *testing.T) {
		fresh := NewPolicy().Name("successor").Repository("acme/app").Autoscale("home", 1).Build()
		require.NoError(t, s.ApplyPolicies(ctx, store.PolicyChanges{Delete: []rm.PolicyID{home.ID}, Insert: []rm.Policy{fresh}}))
		got, err := s.PolicyByName(ctx, "successor")
		require.NoError(t, err)
		assert.Equal(t, fresh.ID, got.ID)
	})
}

func testPolicyDeleteLive(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, st := range []rm.AttemptState{rm.StatePending, rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy} {
		t.Run(string(st), func(t *testing.T) {
			p := mustPolicy(t, s, NewPolicy())
			live := NewAttempt().Policy(p.ID).State(st).Build()
			mustRecord(t, s, live, NewAttempt().Policy(p.ID).State(rm.StateFinished).Build())

			err := s.DeletePolicy(ctx, p.ID)
			require.ErrorIs(t, err, store.ErrConflict)
			_, err = s.Policy(ctx, p.ID)
			require.NoError(t, err, "a refused delete leaves the policy")

			ended, err := live.Conclude(rm.Outcome{Kind: rm.ExitedIdleWithoutWork}, Now())
			if st == rm.StatePending || st == rm.StateRegistering {
				ended, err = live.Conclude(rm.FailedWith(rm.RegistrationFailed, "401"), Now())
			}
			require.NoError(t, err)
			mustRecord(t, s, ended)
			require.NoError(t, s.DeletePolicy(ctx, p.ID))
			require.NoError(t, s.PurgePolicy(ctx, p.ID), "a removed policy has no live attempts")
		})
	}
}

func testAttemptRoundTrip(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	tests := map[string]rm.Attempt{
		"Pending": NewAttempt().Policy(p.ID).Build(),
		"Busy": NewAttempt().Policy(p.ID).State(rm.StateBusy).GitHubRunnerID(1 << 40).ProcessID(4242).
			ProcessStart(1<<63 + 99).Job(rm.Job{ID: "7", Number: 7, RunID: 8, Workflow: "ci.yml", Name: "build (linux)"}).
			Usage(rm.AttemptUsage{PeakRSSBytes: 1<<63 + 3, CPUAvgMillicores: 875, CPUPeakMillicores: 1<<32 - 1, Samples: 4, Source: rm.UsageFromCgroup}).
			LastMessage("took job 7").Slot("acme/app#3").Build(),
		// A scale-set job: the service's jobId, a UUID, with no REST number.
		"BusyScaleSetJob": NewAttempt().Policy(p.ID).State(rm.StateBusy).
			Job(rm.Job{ID: "0f8fad5b-d9cb-469f-a165-70867728950e", RunID: 9, Workflow: "ci.yml", Name: "test"}).Build(),
		// A classic job number past 2^53: stored and read back whole.
		"BusyClassicJob": NewAttempt().Policy(p.ID).State(rm.StateBusy).
			Job(rm.Job{ID: "9007199254740993", Number: 1<<53 + 1, RunID: 1 << 41}).Build(),
		// Both ids, as when a scale-set job's REST number is learned too.
		"BusyBothIDs": NewAttempt().Policy(p.ID).State(rm.StateFinished).ExitCode(0).
			Job(rm.Job{ID: "job-é\u00e9'\"", Number: 41, RunID: 42}).Outcome(rm.Outcome{Kind: rm.CompletedJob}).Build(),
		"Finished": NewAttempt().Policy(p.ID).State(rm.StateFinished).ExitCode(0).
			Outcome(rm.Outcome{Kind: rm.ExitedIdleWithoutWork, Detail: "dropped while idle"}).Build(),
		"Failed": NewAttempt().Policy(p.ID).State(rm.StateFailed).ExitCode(-1).
			Outcome(rm.FailedWith(rm.LaunchFailed, "runner dir missing")).Build(),
		"ExitCodeZero": NewAttempt().Policy(p.ID).State(rm.StateFinished).ExitCode(0).Build(),
	}
	for name, a := range tests {
		t.Run(name, func(t *testing.T) {
			require.NoError(t, s.RecordAttempt(ctx, a))
			got, err := s.Attempt(ctx, a.ID)
			require.NoError(t, err)
			assert.Equal(t, normAttempt(a), normAttempt(got))
		})
	}
}

func testAttemptAnyStateOnInsert(t *testing.T, s store.Store) {
	p := mustPolicy(t, s, NewPolicy())
	for _, st := range rm.AttemptStates {
		a := NewAttempt().Policy(p.ID).State(st).Build()
		require.NoError(t, s.RecordAttempt(t.Context(), a), "insert in state %s", st)
		got, err := s.Attempt(t.Context(), a.ID)
		require.NoError(t, err)
		assert.Equal(t, st, got.State)
	}
}

func testAttemptInvalid(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	tests := map[string]rm.Attempt{
		"NoID":              NewAttempt().ID(rm.AttemptID{}).Policy(p.ID).Build(),
		"NoPolicy":          NewAttempt().Build(),
		"BadState":          NewAttempt().Policy(p.ID).State("sleeping").Build(),
		"FinishedAsFailure": NewAttempt().Policy(p.ID).State(rm.StateFinished).Outcome(rm.FailedWith(rm.Lost, "")).Build(),
		"FailedNoReason":    NewAttempt().Policy(p.ID).State(rm.StateFailed).Outcome(rm.Outcome{Kind: rm.Failed}).Build(),
		"LiveWithOutcome":   NewAttempt().Policy(p.ID).State(rm.StateBusy).Outcome(rm.Outcome{Kind: rm.CompletedJob}).Build(),
	}
	for name, a := range tests {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, s.RecordAttempt(ctx, a), rm.ErrInvalid)
			if !a.ID.IsZero() {
				_, err := s.Attempt(ctx, a.ID)
				require.ErrorIs(t, err, store.ErrNotFound)
			}
		})
	}
	// An update is validated before anything is read or written.
	a := NewAttempt().Policy(p.ID).State(rm.StateBusy).Build()
	mustRecord(t, s, a)
	a.State = rm.StateFinished // without an outcome
	require.ErrorIs(t, s.RecordAttempt(ctx, a), rm.ErrInvalid)
	require.ErrorIs(t, s.ForceAttempt(ctx, a), rm.ErrInvalid)
	got, err := s.Attempt(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, rm.StateBusy, got.State)
}

func testAttemptUnknownPolicy(t *testing.T, s store.Store) {
	ctx := t.Context()
	a := NewAttempt().Policy(rm.NewPolicyID()).Build()
	require.ErrorIs(t, s.RecordAttempt(ctx, a), store.ErrConflict)
	_, err := s.Attempt(ctx, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)

	// Moving an attempt to a policy that does not exist.
	p := mustPolicy(t, s, NewPolicy())
	a.Policy = p.ID
	mustRecord(t, s, a)
	a.Policy = rm.NewPolicyID()
	require.ErrorIs(t, s.RecordAttempt(ctx, a), store.ErrConflict)
	require.ErrorIs(t, s.ForceAttempt(ctx, a), store.ErrConflict)
}

func testAttemptNotFound(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, err := s.Attempt(ctx, rm.NewAttemptID())
	require.ErrorIs(t, err, store.ErrNotFound)
	p := mustPolicy(t, s, NewPolicy())
	a := NewAttempt().Policy(p.ID).State(rm.StateFailed).Build()
	require.ErrorIs(t, s.ForceAttempt(ctx, a), store.ErrNotFound, "force updates, never inserts")
	_, err = s.Attempt(ctx, a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
}

func testAttemptLifecycle(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	a := NewAttempt().Policy(p.ID).Build()
	mustRecord(t, s, a)
	at := a.CreatedAt
	var err error
	for _, st := range []rm.AttemptState{rm.StateRegistering, rm.StateStarting, rm.StateIdle, rm.StateBusy} {
		at = at.Add(time.Second)
		a, err = a.MoveTo(st, at)
		require.NoError(t, err)
		switch st {
		case rm.StateStarting:
			a.PID, a.ProcessStart = 1234, 5678
		case rm.StateIdle:
			a.GitHubRunnerID = 99
		case rm.StateBusy:
			a.Job = rm.Job{ID: "3c9ffc6c-1e4b-4d8f-9d1c-6a3e1b9a0e42", Name: "test"}
		}
		mustRecord(t, s, a)
		got, err := s.Attempt(ctx, a.ID)
		require.NoError(t, err)
		assert.Equal(t, normAttempt(a), normAttempt(got), "after moving to %s", st)
	}
	// Staying in a state to note something is an update like any other.
	a.Usage = rm.AttemptUsage{PeakRSSBytes: 500, CPUAvgMillicores: 875, CPUPeakMillicores: 2000, Samples: 4}
	mustRecord(t, s, a)

	code := 0
	a.ExitCode = &code
	a, err = a.Conclude(rm.Outcome{Kind: rm.CompletedJob}, at.Add(time.Second))
	require.NoError(t, err)
	mustRecord(t, s, a)
	got, err := s.Attempt(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, normAttempt(a), normAttempt(got))
	for _, st := range rm.AttemptStates[:5] {
		assert.False(t, got.StateAt(st).IsZero(), "time of %s kept", st)
	}
}

func testAttemptIllegalTransition(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	tests := []struct{ from, to rm.AttemptState }{
		{rm.StatePending, rm.StateBusy},
		{rm.StatePending, rm.StateFinished},
		{rm.StateRegistering, rm.StateIdle},
		{rm.StateIdle, rm.StateStarting},
		{rm.StateBusy, rm.StateIdle},
		{rm.StateFinished, rm.StateBusy},
		{rm.StateFinished, rm.StateFailed},
		{rm.StateFailed, rm.StateFinished},
		{rm.StateFailed, rm.StatePending},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s-%s", tt.from, tt.to), func(t *testing.T) {
			a := NewAttempt().Policy(p.ID).State(tt.from).Build()
			mustRecord(t, s, a)
			b := NewAttempt().ID(a.ID).Policy(p.ID).State(tt.to).Build()
			err := s.RecordAttempt(ctx, b)
			require.ErrorIs(t, err, store.ErrIllegalTransition)
			assert.Contains(t, err.Error(), string(tt.from))
			got, err := s.Attempt(ctx, a.ID)
			require.NoError(t, err)
			assert.Equal(t, normAttempt(a), normAttempt(got), "a refused update writes nothing")
		})
	}
}

func testAttemptKeepsCreatedAt(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	created := Now().Add(-time.Hour)
	a := NewAttempt().Policy(p.ID).CreatedAt(created).Build()
	mustRecord(t, s, a)
	for _, c := range []time.Time{{}, Now()} {
		a.CreatedAt = c
		mustRecord(t, s, a)
		got, err := s.Attempt(ctx, a.ID)
		require.NoError(t, err)
		assert.True(t, got.CreatedAt.Equal(created), "CreatedAt %v, want %v", got.CreatedAt, created)
	}
	// A zero CreatedAt on insert is stamped.
	b := NewAttempt().Policy(p.ID).CreatedAt(time.Time{}).Build()
	mustRecord(t, s, b)
	got, err := s.Attempt(ctx, b.ID)
	require.NoError(t, err)
	assert.False(t, got.CreatedAt.IsZero())
}

func testActiveAttempts(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	other := mustPolicy(t, s, NewPolicy())
	base := Now().Add(-time.Hour)
	var want []rm.AttemptID
	for i, st := range []rm.AttemptState{rm.StateBusy, rm.StateFinished, rm.StatePending, rm.StateFailed, rm.StateIdle, rm.StateStarting, rm.StateRegistering} {
		a := NewAttempt().Policy(p.ID).State(st).CreatedAt(base.Add(time.Duration(i) * time.Minute)).Build()
		mustRecord(t, s, a)
		if st.Live() {
			want = append(want, a.ID)
		}
		mustRecord(t, s, NewAttempt().Policy(other.ID).State(st).Build())
	}
	got, err := s.ActiveAttempts(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, want, ids(got), "live attempts of the policy, oldest first")

	// Ending one takes it out.
	ended, err := got[0].Conclude(rm.Outcome{Kind: rm.CompletedJob}, Now())
	require.NoError(t, err)
	mustRecord(t, s, ended)
	got, err = s.ActiveAttempts(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, want[1:], ids(got))

	none, err := s.ActiveAttempts(ctx, rm.NewPolicyID())
	require.NoError(t, err)
	assert.Empty(t, none)
}

func testLiveAttempts(t *testing.T, s store.Store) {
	ctx := t.Context()
	host, other := NewHost().Build(), NewHost().Build()
	for _, h := range []rm.Host{host, other} {
		require.NoError(t, s.PutHost(ctx, h))
	}
	mine := []rm.Policy{mustPolicy(t, s, NewPolicy().Host(host.ID)), mustPolicy(t, s, NewPolicy().Host(host.ID))}
	theirs := mustPolicy(t, s, NewPolicy().Host(other.ID))
	base := Now().Add(-time.Hour)
	var want []rm.AttemptID
	for i, st := range []rm.AttemptState{rm.StateBusy, rm.StateFinished, rm.StatePending, rm.StateFailed, rm.StateIdle, rm.StateStarting, rm.StateRegistering} {
		// Alternating between the host's two policies, older first.
		a := NewAttempt().Policy(mine[i%2].ID).State(st).CreatedAt(base.Add(time.Duration(i) * time.Minute)).Build()
		mustRecord(t, s, a)
		if st.Live() {
			want = append(want, a.ID)
		}
		mustRecord(t, s, NewAttempt().Policy(theirs.ID).State(st).CreatedAt(base.Add(time.Duration(i)*time.Minute)).Build())
	}
	got, err := s.LiveAttempts(ctx, host.ID)
	require.NoError(t, err)
	assert.Equal(t, want, ids(got), "the live attempts of the host's policies, oldest first")
	for _, a := range got {
		assert.True(t, a.Live())
	}

	// Ending one takes it out; moving a policy to another host takes its
	// attempts with it.
	ended, err := got[0].Conclude(rm.Outcome{Kind: rm.CompletedJob}, Now())
	require.NoError(t, err)
	mustRecord(t, s, ended)
	moved := mine[1]
	moved.Host = other.ID
	require.NoError(t, s.UpdatePolicy(ctx, moved))
	got, err = s.LiveAttempts(ctx, host.ID)
	require.NoError(t, err)
	var left []rm.AttemptID
	for _, a := range got {
		assert.Equal(t, mine[0].ID, a.Policy)
		left = append(left, a.ID)
	}
	assert.Equal(t, []rm.AttemptID{want[1], want[2], want[4]}, left)
	theirsNow, err := s.LiveAttempts(ctx, other.ID)
	require.NoError(t, err)
	assert.Len(t, theirsNow, 5+1, "the other host's own, and the moved policy's")

	for _, h := range []rm.HostID{rm.NewHostID(), {}} {
		none, err := s.LiveAttempts(ctx, h)
		require.NoError(t, err)
		assert.Empty(t, none, "a host without policies has no attempts")
	}
}

func testAttemptsFilter(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	q := mustPolicy(t, s, NewPolicy())
	base := Now().Add(-24 * time.Hour)
	// Six attempts an hour apart, alternating policies; states cycle.
	states := []rm.AttemptState{rm.StateFinished, rm.StateBusy, rm.StateFailed, rm.StateFinished, rm.StateIdle, rm.StateFinished}
	var all []rm.Attempt
	for i, st := range states {
		pol := p.ID
		if i%2 == 1 {
			pol = q.ID
		}
		a := NewAttempt().Policy(pol).State(st).CreatedAt(base.Add(time.Duration(i) * time.Hour)).Build()
		mustRecord(t, s, a)
		all = append(all, a)
	}
	newestFirst := func(idx ...int) []rm.AttemptID {
		var out []rm.AttemptID
		for _, i := range idx {
			out = append(out, all[i].ID)
		}
		return out
	}
	tests := map[string]struct {
		f    store.AttemptFilter
		want []rm.AttemptID
	}{
		"All":         {store.AttemptFilter{}, newestFirst(5, 4, 3, 2, 1, 0)},
		"Policy":      {store.AttemptFilter{Policy: p.ID}, newestFirst(4, 2, 0)},
		"State":       {store.AttemptFilter{States: []rm.AttemptState{rm.StateFinished}}, newestFirst(5, 3, 0)},
		"States":      {store.AttemptFilter{States: []rm.AttemptState{rm.StateBusy, rm.StateIdle}}, newestFirst(4, 1)},
		"Since":       {store.AttemptFilter{Since: all[3].CreatedAt}, newestFirst(5, 4, 3)},
		"Until":       {store.AttemptFilter{Until: all[2].CreatedAt}, newestFirst(1, 0)},
		"Window":      {store.AttemptFilter{Since: all[1].CreatedAt, Until: all[4].CreatedAt}, newestFirst(3, 2, 1)},
		"Limit":       {store.AttemptFilter{Limit: 2}, newestFirst(5, 4)},
		"Combined":    {store.AttemptFilter{Policy: q.ID, States: []rm.AttemptState{rm.StateFinished, rm.StateBusy}, Limit: 1}, newestFirst(5)},
		"NoMatch":     {store.AttemptFilter{Policy: rm.NewPolicyID()}, nil},
		"EmptyWindow": {store.AttemptFilter{Since: all[2].CreatedAt, Until: all[2].CreatedAt}, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := s.Attempts(ctx, tt.f)
			require.NoError(t, err)
			assert.Equal(t, tt.want, ids(got))
		})
	}
	got, err := s.Attempts(ctx, store.AttemptFilter{Policy: p.ID, Limit: 1})
	require.NoError(t, err)
	require.Len(t, got, 1)
	assert.Equal(t, normAttempt(all[4]), normAttempt(got[0]), "listed attempts are whole")
}

func testForceAttempt(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := mustPolicy(t, s, NewPolicy())
	// Recorded as failed (lost while the manager was down), then GitHub
	// shows the job completed: only recovery may rewrite an ended attempt.
	a := NewAttempt().Policy(p.ID).State(rm.StateFailed).Outcome(rm.FailedWith(rm.Lost, "")).Build()
	mustRecord(t, s, a)
	a.State = rm.StateFinished
	a.Outcome = rm.Outcome{Kind: rm.CompletedJob, Detail: "found completed at GitHub"}
	require.ErrorIs(t, s.RecordAttempt(ctx, a), store.ErrIllegalTransition)
	require.NoError(t, s.ForceAttempt(ctx, a))
	got, err := s.Attempt(ctx, a.ID)
	require.NoError(t, err)
	assert.Equal(t, normAttempt(a), normAttempt(got))

	// A forced move backwards, too.
	b := NewAttempt().Policy(p.ID).State(rm.StateBusy).Build()
	mustRecord(t, s, b)
	b.State = rm.StateIdle
	require.NoError(t, s.ForceAttempt(ctx, b))
	got, err = s.Attempt(ctx, b.ID)
	require.NoError(t, err)
	assert.Equal(t, rm.StateIdle, got.State)
	act, err := s.ActiveAttempts(ctx, p.ID)
	require.NoError(t, err)
	assert.Equal(t, []rm.AttemptID{b.ID}, ids(act))
}

func testCanceled(t *testing.T, s store.Store) {
	p := mustPolicy(t, s, NewPolicy())
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	a := NewAttempt().Policy(p.ID).Build()
	err := s.RecordAttempt(ctx, a)
	require.ErrorIs(t, err, context.Canceled)
	_, err = s.Attempt(t.Context(), a.ID)
	require.ErrorIs(t, err, store.ErrNotFound)
	_, err = s.ActiveAttempts(ctx, p.ID)
	require.ErrorIs(t, err, context.Canceled)
}

// testConcurrent: writers take attempts of their own through their whole
// life while readers list; nothing is lost, nothing fails busy.
func testConcurrent(t *testing.T, s store.Store) {
	ctx := t.Context()
	const writers, each = 8, 15
	policies := []rm.Policy{mustPolicy(t, s, NewPolicy()), mustPolicy(t, s, NewPolicy())}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		errs     []error
		recorded []rm.AttemptID
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := s.ActiveAttempts(ctx, policies[r].ID); err != nil {
					fail(err)
					return
				}
				if _, err := s.Attempts(ctx, store.AttemptFilter{Limit: 10}); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	for w := range writers {
		wg.Go(func() {
			pol := policies[w%len(policies)].ID
			for range each {
				a := NewAttempt().Policy(pol).Build()
				if err := s.RecordAttempt(ctx, a); err != nil {
					fail(err)
					return
				}
				var err error
				at := a.CreatedAt
				for _, st := range []rm.AttemptState{rm.StateRegistering, rm.StateStarting, rm.StateBusy} {
					at = at.Add(time.Millisecond)
					if a, err = a.MoveTo(st, at); err == nil {
						err = s.RecordAttempt(ctx, a)
					}
					if err != nil {
						fail(err)
						return
					}
				}
				if a, err = a.Conclude(rm.Outcome{Kind: rm.CompletedJob}, at.Add(time.Millisecond)); err == nil {
					err = s.RecordAttempt(ctx, a)
				}
				if err != nil {
					fail(err)
					return
				}
				mu.Lock()
				recorded = append(recorded, a.ID)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	require.Empty(t, errs)
	require.Len(t, recorded, writers*each)

	all, err := s.Attempts(ctx, store.AttemptFilter{States: []rm.AttemptState{rm.StateFinished}})
	require.NoError(t, err)
	got := ids(all)
	slices.SortFunc(got, compareIDs)
	slices.SortFunc(recorded, compareIDs)
	assert.Equal(t, recorded, got)
	for _, p := range policies {
		act, err := s.ActiveAttempts(ctx, p.ID)
		require.NoError(t, err)
		assert.Empty(t, act)
	}
}

func compareIDs(a, b rm.AttemptID) int { return strings.Compare(a.String(), b.String()) }

func testSessions(t *testing.T, s store.Store) {
	ctx := t.Context()
	_, found, err := s.SessionOf(ctx, 7)
	require.NoError(t, err)
	assert.False(t, found)
	require.NoError(t, s.ForgetSession(ctx, 7, "nothing"), "forgetting what is not recorded")

	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	a := rm.SessionRecord{ScaleSetID: 7, SessionID: "s-1", Owner: "host-a/1234", HostID: "h1", Scope: "repo:octo/app", CreatedAt: at}
	b := rm.SessionRecord{ScaleSetID: 3, SessionID: "s-9", Owner: "host-b", HostID: "h2", Scope: "org:octo", CreatedAt: at.Add(time.Minute)}
	require.NoError(t, s.RecordSession(ctx, a))
	require.NoError(t, s.RecordSession(ctx, b))
	got, found, err := s.SessionOf(ctx, 7)
	require.NoError(t, err)
	require.True(t, found)
	got.CreatedAt = normTime(got.CreatedAt)
	assert.Equal(t, a, got)

	all, err := s.Sessions(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, []int{3, 7}, []int{all[0].ScaleSetID, all[1].ScaleSetID}, "listed by scale set id")

	// A new session of the same scale set replaces the old record.
	a2 := a
	a2.SessionID, a2.CreatedAt = "s-2", time.Time{}
	require.NoError(t, s.RecordSession(ctx, a2))
	got, _, err = s.SessionOf(ctx, 7)
	require.NoError(t, err)
	assert.Equal(t, "s-2", got.SessionID)
	assert.False(t, got.CreatedAt.IsZero(), "a zero CreatedAt is stamped")

	// Forgetting the old id leaves the new record alone.
	require.NoError(t, s.ForgetSession(ctx, 7, "s-1"))
	_, found, err = s.SessionOf(ctx, 7)
	require.NoError(t, err)
	assert.True(t, found, "a newer session is not forgotten by the old id")
	require.NoError(t, s.ForgetSession(ctx, 7, "s-2"))
	_, found, err = s.SessionOf(ctx, 7)
	require.NoError(t, err)
	assert.False(t, found)
	all, err = s.Sessions(ctx)
	require.NoError(t, err)
	assert.Len(t, all, 1)
}

// testSpareAuto: spares sized by the day come back so, and a fixed cap
// (0 too) as written.
func testSpareAuto(t *testing.T, s store.Store) {
	ctx := t.Context()
	for _, n := range []int{rm.SpareAuto, 0, 3} {
		p := NewPolicy().Name(fmt.Sprintf("spare-%d", n+1)).Autoscale(fmt.Sprintf("s%d", n+1), 4).Spare(n).Build()
		require.NoError(t, s.InsertPolicy(ctx, p))
		got, err := s.Policy(ctx, p.ID)
		require.NoError(t, err)
		assert.Equal(t, n, got.Spare)
		got.Spare = map[int]int{rm.SpareAuto: 0, 0: rm.SpareAuto, 3: rm.SpareAuto}[n] // each way across
		require.NoError(t, s.UpdatePolicy(ctx, got))
		again, err := s.Policy(ctx, p.ID)
		require.NoError(t, err)
		assert.Equal(t, got.Spare, again.Spare)
	}
}

// testJobTimes: a job's queue and assignment times come back as written,
// and zero stays zero.
func testJobTimes(t *testing.T, s store.Store) {
	ctx := t.Context()
	p := NewPolicy().Build()
	require.NoError(t, s.InsertPolicy(ctx, p))
	q := time.Date(2026, 12, 3, 10, 0, 0, 123456789, time.UTC)
	a := NewAttempt().Policy(p.ID).State(rm.StateBusy).Job(rm.Job{ID: "j", Name: "build", QueuedAt: q, AssignedAt: q.Add(40 * time.Millisecond)}).Build()
	b := NewAttempt().Policy(p.ID).State(rm.StateBusy).Job(rm.Job{ID: "k", Name: "test"}).Build()
	require.NoError(t, s.RecordAttempt(ctx, a))
	require.NoError(t, s.RecordAttempt(ctx, b))
	got, err := s.Attempt(ctx, a.ID)
	require.NoError(t, err)
	assert.True(t, got.Job.QueuedAt.Equal(q), "%v", got.Job.QueuedAt)
	assert.True(t, got.Job.AssignedAt.Equal(q.Add(40*time.Millisecond)), "%v", got.Job.AssignedAt)
	got, err = s.Attempt(ctx, b.ID)
	require.NoError(t, err)
	assert.True(t, got.Job.QueuedAt.IsZero())
	assert.True(t, got.Job.AssignedAt.IsZero())
}

func testScaleSets(t *testing.T, s store.Store) {
	ctx := t.Context()
	all, err := s.ScaleSets(ctx)
	require.NoError(t, err)
	assert.Empty(t, all)
	require.NoError(t, s.ForgetScaleSet(ctx, 9), "forgetting what is not recorded")
	for _, bad := range []rm.ScaleSetRecord{{Name: "n", Scope: "repo:o/r"}, {ScaleSetID: 1, Scope: "repo:o/r"}, {ScaleSetID: 1, Name: "n"}} {
		require.ErrorIs(t, s.RecordScaleSet(ctx, bad), rm.ErrInvalid)
	}

	at := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	a := rm.ScaleSetRecord{ScaleSetID: 12, Name: "home", Scope: "repo:octo/app", HostID: "h1", CreatedAt: at}
	b := rm.ScaleSetRecord{ScaleSetID: 4, Name: "gpu", Scope: "org:octo", HostID: "h2", CreatedAt: at}
	require.NoError(t, s.RecordScaleSet(ctx, a))
	require.NoError(t, s.RecordScaleSet(ctx, b))
	all, err = s.ScaleSets(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	all[1].CreatedAt = normTime(all[1].CreatedAt)
	assert.Equal(t, 4, all[0].ScaleSetID, "by id")
	assert.Equal(t, a, all[1])

	// Created again (deleted at GitHub meanwhile): the new id replaces the old.
	a2 := a
	a2.ScaleSetID, a2.CreatedAt = 30, time.Time{}
	require.NoError(t, s.RecordScaleSet(ctx, a2))
	all, err = s.ScaleSets(ctx)
	require.NoError(t, err)
	require.Len(t, all, 2)
	assert.Equal(t, []int{4, 30}, []int{all[0].ScaleSetID, all[1].ScaleSetID})
	assert.False(t, all[1].CreatedAt.IsZero(), "a zero CreatedAt is stamped")

	require.NoError(t, s.ForgetScaleSet(ctx, 4))
	all, err = s.ScaleSets(ctx)
	require.NoError(t, err)
	require.Len(t, all, 1)
	assert.Equal(t, 30, all[0].ScaleSetID)
}

func testSessionInvalid(t *testing.T, s store.Store) {
	for _, se := range []rm.SessionRecord{
		{SessionID: "s", Owner: "o"},
		{ScaleSetID: 1, Owner: "o"},
		{ScaleSetID: 1, SessionID: "s"},
	} {
		require.ErrorIs(t, s.RecordSession(t.Context(), se), rm.ErrInvalid)
	}
	all, err := s.Sessions(t.Context())
	require.NoError(t, err)
	assert.Empty(t, all)
}
