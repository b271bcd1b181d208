package fakerunner_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	gh "github.com/google/go-github/v88/github"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/runner-manager/runner-manager/simulate/fakegithub"
	"github.com/runner-manager/runner-manager/simulate/fakerunner"
	"github.com/runner-manager/runner-manager/simulate/githubtest"
)

const (
	token = "ghp_fakerunner_test_0123456789"
	repo  = "octo-org/app"
)

// world is a fake GitHub whose content routes send as fast as loopback.
func world(t *testing.T) *fakegithub.Server {
	t.Helper()
	return githubtest.NewTestServer(t, fakegithub.WithToken(token), fakegithub.WithRepo(repo), fakegithub.WithDownloadRate(-1))
}

// runOne runs spec's job on a runner (in this process) rooted at root,
// registered with workFolder as its .runner's work folder, and returns
// the job's record.
func runOne(t *testing.T, s *fakegithub.Server, root, workFolder string, spec fakegithub.JobSpec) fakegithub.JobRecord {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	c, err := gh.NewClient(gh.WithHTTPClient(s.Client()), gh.WithAuthToken(token), gh.WithEnterpriseURLs(s.APIURL(), s.APIURL()))
	require.NoError(t, err)
	spec.Repo, spec.Labels = repo, []string{"self-hosted", "folders"}
	id := s.EnqueueJob(spec)
	owner, name, _ := strings.Cut(repo, "/")
	req := &gh.GenerateJITConfigRequest{Name: "rm-" + filepath.Base(root), RunnerGroupID: 1, Labels: spec.Labels}
	if workFolder != "" {
		req.WorkFolder = &workFolder
	}
	jit, _, err := c.Actions.GenerateRepoJITConfig(ctx, owner, name, req)
	require.NoError(t, err)
	var out strings.Builder
	code := fakerunner.Run(ctx, fakerunner.Config{Root: root, JITConfig: jit.GetEncodedJITConfig(), Stdout: &out, BootDelay: -1})
	require.Equal(t, fakerunner.ExitSuccess, code, out.String())
	rec, ok := s.Job(id)
	require.True(t, ok)
	require.Equal(t, "completed", rec.Status, out.String())
	return rec
}

// envOf reads NAME=value lines a job's step printed.
func envOf(log, name string) string {
	for line := range strings.Lines(log) {
		if v, ok := strings.CutPrefix(strings.TrimRight(line, "\n"), name+"="); ok {
			return v
		}
	}
	return ""
}

func TestWorkFolder(t *testing.T) {
	root := filepath.FromSlash("/opt/runners/r1")
	abs := filepath.FromSlash("/srv/slots/app-1")
	if runtime.GOOS == "windows" {
		root, abs = `C:\runners\r1`, `D:\slots\app-1`
	}
	for _, tc := range []struct{ name, work, want string }{
		{"Default", "_work", filepath.Join(root, "_work")},
		{"Empty", "", filepath.Join(root, "_work")},
		{"Relative", "work/here", filepath.Join(root, "work", "here")},
		{"Parent", "../shared", filepath.Join(filepath.Dir(root), "shared")},
		{"Absolute", abs, abs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, fakerunner.WorkFolder(root, tc.work))
		})
	}
}

func TestToolCache(t *testing.T) {
	work := filepath.FromSlash("/r/_work")
	for _, tc := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"Default", nil, filepath.Join(work, "_tool")},
		{"RunnerToolCache", map[string]string{"RUNNER_TOOL_CACHE": "/tc", "AGENT_TOOLSDIRECTORY": "/agent"}, "/tc"},
		{"RunnerToolsDirectory", map[string]string{"RUNNER_TOOLSDIRECTORY": "/rtd", "AGENT_TOOLSDIRECTORY": "/agent"}, "/rtd"},
		{"AgentToolsDirectory", map[string]string{"AGENT_TOOLSDIRECTORY": "/agent"}, "/agent"},
		// C#'s ?? stops at a variable set but empty; IsNullOrEmpty then
		// takes the default.
		{"SetButEmpty", map[string]string{"RUNNER_TOOL_CACHE": "", "AGENT_TOOLSDIRECTORY": "/agent"}, filepath.Join(work, "_tool")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := fakerunner.ToolCache(work, func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
			assert.Equal(t, tc.want, got)
		})
	}
}

// folderScript prints the job's folders and checks what the runner did
// to them before the step.
const folderScript = `echo "GITHUB_WORKSPACE=$GITHUB_WORKSPACE"
echo "RUNNER_WORKSPACE=$RUNNER_WORKSPACE"
echo "RUNNER_TEMP=$RUNNER_TEMP"
echo "RUNNER_TOOL_CACHE=$RUNNER_TOOL_CACHE"
echo "HOME=$HOME"
echo "PWD=$(pwd)"
ls -A "$RUNNER_TEMP" | grep -v _runner_file_commands | sed 's/^/in temp: /'
echo planted >"$RUNNER_TEMP/left-by-job"
echo kept >"$GITHUB_WORKSPACE/left-by-job"
`

