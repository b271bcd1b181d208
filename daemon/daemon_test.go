package daemon_test

import (
	"context"
	"errors"
	"github.com/runner-manager/runner-manager/internal/tmptest"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/vm/vmtest"
	"github.com/runner-manager/runner-manager/daemon"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/runner-manager/runner-manager/store"
)

// TestMain lets this test binary be the fake runner: each test lays it out
// as an installed runner's bin/Runner.Listener.
func TestMain(m *testing.M) {
	if filepath.Base(os.Args[0]) == fakegithub.ListenerName() {
		os.Exit(fakerunner.Main(os.Args[1:]))
	}
	tmptest.Enter()
	os.Exit(tmptest.Leave(stopEngines(m.Run()), vmtest.RemoveImages, fakegithub.RemoveRunnerBuild))
}

const (
	repo  = "octo/app"
	token = "ghp_daemon_test_0123456789"
)

// world is a fake GitHub that knows repo and an installed fake runner.
type world struct {
	gh        *fakegithub.Server
	runnerDir string
	dataDir   string
}

func newWorld(t *testing.T, opts ...fakegithub.Option) world {
	t.Helper()
	gh := githubtest.NewTestServer(t, append([]fakegithub.Option{fakegithub.WithToken(token), fakegithub.WithRepo(repo)}, opts...)...)
	exe, err := os.Executable()
	require.NoError(t, err)
	dir := t.TempDir()
	runnerDir := filepath.Join(dir, "runner")
	require.NoError(t, fakegithub.LayoutRunnerDir(runnerDir, exe))
	return world{gh: gh, runnerDir: runnerDir, dataDir: filepath.Join(dir, "data")}
}

func (w world) github() github.Config {
	return github.Config{WebURL: w.gh.URL(), APIURL: w.gh.APIURL(), Token: token}
}

// addPolicy writes a policy of d's host: a scale set named name, or with
// classic a label set.
func (w world) addPolicy(t *testing.T, d *daemon.Daemon, name string, classic bool) rm.Policy {
	t.Helper()
	scope, err := rm.Repository(repo)
	require.NoError(t, err)
	target, err := rm.NewScaleSetTarget(scope, "", name)
	if classic {
		target, err = rm.NewLabelTarget(scope, "", []string{name})
	}
	require.NoError(t, err)
	p := rm.Policy{ID: rm.NewPolicyID(), Name: name, Host: d.Host().ID, Target: target, Max: 2,
		RunnerDir: w.runnerDir, MemoryEstimate: 64 << 20}
	require.NoError(t, d.Store().InsertPolicy(t.Context(), p))
	return p
}

// enqueue queues n jobs for label and returns once they all completed.
func (w world) serve(t *testing.T, n int, label string, classic bool) {
	t.Helper()
	labels := []string{label}
	if classic {
		labels = []string{"self-hosted", label}
	}
	for i := range n {
		w.gh.EnqueueJob(fakegithub.JobSpec{Repo: repo, Labels: labels, Name: label + "-" + string(rune('a'+i)),
			Duration: 100 * time.Millisecond, MemoryBytes: 8 << 20})
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	require.NoError(t, w.gh.WaitJobsCompleted(ctx))
}

// start runs d until the test ends or stop is called; stop returns Run's
// error.
func start(t *testing.T, d *daemon.Daemon) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	var err error
	stopped := false
	stop = func() error {
		if !stopped {
			stopped = true
			cancel()
			select {
			case err = <-done:
			case <-time.After(60 * time.Second):
				t.Fatal("Run did not return after its context ended")
			}
		}
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// ended counts the policy's attempts concluded with a completed job.
func ended(t *testing.T, st store.Store, p rm.Policy) int {
	as, err := st.Attempts(t.Context(), store.AttemptFilter{Policy: p.ID})
	require.NoError(t, err)
	n := 0
	for _, a := range as {
		if a.Outcome.Kind == rm.CompletedJob {
			n++
		}
	}
	return n
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// The whole host from a config of defaults: jobs served one runner each,
// its figures on the local API and the metrics (served and registered),
// and a clean stop: the socket, the metrics port and the lock released,
// and the daemon can run again.
func TestRunServesJobs(t *testing.T) {
	w := newWorld(t)
	reg := prometheus.NewRegistry()
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), MetricsAddr: "127.0.0.1:0",
		MetricsRegistry: reg, SampleEvery: 100 * time.Millisecond, Logger: testLogger(t)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "home", false)

	stop := start(t, d)
	client := localapi.NewClient(w.dataDir)
	require.Eventually(t, func() bool { _, err := client.Status(t.Context()); return err == nil },
		20*time.Second, 20*time.Millisecond, "the daemon answers on its socket")
	w.serve(t, 3, "home", false)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 3 }, 20*time.Second, 50*time.Millisecond)
	runners := map[string]bool{}
	for _, j := range w.gh.Jobs() {
		assert.Equal(t, 1, j.Starts)
		runners[j.RunnerName] = true
	}
	assert.Len(t, runners, 3, "one ephemeral runner per job")

	st, err := client.Status(t.Context())
	require.NoError(t, err)
	require.Len(t, st.Policies, 1)
	assert.Equal(t, "home", st.Policies[0].Name)
	assert.Equal(t, d.Host().ID, st.Host.ID)

	addrs := d.Addrs()
	require.NotEmpty(t, addrs.Metrics)
	want := `runner_manager_attempts_ended_total{outcome="completed_job",policy="home",reason=""} 3`
	require.Eventually(t, func() bool {
		body, err := get(addrs.Metrics)
		return err == nil && strings.Contains(body, want) && strings.Contains(body, `runner_manager_github_requests_total{api="actions",code="200"}`)
	}, 10*time.Second, 50*time.Millisecond)
	mfs, err := reg.Gather()
	require.NoError(t, err)
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	assert.Contains(t, names, "runner_manager_attempts_ended_total", "the embedder's registry has the collector")

	require.NoError(t, stop())
	_, err = os.Stat(localapi.SocketPath(w.dataDir))
	assert.ErrorIs(t, err, os.ErrNotExist, "the socket is removed")
	_, err = net.DialTimeout("tcp", strings.TrimSuffix(strings.TrimPrefix(addrs.Metrics, "http://"), "/metrics"), time.Second)
	assert.Error(t, err, "the metrics port is closed")
	lock, err := datadir.New(w.dataDir).Lock()
	require.NoError(t, err, "the data directory's lock is released")
	require.NoError(t, lock.Close())

	// It runs again, and serves again.
	stop = start(t, d)
	w.serve(t, 1, "home", false)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 4 }, 20*time.Second, 50*time.Millisecond)
	require.NoError(t, stop())
}

