package app_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/frontends/cli/app"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
)

// fixedDaemon serves a fixed status and records refreshes.
type fixedDaemon struct {
	st        status.Status
	refreshed chan struct{}
	stopped   chan rm.AttemptID
}

func (d *fixedDaemon) Status() status.Status { return d.st }
func (d *fixedDaemon) StopAttempt(_ context.Context, id rm.AttemptID) error {
	d.stopped <- id
	return nil
}
func (d *fixedDaemon) Refresh() {
	select {
	case d.refreshed <- struct{}{}:
	default:
	}
}

func serveDaemon(t *testing.T, dataDir string, d localapi.Daemon) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dataDir, 0o700))
	l, err := localapi.Listen(dataDir)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- localapi.ServeListener(ctx, l, d, nil) }()
	t.Cleanup(func() { cancel(); <-done })
}

func TestStatusFromDaemon(t *testing.T) {
	e := newEnv(t)
	pid := rm.NewPolicyID()
	bound := 3
	d := &fixedDaemon{refreshed: make(chan struct{}, 1), st: status.Status{
		At:      time.Now().UTC(),
		Host:    rm.Host{ID: rm.NewHostID(), Name: "box", CPUs: 8, OS: "linux", Arch: "amd64"},
		Memory:  status.Memory{TotalBytes: 16 << 30, AvailableBytes: 9 << 30, ReserveBytes: 2 << 30, CommittedBytes: 3 << 30, DiskFreeBytes: 100 << 30, DiskFloorBytes: 10 << 30, MaxSpares: &bound},
		Manager: &status.Manager{PID: 4242, Since: time.Now().Add(-5 * time.Minute).UTC(), Version: "v1.2.3", DataDir: "/srv/rm"},
		Policies: []status.Policy{{ID: pid, Name: "home", Mode: "scale-set", Live: 2, Idle: 1, Busy: 1, Max: 4,
			Admitted: 3, Demand: 5, ExpectedPeakBytes: 1536 << 20, LastRefusal: "memory: 1.5GiB more would pass the reserve",
			Spares: 1, SpareTarget: 1, Boot: 2300 * time.Millisecond},
			{ID: rm.NewPolicyID(), Name: "small", Mode: "scale-set", Live: 2, Busy: 2, Max: 2, Admitted: 2, Demand: 9,
				Wait: status.Wait{Queued: 7, Waiting: 7, WaitReason: "at max 2"}}},
		Attempts: []status.Attempt{{ID: rm.NewAttemptID(), Policy: pid, RunnerName: "rm-x-1", State: rm.StateBusy,
			Job: &rm.Job{ID: "j-1", Name: "build"}, CreatedAt: time.Now().Add(-time.Minute), RSSBytes: 700 << 20, PeakRSSBytes: 900 << 20, CPUMillicores: 1200}},
		Budget:   rm.Budget{Limit: 5000, Remaining: 4321, Reset: time.Now().Add(time.Hour), SeenAt: time.Now()},
		Refusals: map[string]int{"memory": 3},
	}}
	serveDaemon(t, e.dataDir, d)

	out := e.ok("status")
	for _, want := range []string{"box", "16GiB total", "admission holds 3GiB (expected peaks, not use)", "4321 of 5000", "memory 3", "home", "refused: memory", "rm-x-1", "700MiB", "1.20", "1.5GiB",
		"daemon:   running, pid 4242", "(5m0s ago), version v1.2.3, data /srv/rm",
		"1/4", "1/1", "2.3s", // home: 1 job of 4 and 1 spare of 1, booting in 2.3 s
		"2/2", "7 waiting: at max 2",
		"spares:   1 warm; the host keeps 3 at most ([admission] max_spares)"} {
		assert.Contains(t, out, want)
	}
	assert.NotContains(t, out, "not running")

	var got status.Status
	require.NoError(t, json.Unmarshal([]byte(e.ok("status", "--json")), &got))
	assert.Equal(t, d.st.Policies, got.Policies)

	t.Run("policy edits poke the daemon", func(t *testing.T) {
		e.ok("policy", "add", "p", "--repo", "o/r", "--scale-set", "s")
		select {
		case <-d.refreshed:
		case <-time.After(5 * time.Second):
			t.Fatal("the daemon was not told")
		}
	})
}

func TestStatusWithoutDaemon(t *testing.T) {
	e := newEnv(t)
	_, _, list := seed(t, e)
	out := e.ok("status")
	assert.Contains(t, out, "not running")
	assert.Contains(t, out, "home")
	assert.Contains(t, out, list[2].ID.String(), "live attempts from the journal")
	assert.NotContains(t, out, list[0].ID.String(), "ended attempts are not status")

	var got status.Status
	require.NoError(t, json.Unmarshal([]byte(e.ok("status", "--json")), &got))
	require.Len(t, got.Policies, 2)
	byName := map[string]status.Policy{}
	for _, p := range got.Policies {
		byName[p.Name] = p
	}
	assert.Equal(t, 1, byName["home"].Live)
	assert.Equal(t, 1, byName["home"].Busy)
	assert.Equal(t, 1, byName["gpu"].Idle)
	assert.NotZero(t, got.Memory.TotalBytes)
	assert.NotEmpty(t, got.Host.Name)
	require.NotNil(t, got.Memory.MaxSpares)
	assert.Equal(t, reconcile.DefaultMaxSpares, *got.Memory.MaxSpares, "the host's bound: [admission] max_spares, its default")
	assert.Contains(t, out, "the host keeps 8 at most ([admission] max_spares)")
}

func TestServiceInstall(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the service file tested here is systemd's")
	}
	e := newEnv(t)
	defer app.SetExecutable("/usr/local/bin/runner-manager")()

	t.Run("print system", func(t *testing.T) {
		out := e.runRaw("service", "install", "--print", "--run-as", "runner")
		require.Equal(t, 0, out.code, out.stderr)
		assert.Contains(t, out.stdout, "ExecStart=/usr/local/bin/runner-manager run")
		assert.Contains(t, out.stdout, "RUNNER_MANAGER_CONFIG=/etc/runner-manager/config.toml")
		assert.Contains(t, out.stdout, "RUNNER_MANAGER_DATA_DIR=/var/lib/runner-manager")
		assert.Contains(t, out.stdout, "User=runner")
	})
	t.Run("user", func(t *testing.T) {
		t.Setenv("GITHUB_TOKEN", "ghp_never_in_the_unit")
		out := e.ok("service", "install", "--user")
		unit := filepath.Join(e.home, "config", "systemd", "user", "runner-manager.service")
		assert.Contains(t, out, unit)
		assert.Contains(t, out, "systemctl --user enable --now runner-manager")
		b, err := os.ReadFile(unit)
		require.NoError(t, err)
		assert.Contains(t, string(b), "RUNNER_MANAGER_DATA_DIR="+e.dataDir)
		assert.Contains(t, string(b), "EnvironmentFile=-"+filepath.Join(e.home, "config", "runner-manager", "env"))
		assert.NotContains(t, string(b), "ghp_never_in_the_unit")

		out = e.ok("service", "uninstall", "--user")
		assert.Contains(t, out, "systemctl --user stop runner-manager\n  systemctl --user daemon-reload\n")
		_, err = os.Stat(unit)
		assert.ErrorIs(t, err, os.ErrNotExist)
		e.fails(1, "service", "uninstall", "--user")
	})
	t.Run("go run refused", func(t *testing.T) {
		defer app.SetExecutable("/tmp/go-build123/b001/exe/cli")()
		assert.Contains(t, e.fails(app.ExitInvalid, "service", "install", "--user"), "go install")
	})
}
