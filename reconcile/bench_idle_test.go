//go:build linux

package reconcile_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/native"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/github"
	"github.com/runner-manager/runner-manager/meter"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/runnerpkg"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

const (
	idleFakeEnv   = "RUNNER_MANAGER_IDLE_FAKE_GITHUB"
	idleForEnv    = "RUNNER_MANAGER_IDLE_FOR"      // the window; unset skips BenchmarkIdle
	idleCountsEnv = "RUNNER_MANAGER_IDLE_POLICIES" // how many policies, a list ("10,30,100"); 10 by default
	idleSparesEnv = "RUNNER_MANAGER_IDLE_SPARES"   // each policy's spare: "auto" (the default, as policy add) or N
	idleRepo      = "acme/app"
	idleLongPoll  = 50 * time.Second // what GitHub's message queue holds a poll
	idleTokenPart = "ghp_idle"
)

// TestIdleFakeGitHub is not a test: BenchmarkIdle runs this test binary
// again with RUNNER_MANAGER_IDLE_FAKE_GITHUB set, to serve the fake GitHub
// from another process, so that the manager's process holds only the
// manager. It prints "FAKE <web URL> <API URL> <token>", then answers each
// line "calls" on its standard input with "CALLS <REST> <REST charged>
// <scale set>" (charged: those that spend the rate limit, not 304s nor
// /rate_limit), and ends when its standard input closes.
func TestIdleFakeGitHub(t *testing.T) {
	if os.Getenv(idleFakeEnv) == "" {
		t.Skip("a helper process of BenchmarkIdle")
	}
	token := idleTokenPart + rm.NewAttemptID().String()
	srv := fakegithub.NewServer(fakegithub.WithToken(token), fakegithub.WithRepo(idleRepo),
		fakegithub.WithPollTimeout(idleLongPoll))
	defer srv.Close()
	fmt.Printf("FAKE %s %s %s\n", srv.URL(), srv.APIURL(), token)
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if in.Text() == "calls" {
			charged := 0
			for _, c := range srv.CallLog() {
				if c.Kind == fakegithub.KindREST && c.Status != 0 && c.Status != 304 &&
					c.Route != fakegithub.RouteRateLimit && c.Route != fakegithub.RouteAccessToken {
					charged++
				}
			}
			fmt.Printf("CALLS %d %d %d\n", srv.CallsREST(), charged, srv.CallsScaleSet())
		}
	}
}

// idleFake is the fake GitHub in its helper process.
type idleFake struct {
	cmd         *exec.Cmd
	in          io.WriteCloser
	out         *bufio.Scanner
	web, api    string
	token       string
	stopHelpers func()
}

