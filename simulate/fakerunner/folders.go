package fakerunner

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The runner's folders, as actions/runner lays them out and treats them
// per job (docs/warm.md, "What the runner does with its folders", has
// the sources at length). Paths are built lexically and never resolved:
// a work folder that is a symbolic link is used through the link, as the
// runner's Path.Combine and Path.GetFullPath use it (HostContext.cs:427-435
// resolves no link; nor does any other code of the runner's on the work
// folder).
const (
	// defaultWorkFolder is the work folder `config.sh` writes into
	// .runner unless told (Constants.cs:295, CommandSettings.cs:324-331)
	// and GitHub's generate-jitconfig takes by default (work_folder).
	defaultWorkFolder = "_work"
	tempDir           = "_temp"    // Constants.cs:292
	actionsDir        = "_actions" // Constants.cs:285
	toolDir           = "_tool"    // Constants.cs:293
	// pipelineMappingDir holds a tracking file per repository
	// (Constants.cs:257-258, PipelineDirectoryManager.cs:39-43).
	pipelineMappingDir = "_PipelineMapping"
	trackingFile       = "PipelineFolder.json"
)

// toolCacheVars are the variables the runner takes its tool cache from,
// in order: the first one set wins, and a value set but empty means the
// default, _work/_tool (HostContext.cs:409-419: a C# `??` chain, then
// IsNullOrEmpty).
var toolCacheVars = []string{"RUNNER_TOOL_CACHE", "RUNNER_TOOLSDIRECTORY", "AGENT_TOOLSDIRECTORY"}

// WorkFolder is the work folder of a runner rooted at root whose .runner
// says workFolder: workFolder itself when absolute, else under root
// (HostContext.cs:427-435: Path.GetFullPath(Path.Combine(root,
// workFolder)), lexical, no link resolved). An empty one is _work.
func WorkFolder(root, workFolder string) string {
	if workFolder == "" {
		workFolder = defaultWorkFolder
	}
	if filepath.IsAbs(workFolder) {
		return filepath.Clean(workFolder)
	}
	return filepath.Join(root, workFolder)
}

// ToolCache is the runner's tool cache for work folder work, from the
// runner's environment as lookup reads it (HostContext.cs:409-419).
func ToolCache(work string, lookup func(string) (string, bool)) string {
	for _, name := range toolCacheVars {
		if v, ok := lookup(name); ok {
			if v == "" {
				break
			}
			return v
		}
	}
	return filepath.Join(work, toolDir)
}

// jobFolders are one job's folders.
type jobFolders struct {
	work, temp, tools, pipeline, workspace string
}

// prepareFolders does what the runner does to its folders as a job
// starts, in its order, and returns them:
//   - it creates the work folder and checks that it and every folder up
//     its path (the path as given: through a link, the link's parents)
//     can be listed (JobRunner.cs:146-157, IOUtil.cs:431-460), and
//     creates the tool cache (JobRunner.cs:174-176); it keeps both;
//   - it empties _temp, keeping the folder (TempDirectoryManager.cs:27-46);
//   - it creates the repository's pipeline folder _work/<repo> and its
//     workspace _work/<repo>/<repo> if missing, keeping what they hold
//     (PipelineDirectoryManager.cs:104-117; TrackingConfig.cs:59-62 names
//     them), and records them in _PipelineMapping/<owner>/<repo>/
//     PipelineFolder.json, kept across jobs (PipelineDirectoryManager.cs:
//     38-62);
//   - it deletes _actions, where the job's actions are downloaded
//     (ActionManager.cs:90-94: at the start of every job).
//
// A workflow's `workspace.clean` would delete the pipeline folder too
// (PipelineDirectoryManager.cs:65-103); the fake's jobs set none.
func (l *listener) prepareFolders(repo string) (jobFolders, error) {
	work := WorkFolder(l.cfg.Root, l.runner.WorkFolder)
	if err := os.MkdirAll(work, 0o755); err != nil {
		return jobFolders{}, err
	}
	if err := listableUp(work); err != nil {
		return jobFolders{}, err
	}
	f := jobFolders{work: work, temp: filepath.Join(work, tempDir), tools: ToolCache(work, os.LookupEnv)}
	if err := os.MkdirAll(f.tools, 0o755); err != nil {
		return jobFolders{}, err
	}
	emptyDir(f.temp)
	if err := os.MkdirAll(f.temp, 0o755); err != nil {
		return jobFolders{}, err
	}
	t := writeTracking(filepath.Join(work, pipelineMappingDir, filepath.FromSlash(repo), trackingFile), repo)
	f.pipeline = filepath.Join(work, t.PipelineDirectory)
	f.workspace = filepath.Join(work, t.WorkspaceDirectory)
	if err := os.MkdirAll(f.workspace, 0o755); err != nil {
		return jobFolders{}, err
	}
	_ = os.RemoveAll(filepath.Join(work, actionsDir))
	return f, nil
}

