package jobreport

import (
	"bufio"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode"

	rm "github.com/runner-manager/runner-manager"
)

// maxJobFile is the most of the started hook's record that is read: the
// file is the job's user's to write, and holds a few short lines.
const maxJobFile = 4 << 10

// maxValue caps one value of the record.
const maxValue = 256

// Seen is the job as the runner saw it, from the started hook's record.
// The job's own user wrote it: never trust it over GitHub's word.
type Seen struct {
	// Repository is GITHUB_REPOSITORY ("owner/repo").
	Repository string
	// Workflow is GITHUB_WORKFLOW (the workflow's name, or its path when
	// it has none); WorkflowRef is GITHUB_WORKFLOW_REF
	// ("owner/repo/.github/workflows/ci.yml@refs/heads/main").
	Workflow, WorkflowRef string
	// Job is GITHUB_JOB: the job's id in its workflow (its key under
	// jobs:), the only name of the job the runner gives a hook: a step's
	// and a hook's GITHUB_* variables are the github context's keys of an
	// allow-list that has "job" and no display name (actions/runner
	// src/Runner.Worker/GitHubContext.cs:9-48, :52-67).
	Job string
	// RunID is GITHUB_RUN_ID (0 when not a number).
	RunID int64
	// StartedAt is when the started hook ran.
	StartedAt time.Time
}

// AsJob is the journal's job from what the hook saw: the workflow ref
// when the runner gave one (it names the repository too, as the ref of a
// scale-set message does), else the workflow's name; the job's id as its
// name; the run id. ID and Number stay empty: only GitHub gives them.
func (s Seen) AsJob() rm.Job {
	wf := s.WorkflowRef
	if wf == "" {
		wf = s.Workflow
	}
	return rm.Job{Workflow: wf, Name: s.Job, RunID: s.RunID}
}

// ReadJob reads the started hook's record in root; false when there is
// none (the hooks are off, another backend, no job ran) or it cannot be
// read. A symlink is refused, at most 4 KiB is read, the first value of a
// key counts, and values keep printable characters only, 256 at most.
func ReadJob(root string) (Seen, bool) {
	f, err := os.OpenFile(filepath.Join(root, HookDir, JobFile), openJobFlags, 0)
	if err != nil {
		return Seen{}, false
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return Seen{}, false
	}
	vals := map[string]string{}
	sc := bufio.NewScanner(io.LimitReader(f, maxJobFile))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if !ok {
			continue
		}
		if _, dup := vals[k]; !dup {
			vals[k] = printable(v)
		}
	}
	if err := sc.Err(); err != nil && !errors.Is(err, bufio.ErrTooLong) {
		return Seen{}, false
	}
	s := Seen{
		Repository:  vals["repository"],
		Workflow:    vals["workflow"],
		WorkflowRef: vals["workflow_ref"],
		Job:         vals["job"],
	}
	s.RunID, _ = strconv.ParseInt(vals["run_id"], 10, 64)
	if sec, err := strconv.ParseInt(vals["started_at"], 10, 64); err == nil && sec > 0 {
		s.StartedAt = time.Unix(sec, 0)
	}
	return s, s != Seen{}
}

// printable keeps v's printable characters, at most maxValue of them.
func printable(v string) string {
	v = strings.Map(func(r rune) rune {
		if unicode.IsPrint(r) {
			return r
		}
		return -1
	}, v)
	if r := []rune(v); len(r) > maxValue {
		v = string(r[:maxValue])
	}
	return strings.TrimSpace(v)
}
