package service_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/platform/service"
)

// scm drives Serve as the Service Control Manager would.
type scm struct {
	mu       sync.Mutex
	reported []service.State
	controls chan service.Control
}

func (s *scm) report(st service.State) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reported = append(s.reported, st)
}

func (s *scm) states() []service.State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]service.State(nil), s.reported...)
}

func TestServe(t *testing.T) {
	for _, tc := range []struct {
		name    string
		control service.Control
		runErr  error
		want    []service.State
		wantErr error
	}{
		{name: "Stop", control: service.ControlStop,
			want: []service.State{service.Starting, service.Running, service.Running, service.Stopping, service.Stopped}},
		{name: "Shutdown", control: service.ControlShutdown,
			want: []service.State{service.Starting, service.Running, service.Running, service.Stopping, service.Stopped}},
		{name: "RunFails", runErr: errors.New("no credentials"),
			want: []service.State{service.Starting, service.Running, service.Stopped}, wantErr: errors.New("no credentials")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &scm{controls: make(chan service.Control)}
			stopped := make(chan struct{})
			run := func(ctx context.Context) error {
				if tc.runErr != nil {
					return tc.runErr
				}
				<-ctx.Done() // the daemon runs until it is asked to stop
				close(stopped)
				return nil
			}
			done := make(chan error, 1)
			go func() { done <- service.Serve(context.Background(), run, s.controls, s.report) }()
			if tc.runErr == nil {
				s.controls <- service.ControlInterrogate
				s.controls <- tc.control
				select {
				case <-stopped:
				case <-time.After(10 * time.Second):
					t.Fatal("run's context was not cancelled")
				}
			}
			select {
			case err := <-done:
				if tc.wantErr != nil {
					require.EqualError(t, err, tc.wantErr.Error())
				} else {
					require.NoError(t, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("Serve did not return")
			}
			require.Equal(t, tc.want, s.states())
		})
	}
}

func TestWindowsMappings(t *testing.T) {
	require.Equal(t, service.Stopped, service.WindowsState(1))
	require.Equal(t, service.Starting, service.WindowsState(2))
	require.Equal(t, service.Stopping, service.WindowsState(3))
	require.Equal(t, service.Running, service.WindowsState(4))
	require.Equal(t, service.Unknown, service.WindowsState(7))
	require.Equal(t, "at boot", service.WindowsStartMode(2))
	require.Equal(t, "manual", service.WindowsStartMode(3))
	require.Equal(t, "disabled", service.WindowsStartMode(4))
	for in, want := range map[string]string{
		`"C:\Program Files\runner-manager\runner-manager.exe" --config C:\rm\config.toml run`: `C:\Program Files\runner-manager\runner-manager.exe`,
		`C:\rm\runner-manager.exe run`: `C:\rm\runner-manager.exe`,
		`C:\rm\runner-manager.exe`:     `C:\rm\runner-manager.exe`,
	} {
		require.Equal(t, want, service.WindowsProgram(in))
	}
	require.Equal(t, []string{"--config", `C:\rm\config.toml`, "--data-dir", `C:\rm`, "--log-format", "json", "run"},
		service.WindowsArgs(service.Spec{ConfigPath: `C:\rm\config.toml`, DataDir: `C:\rm`}))
	require.Less(t, len(service.WindowsDataDir), 8, "the runner root stays short")
}
