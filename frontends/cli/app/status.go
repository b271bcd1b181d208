package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/configfile"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/internal/bytesize"
	"github.com/runner-manager/runner-manager/localapi"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/status"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/warm"
)

// StatusCmd shows the live figures.
type StatusCmd struct {
	JSON bool `help:"Print JSON (docs/json.md): the daemon's status.Status, and whether the daemon answered."`
}

// Run prints the status: the daemon's when it runs, else what the journal
// and this host tell.
func (c *StatusCmd) Run(ctx context.Context, a *App) error {
	st, live, err := a.currentStatus(ctx)
	if err != nil {
		return err
	}
	if live && st.Fleet == nil {
		st.Fleet = a.fleetStatus(ctx)
	}
	if live {
		st = a.withFleetSets(ctx, st)
	}
	if cfg, err := a.Config(); err == nil {
		// Stale as this host's heartbeat setting says: a fleet's hosts share it.
		st.Fleet.Judge(time.Now().UTC(), status.StaleAfter(time.Duration(cfg.Fleet.Heartbeat)))
	}
	if c.JSON {
		return writeJSON(a.Stdout, toStatusJSON(st, live))
	}
	if !live {
		a.printf("daemon: not running (start it with `runner-manager run`); figures from the journal\n")
	}
	return renderStatus(a.Stdout, st, time.Now())
}

// statusJSON is the JSON form of `status`: status.Status's keys, and
// whether the daemon answered; a host or a GitHub budget nobody saw is null,
// as are the refusals when no daemon counts them.
type statusJSON struct {
	Daemon bool `json:"daemon"`
	status.Status
	Host   *rm.Host   `json:"host"`
	Budget *rm.Budget `json:"budget"`
}

func toStatusJSON(st status.Status, live bool) statusJSON {
	out := statusJSON{Daemon: live, Status: st}
	if !st.Host.ID.IsZero() {
		out.Host = &st.Host
	}
	if !st.Budget.SeenAt.IsZero() || st.Budget.Limit > 0 {
		out.Budget = &st.Budget
	}
	if out.Policies == nil {
		out.Policies = []status.Policy{}
	}
	if out.Attempts == nil {
		out.Attempts = []status.Attempt{}
	}
	if out.Jobs == nil {
		out.Jobs = []status.Job{}
	}
	switch {
	case !live:
		out.Refusals = nil
	case out.Refusals == nil:
		out.Refusals = map[string]int{}
	}
	return out
}

// fleetStatus is the fleet as the store tells it, beside a daemon's
// figures; nil, with a warning, when the store cannot tell.
func (a *App) fleetStatus(ctx context.Context) *status.Fleet {
	s, err := a.ExistingStore(ctx)
	if err == nil {
		var f *status.Fleet
		if f, err = status.FleetOf(ctx, s, time.Now().UTC(), 0); err == nil {
			return f
		}
	}
	fmt.Fprintf(a.Stderr, "runner-manager: the fleet's hosts are not shown: %v\n", err)
	return nil
}

// withFleetSets adds to a daemon's figures what the store tells of its
// fleet policies (status.Status.WithFleetSets): who holds each one's
// session, each host's share, where each job went. A store that cannot
// tell leaves st as it is, with a warning.
func (a *App) withFleetSets(ctx context.Context, st status.Status) status.Status {
	fleet := false
	for _, p := range st.Policies {
		fleet = fleet || (p.Fleet && p.FleetSet == nil)
	}
	if !fleet {
		return st
	}
	s, err := a.ExistingStore(ctx)
	if err == nil {
		var out status.Status
		if out, err = st.WithFleetSets(ctx, s); err == nil {
			return out
		}
	}
	fmt.Fprintf(a.Stderr, "runner-manager: the fleet policies' shares are not shown: %v\n", err)
	return st
}

// currentStatus is the running daemon's status (live), else what the
// journal and this host tell.
func (a *App) currentStatus(ctx context.Context) (st status.Status, live bool, err error) {
	d, err := a.Daemon()
	if err != nil {
		return status.Status{}, false, err
	}
	qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	st, err = d.Status(qctx)
	cancel()
	if errors.Is(err, localapi.ErrNotRunning) {
		st, err = a.journalStatus(ctx)
		return st, false, err
	}
	return st, err == nil, err
}

