package reconcile

import rm "github.com/runner-manager/runner-manager"

// withHookJob fills what is empty of job j, the attempt's as GitHub named
// it, from the record the runner's job-started hook left (a launcher that
// is an rm.JobHookReader: the native one with the job report on). The
// hook runs as the job's own user, so its record never overrides GitHub's
// word: it names the workflow, the job and the run only where GitHub
// named none (an embedder's demand source names no job, a lost message,
// a runner that exited before GitHub's word), and never the job's ID,
// which is GitHub's alone; GitHub's later word replaces it whole.
func (p *pass) withHookJob(it *item, j rm.Job) rm.Job {
	if j.Workflow != "" && j.Name != "" && j.RunID != 0 {
		return j
	}
	r, ok := p.l.cfg.launcherFor(it.pol).(rm.JobHookReader)
	if !ok || !it.launched() {
		return j
	}
	seen, ok := r.HookJob(it.a.ID)
	if !ok {
		return j
	}
	if j.Workflow == "" {
		j.Workflow = seen.Workflow
	}
	if j.Name == "" {
		j.Name = seen.Name
	}
	if j.RunID == 0 {
		j.RunID = seen.RunID
	}
	return j
}