func startIdleFake(b *testing.B) *idleFake {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleFakeGitHub$")
	cmd.Env = append(os.Environ(), idleFakeEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	f := &idleFake{cmd: cmd, in: in, out: bufio.NewScanner(outPipe)}
	b.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	for f.out.Scan() {
		if fields := strings.Fields(f.out.Text()); len(fields) == 4 && fields[0] == "FAKE" {
			f.web, f.api, f.token = fields[1], fields[2], fields[3]
			return f
		}
	}
	b.Fatal("the fake GitHub's helper process did not say where it listens")
	return nil
}

// calls asks the helper for its counters.
func (f *idleFake) calls(b *testing.B) (rest, charged, scaleSet int) {
	b.Helper()
	if _, err := io.WriteString(f.in, "calls\n"); err != nil {
		b.Fatal(err)
	}
	for f.out.Scan() {
		fields := strings.Fields(f.out.Text())
		if len(fields) == 4 && fields[0] == "CALLS" {
			rest, _ = strconv.Atoi(fields[1])
			charged, _ = strconv.Atoi(fields[2])
			scaleSet, _ = strconv.Atoi(fields[3])
			return rest, charged, scaleSet
		}
	}
	b.Fatal("the fake GitHub's helper process did not answer")
	return 0, 0, 0
}

// selfCPU is this process's user + system time so far.
func selfCPU() time.Duration {
	var ru unix.Rusage
	_ = unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// selfStatus reads a kB figure of /proc/self/status (VmRSS, VmHWM), in bytes.
func selfStatus(b *testing.B, field string) uint64 {
	b.Helper()
	raw, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	for line := range bytes.Lines(raw) {
		if rest, ok := bytes.CutPrefix(line, []byte(field+":")); ok {
			f := bytes.Fields(rest)
			if len(f) > 0 {
				kb, err := strconv.ParseUint(string(f[0]), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}

// BenchmarkIdle is the idle daemon: a real supervisor of 10 policies over a
// real journal, with the production timings (passes every minute while
// idle, meters sampling every 2 s, policies re-read every 5 s), its GitHub
// side against the fake GitHub served by another process with a 50 s long
// poll. Nothing is queued; each policy keeps its default warm spares
// (RUNNER_MANAGER_IDLE_SPARES: auto, or N), fake runners listening and
// recycled as a user's would be. After the loops settle, it measures one window
// of real time (RUNNER_MANAGER_IDLE_FOR; unset, it skips) and reports this
// process's CPU (getrusage, % of one core), its resident memory at the end
// (VmRSS) and peak (VmHWM), and the GitHub requests made in the window
// (REST: all, and those charged to the rate limit; scale-set service), and
// the loops' passes (how many a minute, how long each), the spares live
// at the end and the runners launched in the window.
// Budget: ≤ 30 MB RSS, ≤ 0.5 % of one core; 0 REST calls per hour in
// scale-set mode. Run it alone:
//
//	RUNNER_MANAGER_IDLE_FOR=60s go test -run '^$' -bench Idle ./reconcile/
func BenchmarkIdle(b *testing.B) {
	v := os.Getenv(idleForEnv)
	if v == "" {
		b.Skipf("a minute of real time per mode: set %s=60s to run it", idleForEnv)
	}
	window, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s=%q: %v", idleForEnv, v, err)
	}
	counts := []int{10}
	if v := os.Getenv(idleCountsEnv); v != "" {
		counts = counts[:0]
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want a list of counts above 0", idleCountsEnv, v)
			}
			counts = append(counts, n)
		}
	}
	spare := rm.DefaultSpare
	if v := os.Getenv(idleSparesEnv); v != "" && v != "auto" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			b.Fatalf("%s=%q: want auto or a count of 0 or more", idleSparesEnv, v)
		}
		spare = n
	}
	for _, mode := range []rm.Mode{rm.ModeScaleSet, rm.ModeClassic} {
		for _, n := range counts {
			name := mode.String()
			if len(counts) > 1 || n != 10 {
				name += fmt.Sprintf("/policies=%d", n)
			}
			b.Run(name, func(b *testing.B) {
				// One window whatever b.N: the figures are rates over it.
				idleOnce(b, mode, n, spare, window)
			})
		}
	}
}

func idleOnce(b *testing.B, mode rm.Mode, idlePolicies, spare int, window time.Duration) {
	fake := startIdleFake(b)
	runnerDir := b.TempDir()
	if spare != 0 && mode == rm.ModeScaleSet {
		runnerDir = githubtest.BuildFakeRunner(b) // the spares' runner
	}
	client, err := github.New(github.Config{WebURL: fake.web, APIURL: fake.api, Token: fake.token, UserAgent: "runner-manager-idle-bench"})
	if err != nil {
		b.Fatal(err)
	}
	dataDir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dataDir, "state"), 0o700); err != nil {
		b.Fatal(err)
	}
	st := sqlitetest.MustOpen(b)
	ctx := context.Background()
	host, err := platform.HostInfo()
	if err != nil {
		b.Fatal(err)
	}
	host.ID = rm.NewHostID()
	if err := st.PutHost(ctx, host); err != nil {
		b.Fatal(err)
	}
	for i := range idlePolicies {
		pb := storetest.NewPolicy().Name(fmt.Sprintf("idle-%02d", i)).Repository(idleRepo).Host(host.ID).Max(8).RunnerDir(runnerDir).Spare(spare)
		if mode == rm.ModeScaleSet {
			pb = pb.Autoscale(fmt.Sprintf("idle-%02d", i), 8)
		} else {
			pb = pb.Labels("self-hosted", fmt.Sprintf("idle-%02d", i))
		}
		if err := st.InsertPolicy(ctx, pb.Build()); err != nil {
			b.Fatal(err)
		}
	}
	prefix := rm.RunnerNamePrefix(host.ID)
	var passes, passTime atomic.Int64
	machine := platform.NewMachine()
	sup, err := reconcile.NewSupervisor(reconcile.SupervisorConfig{
		Store:    st,
		Host:     host,
		Launcher: native.NewLauncher(dataDir),
		Meters:   meter.New(filepath.Join(dataDir, "state", "memory-peaks.toml")),
		Targets: func(ctx context.Context, p rm.Policy) (reconcile.Target, error) {
			if p.Target.Mode() == rm.ModeScaleSet {
				return targetOf(github.NewScaleSetTarget(ctx, client, p.Target, github.ScaleSetOptions{
					Owner: host.Name, DisableUpdate: true, NamePrefix: prefix}))
			}
			return targetOf(github.NewClassicTarget(client, p.Target, github.ClassicOptions{NamePrefix: prefix}))
		},
		Admission: &reconcile.Admission{Memory: machine, Reserve: 1 << 30,
			DiskFree: machine.DiskFree, DiskPath: dataDir, DiskFloor: 1 << 30},
		AttemptsDir: datadir.New(dataDir).Attempts(),
		Machine:     machine,
		Installs:    runnerpkg.Installs{DataDir: dataDir},
		Budget:      client.Budget,
		OnPass: func(_ string, took time.Duration, _ error) {
			passes.Add(1)
			passTime.Add(int64(took))
		},
	})
	if err != nil {
		b.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- sup.Run(runCtx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Error(err)
		}
	}()

	// Settle: every loop started and its first passes done.
	deadline := time.Now().Add(30*time.Second + time.Duration(idlePolicies)*time.Second)
	for {
		st := sup.Status()
		ready := 0
		for _, ps := range st.Policies {
			if ps.Admitted > 0 && ps.LastError == "" {
				ready++
			}
		}
		if ready == idlePolicies {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the loops did not settle: %+v", st.Policies)
		}
		time.Sleep(100 * time.Millisecond) // real loops against a real server
	}
	time.Sleep(3 * time.Second)

	b.ResetTimer()
	launched0 := idleAttempts(b, st)
	rest0, charged0, ss0 := fake.calls(b)
	passes0, passTime0 := passes.Load(), passTime.Load()
	cpu0, t0 := selfCPU(), time.Now()
	time.Sleep(window)
	cpu, elapsed := selfCPU()-cpu0, time.Since(t0)
	n, took := passes.Load()-passes0, time.Duration(passTime.Load()-passTime0)
	rest, charged, ss := fake.calls(b)
	launched := idleAttempts(b, st) - launched0
	spares := 0
	for _, ps := range sup.Status().Policies {
		spares += ps.Spares
	}
	b.StopTimer()
	rss, hwm := selfStatus(b, "VmRSS"), selfStatus(b, "VmHWM")
	b.ReportMetric(100*cpu.Seconds()/elapsed.Seconds(), "%core")
	b.ReportMetric(float64(cpu.Milliseconds())/elapsed.Minutes(), "cpu-ms/min")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
	b.ReportMetric(float64(hwm)/(1<<20), "hwm-MiB")
	b.ReportMetric(float64(rest-rest0)/elapsed.Hours(), "rest-calls/h")
	b.ReportMetric(float64(charged-charged0)/elapsed.Hours(), "rest-charged/h")
	b.ReportMetric(float64(ss-ss0)/elapsed.Minutes(), "scaleset-calls/min")
	b.ReportMetric(float64(n)/elapsed.Minutes(), "passes/min")
	b.ReportMetric(float64(spares), "spares")
	b.ReportMetric(float64(launched)/elapsed.Hours(), "launches/h")
	if n > 0 {
		b.ReportMetric(float64(took.Microseconds())/float64(n), "µs/pass")
	}
}

// idleAttempts is how many attempts the journal holds: the runners the
// window launched are the difference.
func idleAttempts(b *testing.B, st store.Store) int {
	b.Helper()
	as, err := st.Attempts(context.Background(), store.AttemptFilter{})
	if err != nil {
		b.Fatal(err)
	}
	return len(as)
}