// journalStatus is what the journal and this host tell, for when no
// daemon runs.
func (a *App) journalStatus(ctx context.Context) (status.Status, error) {
	cfg, err := a.Config()
	if err != nil {
		return status.Status{}, err
	}
	s, err := a.ReadStore(ctx)
	if err != nil {
		return status.Status{}, err
	}
	id, _ := datadir.New(cfg.DataDir).LoadOrCreateHostID() // zero: every policy
	st, err := status.FromJournal(ctx, s, id, time.Now().UTC())
	st.Memory = status.MemoryOf(platform.NewMachine(), cfg.DataDir, cfg.Admission.MemoryReserve.Bytes(), cfg.Admission.DiskFloor.Bytes())
	bound := reconcile.SpareBound(cfg.Admission.MaxSpares)
	st.Memory.MaxSpares = &bound
	if err == nil && cfg.Warm.Enabled {
		st.Warm = a.journalWarm(ctx, s, id, cfg)
	}
	return st, err
}

// heldLine says what admission holds of the memory and for what: the
// runners' expected peaks (a reservation, not their use) and the warm
// spares' part, which a job takes back.
func heldLine(m status.Memory) string {
	if m.CommittedBytes == 0 {
		return ""
	}
	if m.Runners == 0 && m.Spares == 0 { // a daemon that does not count them
		return fmt.Sprintf("; admission holds %s (expected peaks, not use)", bytesize.Format(m.CommittedBytes))
	}
	jobs := m.CommittedBytes - min(m.SpareBytes, m.CommittedBytes)
	out := fmt.Sprintf("; admission holds %s for %s (expected peaks, not use)", bytesize.Format(jobs), plural(m.Runners, "runner"))
	if m.SpareBytes > 0 || m.Spares > 0 {
		out += fmt.Sprintf(" and %s for %s (a job takes it back)", bytesize.Format(m.SpareBytes), plural(m.Spares, "warm spare"))
	}
	return out
}

// plural is "1 runner", "3 runners".
func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// journalWarm is the slots as their files tell, held where the journal's
// live attempts name them; nil, with a warning, when they cannot be read.
func (a *App) journalWarm(ctx context.Context, s store.Store, host rm.HostID, cfg *configfile.File) *status.Warm {
	p := warm.NewPool(datadir.New(cfg.DataDir), warm.WithCap(int64(cfg.Warm.Cap.Bytes())))
	live, err := s.LiveAttempts(ctx, host)
	if err == nil {
		ps, _ := s.Policies(ctx)
		p.HoldLive(live, ps)
	}
	w, err := p.Status()
	if err != nil {
		fmt.Fprintf(a.Stderr, "runner-manager: the workspace slots are not shown: %v\n", err)
		return nil
	}
	return w
}

// statusRepos bounds the repositories status lists under warm:.
const statusRepos = 5

// renderWarm prints the slots: their size against the cap, then a line
// per repository, most recently used first.
func renderWarm(w io.Writer, wm *status.Warm, now time.Time) {
	if wm == nil {
		return
	}
	fmt.Fprintf(w, "warm:     %d slot(s), %s of the %s cap", wm.Slots, bytesize.Format(uint64(max(wm.Bytes, 0))), bytesize.Format(uint64(max(wm.CapBytes, 0))))
	if wm.Slots > 0 {
		fmt.Fprint(w, " (`runner-manager warm list`)")
	}
	fmt.Fprintln(w)
	for i, r := range wm.Repos {
		if i == statusRepos {
			fmt.Fprintf(w, "          … %d more repositories\n", len(wm.Repos)-statusRepos)
			break
		}
		held := ""
		if r.Held > 0 {
			held = fmt.Sprintf(", %d held", r.Held)
		}
		fmt.Fprintf(w, "          %s (%s): %d slot(s)%s, %s, %d hit(s) of %d use(s), last %s\n", r.Repo, r.Backend, r.Slots, held,
			bytesize.Format(uint64(max(r.Bytes, 0))), r.Hits, r.Uses, ago(now, r.LastUsed))
	}
}