// Classic mode fed by webhooks: with a demand poll far longer than the
// test, only a delivery can have told the target of the job.
func TestRunClassicWebhooks(t *testing.T) {
	w := newWorld(t)
	const secret = "It's a Secret to Everybody"
	d, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github(), ClassicPoll: 10 * time.Minute,
		Webhook: daemon.Webhook{Listen: "127.0.0.1:0", Secret: []byte(secret)}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, d.Close()) })
	p := w.addPolicy(t, d, "hooked", true)
	stop := start(t, d)
	require.Eventually(t, func() bool { return d.Addrs().Webhook != "" }, 20*time.Second, 20*time.Millisecond)
	// The first poll at start saw no job; only then is the job queued.
	require.Eventually(t, func() bool { return w.gh.CallsREST() > 0 && len(d.Status().Policies) == 1 },
		20*time.Second, 20*time.Millisecond)
	if m := d.Status().Manager; assert.NotNil(t, m, "a running daemon names itself") {
		assert.Equal(t, os.Getpid(), m.PID)
		assert.Equal(t, w.dataDir, m.DataDir)
		assert.False(t, m.Since.IsZero())
		assert.NotEmpty(t, m.Version)
	}
	w.gh.DeliverWebhooks("http://"+d.Addrs().Webhook+"/", secret)
	w.serve(t, 2, "hooked", true)
	require.Eventually(t, func() bool { return ended(t, d.Store(), p) == 2 }, 20*time.Second, 50*time.Millisecond)
	assert.NotEmpty(t, w.gh.Deliveries(), "webhooks were delivered")
	require.NoError(t, stop())
	assert.Nil(t, d.Status().Manager, "a stopped daemon answers for no process")
	_, err = net.DialTimeout("tcp", d.Addrs().Webhook, time.Second)
	assert.Error(t, err, "the webhook port is closed")
}

// One daemon per data directory: a second one's Run and RunOnce are
// refused while the first runs, and RunOnce works once it stopped.
func TestRunOneDaemonPerDataDir(t *testing.T) {
	w := newWorld(t)
	first, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, first.Close()) })
	w.addPolicy(t, first, "home", false)
	stop := start(t, first)
	require.Eventually(t, func() bool { return first.Addrs().Socket != "" }, 20*time.Second, 20*time.Millisecond)

	second, err := daemon.New(daemon.Config{DataDir: w.dataDir, GitHub: w.github()})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, second.Close()) })
	assert.Equal(t, first.Host().ID, second.Host().ID, "the host id is kept in the data directory")
	assert.ErrorIs(t, second.Run(t.Context()), datadir.ErrLocked)
	assert.ErrorIs(t, second.RunOnce(t.Context()), datadir.ErrLocked)

	require.NoError(t, stop())
	require.NoError(t, second.RunOnce(t.Context()), "the first daemon released the data directory")
	require.NoError(t, second.RunOnce(t.Context()), "one pass releases it too")
	assert.NotEmpty(t, w.gh.ScaleSets(), "the passes reached GitHub")
}

func TestNewRefusesBadConfig(t *testing.T) {
	w := newWorld(t)
	for name, cfg := range map[string]daemon.Config{
		"NoDataDir":           {GitHub: w.github()},
		"WebhookNoSecret":     {DataDir: w.dataDir, GitHub: w.github(), Webhook: daemon.Webhook{Listen: "127.0.0.1:0"}},
		"NilLauncher":         {DataDir: w.dataDir, GitHub: w.github(), Launchers: map[rm.Backend]rm.Launcher{"native": nil}},
		"NoGitHubCredentials": {DataDir: w.dataDir},
	} {
		t.Run(name, func(t *testing.T) {
			d, err := daemon.New(cfg)
			require.Error(t, err)
			assert.Nil(t, d)
			assert.True(t, errors.Is(err, rm.ErrInvalid), "%v", err)
		})
	}
}

func testLogger(t *testing.T) *slog.Logger {
	if os.Getenv("DAEMON_TEST_LOG") == "" {
		return nil
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
}
