package simulate

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/runner-manager/runner-manager/internal/bytesize"
)

// WriteText prints the summary as the demo does.
func (s Summary) WriteText(w io.Writer) {
	mode := s.Mode
	fmt.Fprintf(w, "\nsummary (%s mode, %s)\n", mode, s.Elapsed.Round(100*time.Millisecond))
	fmt.Fprintf(w, "  jobs served:        %d of %d", s.Served, s.Jobs)
	if s.Failed > 0 || s.Canceled > 0 {
		fmt.Fprintf(w, " (%d failed, %d canceled)", s.Failed, s.Canceled)
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "  runners:            %d distinct ephemeral runners; %d jobs started twice\n", s.DistinctRunners, s.RanTwice)
	fmt.Fprintf(w, "  wait for a runner:  p50 %s, p95 %s\n", s.WaitP50.Round(time.Millisecond), s.WaitP95.Round(time.Millisecond))
	fmt.Fprintf(w, "  peak concurrency:   %d jobs at once (%d live runners)\n", s.PeakConcurrency, s.PeakLiveRunners)
	refusals := "none"
	if len(s.Refusals) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(s.Refusals)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, s.Refusals[k]))
		}
		refusals = strings.Join(parts, ", ")
	}
	fmt.Fprintf(w, "  admission refusals: %s\n", refusals)
	perJob := func(n int) float64 { return float64(n) / float64(max(s.Served, 1)) }
	fmt.Fprintf(w, "  GitHub calls/job:   %.1f (REST %.1f, scale-set service %.1f; %d calls in all)\n",
		s.CallsPerJob(), perJob(s.RESTCalls), perJob(s.ScaleSetCalls), s.RESTCalls+s.ScaleSetCalls)
	var outcomes []string
	for _, k := range slices.Sorted(maps.Keys(s.Outcomes)) {
		outcomes = append(outcomes, fmt.Sprintf("%d %s", s.Outcomes[k], k))
	}
	fmt.Fprintf(w, "  attempts:           %s\n", strings.Join(outcomes, ", "))
}

// ms prints milliseconds, as seconds from one second on.
func ms(q float64) string {
	if q >= 1000 {
		return fmt.Sprintf("%.2fs", q/1000)
	}
	return fmt.Sprintf("%.1fms", q)
}

// WriteText prints the report as the bench does.
func (r BenchReport) WriteText(w io.Writer) {
	mode := r.Mode + " mode"
	if r.ClassicPollMS > 0 {
		mode += fmt.Sprintf(", polling every %s", time.Duration(r.ClassicPollMS)*time.Millisecond)
	}
	if r.Webhooks {
		mode += ", with webhooks"
	}
	fmt.Fprintf(w, "\nbench (%s, %s, %.1fs)\n", mode, r.Host, r.ElapsedSeconds)
	fmt.Fprintf(w, "  jobs served:          %d of %d queued (%d failed, %d canceled, %d started twice), %d distinct runners\n",
		r.Served, r.Queued, r.Failed, r.Canceled, r.RanTwice, r.DistinctRunners)
	q := func(name string, x Quantiles) {
		fmt.Fprintf(w, "  %-21s p50 %s, p95 %s, p99 %s, max %s (%d)\n", name+":", ms(x.P50), ms(x.P95), ms(x.P99), ms(x.Max), x.Count)
	}
	q("wait for a runner", r.Wait)
	q("exit → replacement", r.Recycle)
	q("launch", r.Launch)
	q("runner start → job", r.RunnerToJob)
	q("job", r.JobRun)
	q("job end → exit", r.JobToExit)
	fmt.Fprintf(w, "  per policy:           name      max  estimate  jobs  peak runners  peak jobs  min admitted\n")
	for _, p := range r.PerPolicy {
		fmt.Fprintf(w, "                        %-9s %3d  %8s  %4d  %12d  %9d  %12d\n",
			p.Name, p.Max, bytesize.Format(p.EstimateBytes), p.Jobs, p.PeakRunners, p.PeakJobs, p.MinAdmitted)
	}
	refusals := "none"
	if len(r.Admission.Refusals) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(r.Admission.Refusals)) {
			parts = append(parts, fmt.Sprintf("%s %d", k, r.Admission.Refusals[k]))
		}
		refusals = strings.Join(parts, ", ")
	}
	ad := r.Admission
	fmt.Fprintf(w, "  admission:            peak committed %s of %s (host %s − reserve %s); refusals: %s\n",
		bytesize.Format(ad.PeakCommittedBytes), bytesize.Format(ad.HostMemoryBytes-ad.ReserveBytes),
		bytesize.Format(ad.HostMemoryBytes), bytesize.Format(ad.ReserveBytes), refusals)
	cl := r.Calls
	fmt.Fprintf(w, "  GitHub calls per job: REST %.2f (%.2f charged to the rate limit), scale-set service %.2f; runners' own %.2f\n",
		cl.RESTPerJob, cl.RESTChargedPerJob, cl.ScaleSetPerJob, cl.RunnerCallsPerJob)
	fmt.Fprintf(w, "  REST budget:          lowest %d left (exhausted: %t); runners live when the queue emptied %d, stranded %d\n",
		cl.RESTBudgetLowest, cl.RESTBudgetExhausted, r.LiveWhenQueueEmptied, r.Stranded)
	fmt.Fprintf(w, "  this process:         %.2f CPU seconds (%.1f%% of one core; runners excluded, the fake GitHub included), peak RSS %s (%s)\n",
		r.Daemon.CPUSeconds, r.Daemon.CPUPercentOfOneCore, bytesize.Format(r.Daemon.PeakRSSBytes), r.Daemon.PeakRSSSource)
	if d := r.Daemon; len(d.CPUSecondsByPart) > 0 {
		var parts []string
		for _, k := range slices.Sorted(maps.Keys(d.CPUSecondsByPart)) {
			parts = append(parts, fmt.Sprintf("%s %.2f s", k, d.CPUSecondsByPart[k]))
		}
		fmt.Fprintf(w, "  CPU by part:          %s (profiled)\n", strings.Join(parts, ", "))
		fmt.Fprintf(w, "  the manager's share:  %.2f CPU seconds (%.1f%% of one core: its goroutines, the runtime's and the unsampled in proportion)\n",
			d.ManagerCPUSeconds, d.ManagerCPUPercentOfOneCore)
	} else if d.CPUProfileError != "" {
		fmt.Fprintf(w, "  CPU by part:          none (%s)\n", d.CPUProfileError)
	}
	if r.JournalElsewhere {
		fmt.Fprintf(w, "  journal:              the store given to the bench\n")
	} else {
		fmt.Fprintf(w, "  journal:              %s\n", bytesize.Format(uint64(r.JournalBytes)))
	}
	var outcomes []string
	for _, k := range slices.Sorted(maps.Keys(r.Attempts)) {
		outcomes = append(outcomes, fmt.Sprintf("%d %s", r.Attempts[k], k))
	}
	fmt.Fprintf(w, "  attempts:             %s\n", strings.Join(outcomes, ", "))
}

// FormatMS prints milliseconds as the reports do (as seconds from one
// second on), for front ends that print other reports beside them.
func FormatMS(q float64) string { return ms(q) }
