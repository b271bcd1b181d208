package fakegithub

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	rm "github.com/runner-manager/runner-manager"
)

// conclusion is the REST word for a result.
func conclusion(result string) string {
	switch result {
	case ResultSucceeded:
		return "success"
	case ResultFailed:
		return "failure"
	case ResultCanceled:
		return "cancelled"
	}
	return result
}

func (s *Server) runJSON(j *job) map[string]any {
	r := s.repos[strings.ToLower(j.rec.Repo)]
	base := s.APIURL() + "repos/" + j.rec.Repo + "/actions/runs/" + strconv.FormatInt(j.rec.RunID, 10)
	out := map[string]any{
		"id": j.rec.RunID, "name": j.spec.Workflow, "display_title": j.spec.Name, "run_number": j.rec.RunID,
		"run_attempt": 1, "event": j.spec.event(), "status": j.rec.Status, "conclusion": nil,
		"head_branch": "main", "head_sha": fmt.Sprintf("%040x", j.rec.RunID), "path": ".github/workflows/ci.yml",
		"created_at": j.rec.QueuedAt.UTC(), "updated_at": j.rec.QueuedAt.UTC(), "run_started_at": j.rec.QueuedAt.UTC(),
		"url": base, "jobs_url": base + "/jobs", "html_url": s.URL() + "/" + j.rec.Repo + "/actions/runs/" + strconv.FormatInt(j.rec.RunID, 10),
		"repository": s.repoJSON(r), "head_repository": s.repoJSON(r),
	}
	if head := j.spec.HeadRepo; head != "" && !strings.EqualFold(head, j.rec.Repo) {
		owner, name, _ := strings.Cut(head, "/")
		out["head_repository"] = map[string]any{"name": name, "full_name": head, "fork": true,
			"owner": map[string]any{"login": owner, "type": "User"}}
	}
	if j.rec.Status == statusCompleted {
		out["conclusion"] = conclusion(j.rec.Result)
		out["updated_at"] = j.rec.CompletedAt.UTC()
	}
	return out
}

func (s *Server) jobJSON(j *job) map[string]any {
	var runnerID, groupID, startedAt, completedAt, concl, runnerName, groupName any
	// GitHub names the runner once the job is in progress; null while
	// queued, even when handed to a runner that has not started it.
	if j.rec.RunnerID != 0 && j.rec.Status != statusQueued {
		runnerID, runnerName, groupID = j.rec.RunnerID, j.rec.RunnerName, j.rec.RunnerGroupID
		groupName = rm.DefaultRunnerGroup
		if r := s.runners[j.rec.RunnerID]; r != nil {
			if g := s.groupByID(r.scope, r.groupID); g != nil {
				groupName = g.name
			}
		}
	}
	// started_at is never null in GitHub's job schema (REST description,
	// actions/get-job-for-workflow-run; runner_* and completed_at are the
	// nullable ones): a job not started yet tells when it was queued.
	startedAt = j.rec.QueuedAt.UTC()
	if !j.rec.StartedAt.IsZero() {
		startedAt = j.rec.StartedAt.UTC()
	}
	if j.rec.Status == statusCompleted {
		completedAt, concl = j.rec.CompletedAt.UTC(), conclusion(j.rec.Result)
	}
	api := s.APIURL() + "repos/" + j.rec.Repo
	return map[string]any{
		"id": j.rec.ID, "run_id": j.rec.RunID, "run_url": api + "/actions/runs/" + strconv.FormatInt(j.rec.RunID, 10),
		"url": api + "/actions/jobs/" + strconv.FormatInt(j.rec.ID, 10), "head_branch": "main",
		"head_sha": fmt.Sprintf("%040x", j.rec.RunID), "status": j.rec.Status, "conclusion": concl,
		"created_at": j.rec.QueuedAt.UTC(), "started_at": startedAt, "completed_at": completedAt,
		"name": j.spec.Name, "steps": []any{}, "labels": j.rec.Labels, "run_attempt": 1,
		"runner_id": runnerID, "runner_name": runnerName, "runner_group_id": groupID, "runner_group_name": groupName,
		"workflow_name": j.spec.Workflow,
	}
}

func (s *Server) jobsIn(sc rm.Scope) []*job {
	var out []*job
	for _, j := range s.jobs {
		if strings.EqualFold(j.rec.Repo, sc.Name) {
			out = append(out, j)
		}
	}
	return out
}

func (s *Server) listRuns(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	all := s.jobsIn(sc)
	slices.Reverse(all) // newest first, as GitHub lists them
	if st := c.r.URL.Query().Get("status"); st != "" {
		all = slices.DeleteFunc(all, func(j *job) bool {
			return j.rec.Status != st && conclusion(j.rec.Result) != st
		})
	}
	lo, hi, link := paginate(c, len(all))
	page := make([]map[string]any, 0, hi-lo)
	for _, j := range all[lo:hi] {
		page = append(page, s.runJSON(j))
	}
	return etagReply(c, http.StatusOK, map[string]any{"total_count": len(all), "workflow_runs": page}, link)
}

func (s *Server) runOf(c *call) (*job, reply) {
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return nil, rep
	}
	id, _ := strconv.ParseInt(c.r.PathValue("run_id"), 10, 64)
	for _, j := range s.jobsIn(sc) {
		if j.rec.RunID == id {
			return j, reply{}
		}
	}
	return nil, ghError(http.StatusNotFound, "Not Found")
}

func (s *Server) getRun(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, rep := s.runOf(c)
	if j == nil {
		return rep
	}
	return etagReply(c, http.StatusOK, s.runJSON(j), nil)
}

func (s *Server) listRunJobs(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	j, rep := s.runOf(c)
	if j == nil {
		return rep
	}
	lo, hi, link := paginate(c, 1)
	page := []map[string]any{}
	if lo < hi {
		page = append(page, s.jobJSON(j))
	}
	return etagReply(c, http.StatusOK, map[string]any{"total_count": 1, "jobs": page}, link)
}

func (s *Server) getJob(c *call) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	sc, rep, ok := s.pathScope(c)
	if !ok {
		return rep
	}
	id, _ := strconv.ParseInt(c.r.PathValue("job_id"), 10, 64)
	j := s.jobByID[id]
	if j == nil || !strings.EqualFold(j.rec.Repo, sc.Name) {
		return ghError(http.StatusNotFound, "Not Found")
	}
	return etagReply(c, http.StatusOK, s.jobJSON(j), nil)
}
