package app

import (
	"context"
	"fmt"
	"text/tabwriter"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/attempts"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/store"
)

// WeightsCmd lists the heaviest jobs the store's hosts ran.
type WeightsCmd struct {
	Policy string `help:"Only this policy's jobs." placeholder:"NAME" predictor:"policy"`
	Repo   string `help:"Only this repository's jobs (owner/repo)." placeholder:"OWNER/REPO"`
	Limit  int    `help:"At most this many jobs, heaviest first (default ${default}; 0: all)." default:"20" placeholder:"N"`
	JSON   bool   `help:"Print JSON (docs/json.md)."`
}

// Help is the long help of weights.
func (c *WeightsCmd) Help() string {
	return `Every runner attempt that ran a job leaves its job's weight in the journal:
its peak memory, CPU and duration, under its repository, workflow and job
name. With a shared PostgreSQL store the weights are the whole fleet's, and
admission expects a new runner of a policy to peak at the 90th percentile of
the policy's newest jobs (docs/weights.md). This lists each job's p50 and p90,
heaviest p90 peak memory first.`
}

// Validate refuses a negative limit.
func (c *WeightsCmd) Validate() error {
	if c.Limit < 0 {
		return invalidArgf("--limit %d: give a number of jobs, 0 or more (0: all)", c.Limit)
	}
	return nil
}

// weightsJSON is one job's weights in `weights --json`.
type weightsJSON struct {
	Repository          string `json:"repository"`
	Workflow            string `json:"workflow"`
	Name                string `json:"name"`
	Count               int    `json:"count"`
	PeakRSSP50Bytes     uint64 `json:"peak_rss_p50_bytes"`
	PeakRSSP90Bytes     uint64 `json:"peak_rss_p90_bytes"`
	CPUAvgP50Millicores uint32 `json:"cpu_avg_p50_millicores"`
	CPUAvgP90Millicores uint32 `json:"cpu_avg_p90_millicores"`
	CPUPeakP50          uint32 `json:"cpu_peak_p50_millicores"`
	CPUPeakP90          uint32 `json:"cpu_peak_p90_millicores"`
	DurationP50         int64  `json:"duration_p50_ns"`
	DurationP90         int64  `json:"duration_p90_ns"`
}

func toWeightsJSON(j store.JobWeights) weightsJSON {
	return weightsJSON{
		Repository: j.Job.Repository, Workflow: j.Job.Workflow, Name: j.Job.Name, Count: j.Count,
		PeakRSSP50Bytes: j.PeakRSSP50, PeakRSSP90Bytes: j.PeakRSSP90,
		CPUAvgP50Millicores: j.CPUAvgP50, CPUAvgP90Millicores: j.CPUAvgP90,
		CPUPeakP50: j.CPUPeakP50, CPUPeakP90: j.CPUPeakP90,
		DurationP50: int64(j.DurationP50), DurationP90: int64(j.DurationP90),
	}
}

// Run lists the jobs' weights.
func (c *WeightsCmd) Run(ctx context.Context, a *App) error {
	if c.Repo != "" {
		if _, err := rm.Repository(c.Repo); err != nil {
			return fmt.Errorf("--repo: %w", err)
		}
	}
	st, err := a.ExistingStore(ctx)
	if err != nil {
		return err
	}
	fleet, ok := st.(store.Fleet)
	if !ok {
		return fmt.Errorf("%w: this store keeps no job weights", rm.ErrInvalid)
	}
	f := store.WeightFilter{Job: store.JobKey{Repository: c.Repo}, Limit: c.Limit}
	if c.Policy != "" {
		af, err := attempts.Query{Policy: c.Policy}.Filter(ctx, st, time.Now())
		if err != nil {
			return err
		}
		f.Policy = af.Policy
	}
	jobs, err := fleet.HeaviestJobs(ctx, f)
	if err != nil {
		return err
	}
	if c.JSON {
		out := make([]weightsJSON, 0, len(jobs))
		for _, j := range jobs {
			out = append(out, toWeightsJSON(j))
		}
		return writeJSON(a.Stdout, out)
	}
	if len(jobs) == 0 {
		a.printf("no job weights match: they are kept as runners finish jobs\n")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "REPOSITORY\tWORKFLOW\tJOB\tRUNS\tPEAK p50\tPEAK p90\tCPU p50\tCPU p90\tTIME p50\tTIME p90")
	for _, j := range jobs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n",
			cmpOr(j.Job.Repository, "-"), cmpOr(j.Job.Workflow, "-"), cmpOr(j.Job.Name, "-"), j.Count,
			bytesize.Format(j.PeakRSSP50), bytesize.Format(j.PeakRSSP90),
			cores(j.CPUAvgP50), cores(j.CPUAvgP90),
			roundDuration(j.DurationP50), roundDuration(j.DurationP90))
	}
	return tw.Flush()
}

// cores prints millicores as cores: "1.25", the one CPU unit of status,
// weights, the TUI and the docs.
func cores(m uint32) string { return fmt.Sprintf("%.2f", float64(m)/1000) }

func roundDuration(d time.Duration) string {
	switch {
	case d >= time.Minute:
		return d.Round(time.Second).String()
	case d >= time.Second:
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Millisecond).String()
}