// renderStatus prints a Status for people.
func renderStatus(w io.Writer, st status.Status, now time.Time) error {
	m := st.Memory
	if d := st.Manager; d != nil {
		fmt.Fprintf(w, "daemon:   running, pid %d, since %s (%s), version %s, data %s\n", d.PID,
			d.Since.Local().Format(time.DateTime), ago(now, d.Since), d.Version, d.DataDir)
	}
	if st.Host.Name != "" {
		fmt.Fprintf(w, "host:     %s (%s/%s, %d CPUs)\n", st.Host.Name, st.Host.OS, st.Host.Arch, st.Host.CPUs)
	}
	if m.TotalBytes > 0 {
		fmt.Fprintf(w, "memory:   %s total, %s available, %s reserved%s\n",
			bytesize.Format(m.TotalBytes), bytesize.Format(m.AvailableBytes), bytesize.Format(m.ReserveBytes), heldLine(m))
	}
	if m.MaxSpares != nil {
		fmt.Fprintf(w, "spares:   %d warm; the host keeps %d at most ([admission] max_spares)\n", warmSpares(st), *m.MaxSpares)
	}
	if st.HostCPUPercent != nil {
		if st.Host.CPUs > 0 {
			fmt.Fprintf(w, "cpu:      %s of %d cores busy\n", cores(uint32(*st.HostCPUPercent*float64(st.Host.CPUs)*10)), st.Host.CPUs)
		} else {
			fmt.Fprintf(w, "cpu:      %.0f%% busy\n", *st.HostCPUPercent)
		}
	}
	if m.DiskFreeBytes > 0 {
		fmt.Fprintf(w, "disk:     %s free (floor %s)\n", bytesize.Format(m.DiskFreeBytes), bytesize.Format(m.DiskFloorBytes))
	}
	renderWarm(w, st.Warm, now)
	if b := st.Budget; !b.SeenAt.IsZero() || b.Limit > 0 {
		fmt.Fprintf(w, "github:   %d of %d REST calls left, resets %s\n", b.Remaining, b.Limit, b.Reset.Local().Format("15:04:05"))
	}
	if st.Runner != nil {
		fmt.Fprintf(w, "runner:   %s\n", st.Runner.Summary(time.Local))
	}
	if len(st.Refusals) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(st.Refusals)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, st.Refusals[k]))
		}
		fmt.Fprintf(w, "refused:  %s\n", strings.Join(parts, ", "))
	}
	if running, waiting := busyRunners(st), st.WaitingJobs(); running+waiting > 0 {
		fmt.Fprintf(w, "jobs:     %d running, %d waiting (`runner-manager jobs` lists them)\n", running, waiting)
	}
	fmt.Fprintln(w)
	if err := renderFleet(w, st, now); err != nil {
		return err
	}
	if len(st.Policies) == 0 {
		fmt.Fprintln(w, "no policies: add one with `runner-manager policy add`")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "POLICY\tMODE\tJOBS\tSPARES\tIDLE\tWAITING\tADMITTED\tEXPECTED PEAK\tBOOT\tNOTE")
	names := map[rm.PolicyID]string{}
	for _, p := range st.Policies {
		names[p.ID] = p.Name
		boot := "-"
		if p.Boot > 0 {
			boot = p.Boot.Round(100 * time.Millisecond).String()
		}
		mode := p.Mode
		if p.Fleet {
			mode = "fleet"
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d/%d\t%d\t%d\t%d\t%s\t%s\t%s\n", p.Name, mode, p.Busy, p.Max,
			p.Spares, p.SpareTarget, p.Idle, p.Waiting, p.Admitted, bytesOrDash(p.ExpectedPeakBytes), boot, policyNote(p))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	renderFleetSets(w, st.Policies)
	renderJobStarts(w, st.Policies)
	if len(st.Attempts) == 0 {
		return nil
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ATTEMPT\tPOLICY\tSTATE\tRUNNER\tJOB\tAGE\tRSS\tPEAK\tCPU")
	for _, at := range st.Attempts {
		age := ""
		if !at.CreatedAt.IsZero() {
			age = now.Sub(at.CreatedAt).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", at.ID, names[at.Policy], at.State, at.RunnerName,
			cmpOr(at.JobLabel(), "-"), age, bytesOrDash(at.RSSBytes), bytesOrDash(at.PeakRSSBytes), cores(at.CPUMillicores))
	}
	return tw.Flush()
}

// warmSpares is the host's live warm spares, all policies together.
func warmSpares(st status.Status) int {
	n := 0
	for _, p := range st.Policies {
		n += p.Spares
	}
	return n
}

// policyNote says what a person asks of a policy first: why its jobs
// wait, else its last error, else admission's last refusal; "paused"
// before all.
func policyNote(p status.Policy) string {
	var parts []string
	if p.Paused {
		parts = append(parts, "paused")
	}
	if p.Waiting > 0 && p.WaitReason != "" {
		parts = append(parts, fmt.Sprintf("%d waiting: %s", p.Waiting, p.WaitReason))
	}
	if p.LastError != "" {
		parts = append(parts, p.LastError)
	} else if p.LastRefusal != "" && p.Waiting == 0 {
		parts = append(parts, "refused: "+p.LastRefusal)
	}
	if p.SpareNote != "" && len(parts) == 0 {
		parts = append(parts, "spares held: "+p.SpareNote)
	}
	return strings.Join(parts, "; ")
}

// ago is how long before now t was, in whole seconds, as "5m3s ago".
func ago(now, t time.Time) string {
	return now.Sub(t).Round(time.Second).String() + " ago"
}

func bytesOrDash(b uint64) string {
	if b == 0 {
		return "-"
	}
	return bytesize.Format(b)
}

func mapsKeys[K comparable, V any](m map[K]V) func(func(K) bool) { return maps.Keys(m) }

// renderFleet prints the fleet's hosts, when more than one shares the
// store: a single host's status says it all already.
func renderFleet(w io.Writer, st status.Status, now time.Time) error {
	if st.Fleet == nil || len(st.Fleet.Hosts) < 2 {
		return nil
	}
	stale := 0
	for _, h := range st.Fleet.Hosts {
		if h.Stale {
			stale++
		}
	}
	fmt.Fprintf(w, "fleet:    %d hosts", len(st.Fleet.Hosts))
	if stale > 0 {
		fmt.Fprintf(w, ", %d stale (no heartbeat for %s)", stale, st.Fleet.StaleAfter)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "HOST\tID\tMEMORY\tCPUS\tOS\tVERSION\tLIVE\tSEEN\tNOTE")
	for _, h := range st.Fleet.Hosts {
		seen, note := "never", ""
		if h.SeenAt != nil {
			seen = ago(now, *h.SeenAt)
		}
		if h.Stale {
			note = "stale"
		}
		if h.ID == st.Host.ID {
			note = strings.TrimSpace("this host " + note)
		}
		id := h.ID.String()
		if len(id) > 8 {
			id = id[:8]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", h.Name, id, bytesOrDash(h.MemoryBytes), h.CPUs,
			cmpOr(h.OS, "-"), cmpOr(h.Version, "-"), h.LiveAttempts, seen, note)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	return nil
}

// renderFleetSets prints, for each fleet policy the store told of, which
// host holds its scale set's session and what each host serves of it.
func renderFleetSets(w io.Writer, policies []status.Policy) {
	for _, p := range policies {
		if p.FleetSet != nil {
			fmt.Fprintf(w, "fleet %s: %s\n", p.Name, p.FleetSet.Summary())
		}
	}
}

// busyRunners is how many jobs run on this host's runners: its busy ones.
func busyRunners(st status.Status) int {
	n := 0
	for _, p := range st.Policies {
		n += p.Busy
	}
	return n
}

// renderJobStarts prints, for each policy whose jobs started in the last
// hour, how fast: the wait from GitHub's queue to the runner taking the
// job, and the manager's part of it (launch and boot).
func renderJobStarts(w io.Writer, policies []status.Policy) {
	first := true
	for _, p := range policies {
		js := p.JobStart
		if js.Jobs == 0 {
			continue
		}
		if first {
			fmt.Fprintln(w, "\njob start, last hour (queued → taken; the manager's part: launch and boot):")
			first = false
		}
		fmt.Fprintf(w, "  %s: %d jobs, p50 %s, p95 %s; the manager's part p50 %s, p95 %s\n", p.Name, js.Jobs,
			fmtSplit(js.P50), fmtSplit(js.P95), fmtSplit(js.OursP50), fmtSplit(js.OursP95))
	}
}