// TestJobFolders: the runner's folders per job, with the work folder
// relative to the root, absolute, or a link: _temp emptied at the job's
// start and end, _actions deleted at its start, the workspace and the
// tracking file kept, the tool cache made, every path as the work folder
// gives it, a link not resolved.
func TestJobFolders(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the step is a POSIX shell script")
	}
	for _, tc := range []struct {
		name string
		// setUp makes the work folder's setting and returns it and the
		// work folder as the job should see it.
		setUp func(t *testing.T, root string) (setting, work string)
	}{
		{"Default", func(t *testing.T, root string) (string, string) { return "", filepath.Join(root, "_work") }},
		{"Relative", func(t *testing.T, root string) (string, string) { return "w/here", filepath.Join(root, "w", "here") }},
		{"Absolute", func(t *testing.T, root string) (string, string) {
			dir := filepath.Join(t.TempDir(), "elsewhere")
			return dir, dir
		}},
		{"Symlink", func(t *testing.T, root string) (string, string) {
			slot := t.TempDir()
			require.NoError(t, os.Symlink(slot, filepath.Join(root, "_work")))
			return "_work", filepath.Join(root, "_work")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir())
			s := world(t)
			root := t.TempDir()
			setting, work := tc.setUp(t, root)
			// What an earlier job left: a file in _temp, an action.
			require.NoError(t, os.MkdirAll(filepath.Join(work, "_temp"), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(work, "_temp", "stale"), []byte("x"), 0o644))
			require.NoError(t, os.MkdirAll(filepath.Join(work, "_actions", "actions", "checkout", "v4"), 0o755))

			rec := runOne(t, s, root, setting, fakegithub.JobSpec{Name: "folders", Script: folderScript})
			require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
			ws := filepath.Join(work, "app", "app")
			assert.Equal(t, ws, envOf(rec.Log, "GITHUB_WORKSPACE"), "the workspace is <work>/<repo>/<repo>, the link kept")
			// The step starts in the workspace; its shell's pwd is the
			// physical path (getcwd: the runner sets no PWD), the link
			// resolved, as with the real runner.
			real, err := filepath.EvalSymlinks(ws)
			require.NoError(t, err)
			assert.Equal(t, real, envOf(rec.Log, "PWD"))
			assert.Equal(t, filepath.Join(work, "app"), envOf(rec.Log, "RUNNER_WORKSPACE"))
			assert.Equal(t, filepath.Join(work, "_temp"), envOf(rec.Log, "RUNNER_TEMP"))
			assert.Equal(t, filepath.Join(work, "_tool"), envOf(rec.Log, "RUNNER_TOOL_CACHE"))
			assert.Equal(t, os.Getenv("HOME"), envOf(rec.Log, "HOME"), "HOME passes through")
			assert.NotContains(t, rec.Log, "in temp: stale", "_temp is emptied before the job")
			assert.NoFileExists(t, filepath.Join(work, "_temp", "left-by-job"), "_temp is emptied after the job")
			assert.DirExists(t, filepath.Join(work, "_temp"))
			assert.NoDirExists(t, filepath.Join(work, "_actions"), "_actions is deleted at the job's start")
			assert.FileExists(t, filepath.Join(ws, "left-by-job"), "the workspace is kept")
			assert.DirExists(t, filepath.Join(work, "_tool"))
			assert.FileExists(t, filepath.Join(work, "_PipelineMapping", "octo-org", "app", "PipelineFolder.json"))
		})
	}
}

// TestToolCacheFromEnvironment: RUNNER_TOOL_CACHE in the runner's
// environment is the job's tool cache, and a CI job's toolchain goes
// there, not under the work folder.
func TestToolCacheFromEnvironment(t *testing.T) {
	tools := t.TempDir()
	t.Setenv("RUNNER_TOOL_CACHE", tools)
	t.Setenv("HOME", t.TempDir())
	s := world(t)
	root := t.TempDir()
	rec := runOne(t, s, root, "", fakegithub.JobSpec{Name: "tools", Script: folderScript, CI: smallCI("c1", 0)})
	require.Equal(t, fakegithub.ResultSucceeded, rec.Result, rec.Log)
	assert.Equal(t, tools, envOf(rec.Log, "RUNNER_TOOL_CACHE"))
	require.NotNil(t, rec.Setup)
	assert.Equal(t, filepath.Join(tools, "node", "20.11.1", "x64"), rec.Setup.Tool.Dir)
	assert.FileExists(t, filepath.Join(tools, "node", "20.11.1", "x64.complete"))
	assert.NoDirExists(t, filepath.Join(root, "_work", "_tool", "node"))
}
