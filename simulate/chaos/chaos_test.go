package chaos_test

import (
	"context"
	"github.com/runner-manager/runner-manager/internal/tmptest"
	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/chaos"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

// chaosEnv picks the run: unset or "short" is the short form (skipped
// under -short); "full" the figures; a comma-separated list of
// scenario names (or name prefixes: "storm-5xx" is both modes) runs those
// at full size; "short:" before such a list runs them at the short size.
const chaosEnv = "RUNNER_MANAGER_CHAOS"

// outEnv names a directory for the report (chaos-report.json and .md); the
// full form writes one to a temporary directory when it is unset.
const outEnv = "RUNNER_MANAGER_CHAOS_OUT"

var daemon struct {
	once sync.Once
	dir  string
	bin  string
	err  error
}

// buildDaemon builds the program once per test process, without -race.
func buildDaemon(t *testing.T) string {
	t.Helper()
	daemon.once.Do(func() {
		daemon.dir, daemon.err = os.MkdirTemp("", "runner-manager-chaos-bin-")
		if daemon.err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			daemon.bin, daemon.err = chaos.BuildDaemon(ctx, daemon.dir)
		}
	})
	require.NoError(t, daemon.err)
	return daemon.bin
}

func TestMain(m *testing.M) {
	tmptest.Enter()
	os.Exit(tmptest.Leave(m.Run(), fakegithub.RemoveRunnerBuild, func() {
		if daemon.dir != "" {
			_ = os.RemoveAll(daemon.dir)
		}
	}))
}

func TestChaos(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the chaos run scans /proc for runner processes: Linux only")
	}
	sel := strings.TrimSpace(os.Getenv(chaosEnv))
	size, names := chaos.Short, chaos.ShortSet
	switch {
	case sel == "" || sel == "short":
		if testing.Short() {
			t.Skip("the chaos run's short form takes minutes; " + chaosEnv + "=full runs the full one")
		}
	case sel == "full":
		size, names = chaos.Full, chaos.FullSet()
	case strings.HasPrefix(sel, "short:"):
		names = strings.Split(strings.TrimPrefix(sel, "short:"), ",")
	default:
		size, names = chaos.Full, strings.Split(sel, ",")
	}
	scenarios, err := chaos.Select(chaos.Scenarios(size), names)
	require.NoError(t, err)

	out := os.Getenv(outEnv)
	if out == "" && size == chaos.Full {
		out, err = os.MkdirTemp("", "runner-manager-chaos-report-")
		require.NoError(t, err)
	}
	env := chaos.Env{Daemon: buildDaemon(t), RunnerDir: githubtest.BuildFakeRunner(t), Dir: t.TempDir()}
	rep := chaos.Report{Command: command(sel), Started: time.Now().Format(time.RFC3339), Host: hostLine()}
	var mu sync.Mutex
	t.Run("scenario", func(t *testing.T) {
		for _, sc := range scenarios {
			t.Run(sc.Name, func(t *testing.T) {
				if size == chaos.Short {
					t.Parallel() // the full form runs one at a time, for honest timings
				}
				e := env
				e.Logf = t.Logf
				r, err := chaos.Run(t.Context(), e, sc)
				require.NoError(t, err)
				mu.Lock()
				rep.Results = append(rep.Results, r)
				writeReport(t, out, rep) // as it goes: a long run that stops keeps its figures
				mu.Unlock()
				t.Logf("\n%s", chaos.Table([]chaos.Result{r}))
				for _, n := range r.Notes {
					t.Log("note: " + n)
				}
				for _, m := range r.MismatchDetail {
					t.Log("mismatch: " + m)
				}
				assert.Empty(t, r.Missed, "the goals of the chaos run (issue: nothing to babysit)")
			})
		}
	})
	var md strings.Builder
	require.NoError(t, rep.WriteMarkdown(&md))
	t.Logf("chaos run:\n%s", md.String())
	if out != "" {
		t.Logf("report written to %s", out)
	}
}

// writeReport writes rep into dir as chaos-report.json and .md (nothing
// when dir is "").
func writeReport(t *testing.T, dir string, rep chaos.Report) {
	t.Helper()
	if dir == "" {
		return
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	var js, md strings.Builder
	require.NoError(t, rep.WriteJSON(&js))
	require.NoError(t, rep.WriteMarkdown(&md))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "chaos-report.json"), []byte(js.String()), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "chaos-report.md"), []byte(md.String()), 0o644))
}

func command(sel string) string {
	if sel == "" {
		return "go test -run TestChaos -v ./simulate/chaos/"
	}
	return chaosEnv + "=" + sel + " go test -run TestChaos -v -timeout 0 ./simulate/chaos/"
}

func hostLine() string {
	return runtime.GOOS + "/" + runtime.GOARCH + ", " + strconv.Itoa(runtime.NumCPU()) + " CPUs"
}
