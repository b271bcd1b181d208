package app

import (
	"context"
	"fmt"
	"strconv"
	"text/tabwriter"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/attempts"
	"github.com/runner-manager/runner-manager/internal/bytesize"
)

// Validate refuses a negative limit.
func (c *AttemptsCmd) Validate() error {
	if c.Limit < 0 {
		return invalidArgf("--limit %d: give a number of attempts, 0 or more (0: all)", c.Limit)
	}
	return nil
}

// AttemptsCmd lists attempts.
type AttemptsCmd struct {
	Policy string   `help:"Only this policy's attempts." placeholder:"NAME" predictor:"policy"`
	State  []string `help:"Only attempts in these states: pending, registering, starting, idle, busy, finished, failed; or live (the first five)." placeholder:"STATE,..." sep:","`
	Since  string   `help:"Only attempts created since a duration ago (90m, 24h, 7d) or a time (2025-03-01, RFC 3339)." placeholder:"WHEN"`
	Limit  int      `help:"At most this many, newest first (default ${default}; 0: all)." default:"50" placeholder:"N"`
	JSON   bool     `help:"Print JSON."`
}

// Run lists the attempts.
func (c *AttemptsCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ReadStore(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	f, err := attempts.Query{Policy: c.Policy, States: c.State, Since: c.Since, Limit: c.Limit}.Filter(ctx, st, now)
	if err != nil {
		return err
	}
	policies, err := attempts.Policies(ctx, st)
	if err != nil {
		return err
	}
	list, err := st.Attempts(ctx, f)
	if err != nil {
		return err
	}
	if c.JSON {
		out := make([]attemptJSON, 0, len(list))
		for _, at := range list {
			out = append(out, toAttemptJSON(at, policies))
		}
		return writeJSON(a.Stdout, out)
	}
	if len(list) == 0 {
		a.printf("no attempts match\n")
		return nil
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tPOLICY\tSTATE\tCREATED\tDURATION\tJOB\tPEAK RSS\tOUTCOME")
	for _, at := range list {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", at.ID, policyLabel(policies, at.Policy), at.State,
			at.CreatedAt.Local().Format("01-02 15:04:05"), duration(at, now), jobName(at.Job),
			peak(at.Usage), outcomeShort(at.Outcome))
	}
	return tw.Flush()
}

func duration(at rm.Attempt, now time.Time) string {
	end := at.EndedAt
	if end.IsZero() {
		end = now
	}
	if at.CreatedAt.IsZero() {
		return ""
	}
	return end.Sub(at.CreatedAt).Round(100 * time.Millisecond).String()
}

func jobName(j rm.Job) string {
	switch {
	case j.Name != "":
		return j.Name
	case j.Known():
		return j.ID
	}
	return "-"
}

func peak(u rm.AttemptUsage) string {
	if u.Samples == 0 {
		return "-"
	}
	return bytesize.Format(u.PeakRSSBytes)
}

func outcomeShort(o rm.Outcome) string {
	if o.IsZero() {
		return "-"
	}
	if o.Kind == rm.Failed {
		return "failed(" + string(o.Reason) + ")"
	}
	return string(o.Kind)
}

// attemptJSON is the stable JSON form of an attempt (docs/json.md): every
// key always present, null where nothing is known yet.
type attemptJSON struct {
	ID             string             `json:"id"`
	Policy         string             `json:"policy"`
	PolicyName     *string            `json:"policy_name"`
	PolicyRemoved  bool               `json:"policy_removed"`
	State          string             `json:"state"`
	RunnerName     string             `json:"runner_name"`
	GitHubRunnerID *int64             `json:"github_runner_id"`
	PID            *int               `json:"pid"`
	Job            *rm.Job            `json:"job"`
	ExitCode       *int               `json:"exit_code"`
	Usage          usageJSON          `json:"usage"`
	Outcome        *outcomeJSON       `json:"outcome"`
	Times          map[string]*string `json:"times"`
	LastMessage    string             `json:"last_message"`
	StartSplit     *startSplitJSON    `json:"start_split"`
}

// startSplitJSON is how the attempt's job came to start (rm.StartSplit),
// in nanoseconds.
type startSplitJSON struct {
	AssignNS int64 `json:"assign_ns"`
	ReadyNS  int64 `json:"ready_ns"`
	TakeNS   int64 `json:"take_ns"`
}

type usageJSON struct {
	PeakRSSBytes      uint64 `json:"peak_rss_bytes"`
	CPUAvgMillicores  uint32 `json:"cpu_avg_millicores"`
	CPUPeakMillicores uint32 `json:"cpu_peak_millicores"`
	Samples           uint32 `json:"samples"`
}

type outcomeJSON struct {
	Kind   string `json:"kind"`
	Reason string `json:"reason"`
	Detail string `json:"detail"`
}

// policyLabel is how a listing names a policy: "home", or "home (removed)"
// for the history of a removed policy.
func policyLabel(policies map[rm.PolicyID]rm.Policy, id rm.PolicyID) string {
	p, ok := policies[id]
	switch {
	case !ok:
		return ""
	case !p.RemovedAt.IsZero():
		return p.Name + " (removed)"
	}
	return p.Name
}

func toAttemptJSON(at rm.Attempt, policies map[rm.PolicyID]rm.Policy) attemptJSON {
	out := attemptJSON{
		ID: at.ID.String(), Policy: at.Policy.String(), State: string(at.State),
		RunnerName: at.RunnerName, ExitCode: at.ExitCode,
		Usage:       usageJSON{at.Usage.PeakRSSBytes, at.Usage.CPUAvgMillicores, at.Usage.CPUPeakMillicores, at.Usage.Samples},
		Times:       map[string]*string{},
		LastMessage: at.LastMessage,
	}
	if p, ok := policies[at.Policy]; ok {
		out.PolicyName = &p.Name
		out.PolicyRemoved = !p.RemovedAt.IsZero()
	}
	if at.GitHubRunnerID != 0 {
		out.GitHubRunnerID = &at.GitHubRunnerID
	}
	if at.PID != 0 {
		out.PID = &at.PID
	}
	if at.Job != (rm.Job{}) {
		job := at.Job // marshals as docs/json.md says (rm.Job.MarshalJSON)
		out.Job = &job
	}
	if s, ok := at.StartSplit(); ok {
		out.StartSplit = &startSplitJSON{AssignNS: int64(s.Assign), ReadyNS: int64(s.Ready), TakeNS: int64(s.Take)}
	}
	if !at.Outcome.IsZero() {
		out.Outcome = &outcomeJSON{string(at.Outcome.Kind), string(at.Outcome.Reason), at.Outcome.Detail}
	}
	for _, s := range rm.AttemptStates {
		out.Times[string(s)] = nil
		if t := at.StateAt(s); !t.IsZero() {
			v := t.UTC().Format(time.RFC3339Nano)
			out.Times[string(s)] = &v
		}
	}
	return out
}

// AttemptCmd groups the commands on one attempt.
type AttemptCmd struct {
	Show AttemptShowCmd `cmd:"" help:"Show one attempt: states with times, runner, job, usage, outcome."`
}

// AttemptShowCmd shows one attempt.
type AttemptShowCmd struct {
	ID   string `arg:"" help:"Attempt id (from runner-manager attempts), or a unique prefix of it." predictor:"attempt"`
	JSON bool   `help:"Print JSON."`
}

// Run shows the attempt.
func (c *AttemptShowCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ReadStore(ctx)
	if err != nil {
		return err
	}
	at, err := attempts.Find(ctx, st, c.ID)
	if err != nil {
		return err
	}
	policies, err := attempts.Policies(ctx, st)
	if err != nil {
		return err
	}
	if c.JSON {
		return writeJSON(a.Stdout, toAttemptJSON(at, policies))
	}
	cfg, _ := a.Config()
	exit := ""
	if at.ExitCode != nil {
		exit = fmt.Sprint(*at.ExitCode)
	}
	job := ""
	if at.Job.Known() {
		job = fmt.Sprintf("%s %s (workflow %s, run %d)", at.Job.ID, at.Job.Name, at.Job.Workflow, at.Job.RunID)
		if n := at.Job.Number; n != 0 && strconv.FormatInt(n, 10) != at.Job.ID {
			job += fmt.Sprintf(" (REST job %d)", n)
		}
	} else if at.Job != (rm.Job{}) {
		// Named by the runner's job hook (docs/job-report.md): GitHub gave no id.
		job = fmt.Sprintf("%s (workflow %s, run %d; as the runner's job hook saw it, GitHub named none)", at.Job.Name, at.Job.Workflow, at.Job.RunID)
	}
	usage := ""
	if at.Usage.Samples > 0 {
		usage = fmt.Sprintf("peak RSS %s, CPU average %s cores, busiest %s cores, %d samples",
			bytesize.Format(at.Usage.PeakRSSBytes), cores(at.Usage.CPUAvgMillicores), cores(at.Usage.CPUPeakMillicores), at.Usage.Samples)
	}
	process := ""
	if at.PID != 0 {
		process = fmt.Sprintf("pid %d (start %d)", at.PID, at.ProcessStart)
	}
	tw := tabwriter.NewWriter(a.Stdout, 0, 4, 2, ' ', 0)
	rows := [][2]string{
		{"id", at.ID.String()},
		{"policy", policyLabel(policies, at.Policy) + " (" + at.Policy.String() + ")"},
		{"state", string(at.State)},
		{"runner", at.RunnerName},
		{"github runner id", nonZero(at.GitHubRunnerID)},
		{"process", process},
		{"job", job},
		{"job start", startSplitText(at)},
		{"exit code", exit},
		{"outcome", outcomeText(at.Outcome)},
		{"usage", usage},
		{"last message", at.LastMessage},
	}
	for _, s := range rm.AttemptStates {
		if t := at.StateAt(s); !t.IsZero() {
			rows = append(rows, [2]string{"  " + string(s), t.Local().Format("2006-01-02 15:04:05.000")})
		}
	}
	if cfg != nil {
		rows = append(rows, [2]string{"log", attempts.LogPath(cfg.DataDir, at.ID)})
	}
	for _, r := range rows {
		if r[1] != "" {
			fmt.Fprintf(tw, "%s:\t%s\n", r[0], r[1])
		}
	}
	return tw.Flush()
}

func nonZero(n int64) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprint(n)
}