// listableUp fails unless dir and every folder above it can be listed,
// as the runner's ValidateExecutePermission requires (IOUtil.cs:431-460).
func listableUp(dir string) error {
	for d := dir; ; {
		f, err := os.Open(d)
		if err == nil {
			_, err = f.Readdirnames(1)
			f.Close()
			if err == io.EOF {
				err = nil
			}
		}
		if err != nil {
			return fmt.Errorf("Permission to read the directory contents is required for '%s' and each directory up the hierarchy. %v", dir, err)
		}
		up := filepath.Dir(d)
		if up == d {
			return nil
		}
		d = up
	}
}

// cleanup does what the runner does as a job ends: it empties
// _temp (JobRunner.cs:303 and :392, TempDirectoryManager.cs:48-60).
func (f jobFolders) cleanup() { emptyDir(f.temp) }

// emptyDir deletes what dir holds, not dir, going on past what it cannot
// delete (IOUtil.DeleteDirectory with contentsOnly and
// continueOnContentDeleteError). A link in it is deleted, not followed
// (IOUtil.cs:132-137, :179-183).
func emptyDir(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		_ = os.RemoveAll(filepath.Join(dir, e.Name()))
	}
}

// tracking is the runner's tracking file (TrackingConfig.cs), the fields
// it writes.
type tracking struct {
	RepositoryName     string                 `json:"RepositoryName"`
	PipelineDirectory  string                 `json:"PipelineDirectory"`
	WorkspaceDirectory string                 `json:"WorkspaceDirectory"`
	Repositories       map[string]trackedRepo `json:"Repositories"`
	LastRunOn          string                 `json:"LastRunOn"`
}

type trackedRepo struct {
	RepositoryPath string `json:"RepositoryPath"`
	LastRunOn      string `json:"LastRunOn"`
}

// writeTracking creates the repository's tracking file, or updates the
// LastRunOn of the one there, whose folders the job then uses
// (PipelineDirectoryManager.cs:45-62).
func writeTracking(path, repo string) tracking {
	now := time.Now().Format(time.RFC3339)
	var t tracking
	if b, err := os.ReadFile(path); err != nil || json.Unmarshal(b, &t) != nil || t.PipelineDirectory == "" || t.WorkspaceDirectory == "" {
		name := repo[strings.LastIndexByte(repo, '/')+1:] // TrackingConfig.cs:57-62
		ws := filepath.Join(name, name)
		t = tracking{RepositoryName: repo, PipelineDirectory: name, WorkspaceDirectory: ws,
			Repositories: map[string]trackedRepo{repo: {RepositoryPath: ws, LastRunOn: now}}}
	}
	t.LastRunOn = now
	b, _ := json.MarshalIndent(t, "", "  ")
	if os.MkdirAll(filepath.Dir(path), 0o755) == nil {
		_ = os.WriteFile(path, b, 0o644)
	}
	return t
}
