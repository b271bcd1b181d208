package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"

	"github.com/google/pprof/profile"
)

// The parts of the bench's process, as the pprof label "part" its
// goroutines carry (world.setUp, Sim.run, StartBench): the daemon's, the
// fake GitHub's serving it in the same process, the bench's own arrivals
// and sampling. Goroutines without the label (the garbage collector's
// workers, the scheduler, anything started before the labels) are
// partRuntime.
const (
	partManager    = "manager"
	partFakeGitHub = "fake-github"
	partBench      = "bench"
	partRuntime    = "runtime"
	// partUnsampled is the process's CPU (getrusage) the profile did not
	// see: it samples each thread every 10 ms of its CPU, so a thread's
	// last part-interval is lost, and no sample is taken while signals
	// are blocked (around each runner's fork).
	partUnsampled = "unsampled"
)

// cpuProfile is a CPU profile of the bench's process over its run, kept in
// memory to split the process's CPU by part: the fake GitHub serves the
// daemon from the same process, and only the profile's labels tell the
// daemon's CPU from the fake's.
type cpuProfile struct {
	buf      bytes.Buffer
	out      io.Writer // also gets the raw profile, when not nil
	startErr error
}

// startCPUProfile starts profiling this process. When a CPU profile is
// already running (a caller's own), the split is not available and stop
// says so.
func startCPUProfile(out io.Writer) *cpuProfile {
	p := &cpuProfile{out: out}
	if err := pprof.StartCPUProfile(&p.buf); err != nil {
		p.startErr = fmt.Errorf("no CPU profile of the run: %w", err)
	}
	return p
}

// stop ends the profile, writes it to out, and returns the CPU seconds
// each part spent. Call it once.
func (p *cpuProfile) stop() (map[string]float64, error) {
	if p.startErr != nil {
		return nil, p.startErr
	}
	pprof.StopCPUProfile()
	var err error
	if p.out != nil {
		if _, werr := p.out.Write(p.buf.Bytes()); werr != nil {
			err = fmt.Errorf("write the CPU profile: %w", werr)
		}
	}
	parts, perr := splitByPart(&p.buf)
	return parts, errors.Join(err, perr)
}

// splitByPart sums a CPU profile's samples by their "part" label, in
// seconds; unlabelled samples are partRuntime's.
func splitByPart(r io.Reader) (map[string]float64, error) {
	prof, err := profile.Parse(r)
	if err != nil {
		return nil, fmt.Errorf("read the CPU profile: %w", err)
	}
	idx := -1
	for i, st := range prof.SampleType {
		if st.Type == "cpu" && st.Unit == "nanoseconds" {
			idx = i
		}
	}
	if idx < 0 {
		return nil, errors.New("read the CPU profile: no cpu/nanoseconds sample type")
	}
	parts := map[string]float64{}
	for _, s := range prof.Sample {
		part := partRuntime
		if v := s.Label["part"]; len(v) > 0 {
			part = v[0]
		}
		parts[part] += float64(s.Value[idx]) / 1e9
	}
	return parts, nil
}

// addUnsampled adds to parts the CPU the process spent (total, from
// getrusage) beyond what the profile sampled.
func addUnsampled(parts map[string]float64, total float64) {
	sampled := 0.0
	for _, v := range parts {
		sampled += v
	}
	if total > sampled {
		parts[partUnsampled] = total - sampled
	}
}

// managerShare is the manager's CPU seconds from a split: its goroutines'
// own, plus what no label tells (the runtime's collector and scheduler,
// the unsampled) in proportion to the manager's share of the labelled
// CPU. The proportion is an estimate (the collector works for whoever
// allocates), stated so wherever the figure is printed.
func managerShare(parts map[string]float64) float64 {
	labelled := 0.0
	for k, v := range parts {
		if k != partRuntime && k != partUnsampled {
			labelled += v
		}
	}
	if labelled == 0 {
		return 0
	}
	m := parts[partManager]
	return m + (parts[partRuntime]+parts[partUnsampled])*m/labelled
}