func outcomeText(o rm.Outcome) string {
	if o.IsZero() {
		return ""
	}
	return o.String()
}

// LogsCmd prints an attempt's runner log.
type LogsCmd struct {
	Attempt string `arg:"" help:"Attempt id, or a unique prefix of it." predictor:"attempt"`
	Follow  bool   `short:"f" help:"Keep printing what the runner writes, until the attempt ends (or Ctrl-C)."`
	Lines   int    `short:"n" help:"Print only the last N lines first (0: all)." default:"0" placeholder:"N"`
}

// Validate refuses a negative line count.
func (c *LogsCmd) Validate() error {
	if c.Lines < 0 {
		return invalidArgf("-n %d: give a number of lines, 0 or more (0: all)", c.Lines)
	}
	return nil
}

// followEvery is how often logs -f looks for more.
var followEvery = 200 * time.Millisecond

// Run prints the log.
func (c *LogsCmd) Run(ctx context.Context, a *App) error {
	st, err := a.ReadStore(ctx)
	if err != nil {
		return err
	}
	at, err := attempts.Find(ctx, st, c.Attempt)
	if err != nil {
		return err
	}
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	return attempts.CopyLog(ctx, st, cfg.DataDir, at, a.Stdout, attempts.LogOptions{Lines: c.Lines, Follow: c.Follow, Every: followEvery})
}

// startSplitText says how the attempt's job came to start: GitHub's part,
// the manager's, the runner's; "" until it took a job whose queue time
// GitHub gave.
func startSplitText(at rm.Attempt) string {
	s, ok := at.StartSplit()
	if !ok {
		return ""
	}
	ready := fmtSplit(s.Ready) + " (the manager: launch and boot)"
	if s.Ready == 0 && !at.IdleAt.IsZero() && !at.IdleAt.After(at.BusyAt) {
		ready = "0s (the manager: a runner was listening already)"
	}
	assign := fmtSplit(s.Assign) + " queued → assigned (GitHub)"
	if at.Job.AssignedAt.IsZero() {
		assign = "no assignment told (classic mode)"
	}
	return fmt.Sprintf("%s waited: %s · → listening %s · → taken %s (the runner)", fmtSplit(s.Total()), assign, ready, fmtSplit(s.Take))
}

// fmtSplit is a part of a job's start for people: milliseconds below a
// second, tenths above.
func fmtSplit(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return d.Round(100 * time.Millisecond).String()
}
