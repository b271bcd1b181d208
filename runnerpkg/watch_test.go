package runnerpkg_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/runnerpkg"
)

// Watch asks GitHub for the installed version's schedule in the scope of
// this host's first policy that launches it, and tells it in its State.
func TestWatchAsksTheSchedule(t *testing.T) {
	data := t.TempDir()
	installed(t, data, "2.330.0")
	host, other := rm.NewHostID(), rm.NewHostID()
	scope := func(s string) rm.Scope {
		sc, err := rm.Repository(s)
		require.NoError(t, err)
		return sc
	}
	policies := []rm.Policy{
		{Name: "boxes", Host: host, Backend: rm.BackendContainer, Container: rm.ContainerSettings{Image: "ghcr.io/actions/actions-runner:latest"}, Target: rm.ScaleTarget{Scope: scope("octo/boxes")}},
		{Name: "elsewhere", Host: other, Target: rm.ScaleTarget{Scope: scope("octo/elsewhere")}},
		{Name: "own", Host: host, RunnerDir: "/opt/runner", Target: rm.ScaleTarget{Scope: scope("octo/own")}},
		{Name: "home", Host: host, Target: rm.ScaleTarget{Scope: scope("octo/home")}},
	}
	runtime := time.Now().Add(50 * time.Hour)
	registration := time.Now().Add(30 * time.Hour)
	var mu sync.Mutex
	var asked []string
	w := &runnerpkg.Watch{
		DataDir: data, Host: host,
		Policies: func(context.Context) ([]rm.Policy, error) { return policies, nil },
		Deprecation: func(_ context.Context, sc rm.Scope, version string) (time.Time, time.Time, error) {
			mu.Lock()
			defer mu.Unlock()
			asked = append(asked, sc.Name+"@"+version)
			return registration, runtime, nil
		},
	}
	assert.False(t, w.State().Scheduled, "not asked yet")
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); w.Run(ctx) }()
	require.Eventually(t, func() bool { return w.State().Scheduled }, 10*time.Second, 10*time.Millisecond)
	cancel()
	<-done

	s := w.State()
	assert.Equal(t, "2.330.0", s.Version)
	assert.True(t, s.RuntimeEnds.Equal(runtime))
	assert.True(t, s.RegistrationEnds.Equal(registration))
	require.NotNil(t, s.DaysLeft)
	assert.Equal(t, 1, *s.DaysLeft, "to the earlier date")
	mu.Lock()
	defer mu.Unlock()
	assert.Equal(t, []string{"octo/home@2.330.0"}, asked, "once, in the scope of this host's policy that launches the installed runner")
}
