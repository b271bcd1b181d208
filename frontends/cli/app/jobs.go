package app

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/runner-manager/runner-manager/status"
)

// JobsCmd lists the jobs that wait and the jobs that run.
type JobsCmd struct {
	JSON bool `help:"Print JSON (docs/json.md): the jobs, and each target's waiting jobs counted and named."`
}

// jobsJSON is the JSON form of `jobs`.
type jobsJSON struct {
	Daemon bool                 `json:"daemon"`
	Jobs   []status.Job         `json:"jobs"`
	Waits  []status.TargetWaits `json:"waits"`
}

// Run prints the daemon's jobs view; with no daemon, the jobs the
// journal knows run.
func (c *JobsCmd) Run(ctx context.Context, a *App) error {
	st, live, err := a.currentStatus(ctx)
	if err != nil {
		return err
	}
	if live {
		st = a.withFleetSets(ctx, st)
	}
	if c.JSON {
		out := jobsJSON{Daemon: live, Jobs: st.Jobs, Waits: st.Waits()}
		if out.Jobs == nil {
			out.Jobs = []status.Job{}
		}
		if out.Waits == nil {
			out.Waits = []status.TargetWaits{}
		}
		return writeJSON(a.Stdout, out)
	}
	if !live {
		a.printf("daemon: not running (start it with `runner-manager run`); the jobs its runners ran from the journal, none waiting known\n")
	}
	return renderJobs(a.Stdout, st, time.Now())
}

// renderJobs prints the jobs view for people: the running jobs, then the
// waiting ones with why each waits, then what GitHub counts and does not
// name.
func renderJobs(w io.Writer, st status.Status, now time.Time) error {
	var running, waiting []status.Job
	for _, j := range st.Jobs {
		if j.Waiting() {
			waiting = append(waiting, j)
		} else {
			running = append(running, j)
		}
	}
	waits := st.Waits()
	if len(running) == 0 && len(waiting) == 0 && len(waits) == 0 {
		_, err := fmt.Fprintln(w, "no jobs running or waiting")
		return err
	}
	if len(running) > 0 {
		fmt.Fprintf(w, "running: %d\n", len(running))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tWORKFLOW\tPOLICY\tFOR\tATTEMPT\tRUNNER")
		for _, j := range running {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", jobLabel(j), cmpOr(j.Workflow, "-"), j.PolicyName, since(now, j.StartedAt), j.Attempt, j.RunnerName)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(waiting) > 0 {
		if len(running) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "waiting: %d named\n", len(waiting))
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "JOB\tWORKFLOW\tPOLICY\tSTATE\tFOR\tWHY")
		for _, j := range waiting {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", jobLabel(j), cmpOr(j.Workflow, "-"), cmpOr(j.PolicyName, "-"), j.State, since(now, j.QueuedAt), j.WaitWhy())
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	for _, t := range waits {
		if n := t.Waiting - t.Named; n > 0 {
			fmt.Fprintf(w, "%s: %d more waiting that GitHub counts without naming them (policy %s)\n", t.Target, n, t.Policy)
		}
	}
	return nil
}

// jobLabel is a job as people know it: its name, its repository, its id.
func jobLabel(j status.Job) string {
	var b strings.Builder
	b.WriteString(cmpOr(j.Name, "job "+j.ID))
	if j.Repository != "" {
		fmt.Fprintf(&b, " (%s)", j.Repository)
	}
	return b.String()
}

// since is how long ago t was, "-" when nobody said.
func since(now, t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return now.Sub(t).Round(time.Second).String()
}
