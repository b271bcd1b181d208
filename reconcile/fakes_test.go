package reconcile_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/reconcile"
	"github.com/runner-manager/runner-manager/store"
	"github.com/runner-manager/runner-manager/store/sqlite/sqlitetest"
	"github.com/runner-manager/runner-manager/store/storetest"
)

// clock is a manual clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func newClock() *clock { return &clock{now: storetest.Now()} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// fakeTarget is an in-memory GitHub target: registrations, call counts,
// injectable failures.
type fakeTarget struct {
	mu        sync.Mutex
	waitErr   error
	waitSince time.Time
	nextID    int64
	runners   map[int64]*rm.Runner
	calls     map[string]int
	// jitErr, removeErr and listErr fail the next calls while set.
	jitErr    error
	removeErr error
	listErr   error
	// onJIT runs at each JIT call (under no lock), for ordering checks.
	onJIT func(name string)
	// cannotList makes Runners answer rm.ErrCannotList, as a scale
	// set's target does; unlisted names are left out of the list, and
	// both are still found by LookupRunner.
	cannotList bool
	unlisted   map[string]bool
	watch      func(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error
}

var (
	_ rm.Registrar    = (*fakeTarget)(nil)
	_ rm.DemandSource = (*fakeTarget)(nil)
)

// targetOf is the Target of a maker's value that is both sides, or its
// error.
func targetOf[T interface {
	rm.Registrar
	rm.DemandSource
}](v T, err error) (reconcile.Target, error) {
	if err != nil {
		return reconcile.Target{}, err
	}
	return reconcile.TargetOf(v), nil
}

func newFakeTarget() *fakeTarget {
	return &fakeTarget{nextID: 100, runners: map[int64]*rm.Runner{}, calls: map[string]int{}}
}

func (f *fakeTarget) JITConfig(ctx context.Context, name string) (rm.JITConfig, error) {
	f.mu.Lock()
	f.calls["jit"]++
	err, on := f.jitErr, f.onJIT
	f.mu.Unlock()
	if on != nil {
		on(name)
	}
	if err != nil {
		return rm.JITConfig{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	f.runners[f.nextID] = &rm.Runner{ID: f.nextID, Name: name}
	return rm.JITConfig{RunnerID: f.nextID, RunnerName: name, Encoded: "SECRET-JIT-" + name}, nil
}

func (f *fakeTarget) RemoveRunner(ctx context.Context, id int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["remove"]++
	if f.removeErr != nil {
		return f.removeErr
	}
	r, ok := f.runners[id]
	if !ok {
		return nil
	}
	if r.Busy {
		return fmt.Errorf("runner %d: %w", id, rm.ErrRunnerBusy)
	}
	delete(f.runners, id)
	return nil
}

func (f *fakeTarget) Runners(ctx context.Context, prefix string) ([]rm.Runner, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["list"]++
	if f.cannotList {
		return nil, fmt.Errorf("list runners: %w", rm.ErrCannotList)
	}
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out []rm.Runner
	for _, r := range f.runners {
		if strings.HasPrefix(r.Name, prefix) && !f.unlisted[r.Name] {
			out = append(out, *r)
		}
	}
	slices.SortFunc(out, func(a, b rm.Runner) int { return int(a.ID - b.ID) })
	return out, nil
}

func (f *fakeTarget) LookupRunner(ctx context.Context, id int64, name string) (rm.Runner, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["lookup"]++
	if f.listErr != nil {
		return rm.Runner{}, false, f.listErr
	}
	for _, r := range f.runners {
		if (id != 0 && r.ID == id) || (id == 0 && r.Name == name) {
			return *r, true, nil
		}
	}
	return rm.Runner{}, false, nil
}

func (f *fakeTarget) Waiting() (error, time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.waitErr, f.waitSince
}

func (f *fakeTarget) Watch(ctx context.Context, maxCapacity func() int, report func(rm.Demand)) error {
	if f.watch != nil {
		return f.watch(ctx, maxCapacity, report)
	}
	<-ctx.Done()
	return nil
}

func (f *fakeTarget) Close(ctx context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls["close"]++
	return nil
}

func (f *fakeTarget) set(name string, fn func(r *rm.Runner)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runners {
		if r.Name == name {
			fn(r)
		}
	}
}

func (f *fakeTarget) drop(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, r := range f.runners {
		if r.Name == name {
			delete(f.runners, id)
		}
	}
}

func (f *fakeTarget) add(r rm.Runner) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runners[r.ID] = &r
}

func (f *fakeTarget) has(name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.runners {
		if r.Name == name {
			return true
		}
	}
	return false
}

func (f *fakeTarget) count(call string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[call]
}

func (f *fakeTarget) setErr(jit, remove, list error) {
	f.mu.Lock()
	f.jitErr, f.removeErr, f.listErr = jit, remove, list
	f.mu.Unlock()
}

// fakeProc is a runner process made of channels.
type fakeProc struct {
	pid     int
	start   uint64
	done    chan struct{}
	once    sync.Once
	mu      sync.Mutex
	code    int
	stopped bool
}

var _ rm.Process = (*fakeProc)(nil)

func (p *fakeProc) PID() int              { return p.pid }
func (p *fakeProc) Start() uint64         { return p.start }
func (p *fakeProc) Done() <-chan struct{} { return p.done }
func (p *fakeProc) ExitCode() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.code
}

func (p *fakeProc) exit(code int) {
	p.once.Do(func() {
		p.mu.Lock()
		p.code = code
		p.mu.Unlock()
		close(p.done)
	})
}

func (p *fakeProc) Stop(ctx context.Context, grace time.Duration) error {
	p.mu.Lock()
	p.stopped = true
	p.mu.Unlock()
	p.exit(-1)
	return nil
}

func (p *fakeProc) wasStopped() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stopped
}

// fakeLauncher starts fakeProcs; Adopt finds those registered as alive.
type fakeLauncher struct {
	mu        sync.Mutex
	nextPID   int
	procs     map[rm.AttemptID]*fakeProc
	specs     []rm.LaunchSpec
	alive     map[int]*fakeProc
	cleanups  map[rm.AttemptID]bool
	worked    map[rm.AttemptID]bool // roots holding a Worker log
	launchErr error
	onLaunch  func(spec rm.LaunchSpec)
}

var _ rm.Launcher = (*fakeLauncher)(nil)

func newFakeLauncher() *fakeLauncher {
	return &fakeLauncher{nextPID: 1000, procs: map[rm.AttemptID]*fakeProc{}, alive: map[int]*fakeProc{},
		cleanups: map[rm.AttemptID]bool{}, worked: map[rm.AttemptID]bool{}}
}

// RanJob is the native launcher's: a Worker log in the attempt's root,
// gone with the root at Cleanup.
func (f *fakeLauncher) RanJob(a rm.AttemptID) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.worked[a]
}

// work leaves the trace of a job in the attempt's root, as a runner's
// Worker does.
func (f *fakeLauncher) work(a rm.AttemptID) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.worked[a] = true
}

func (f *fakeLauncher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	f.mu.Lock()
	on, err := f.onLaunch, f.launchErr
	f.mu.Unlock()
	if on != nil {
		on(spec)
	}
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextPID++
	p := &fakeProc{pid: f.nextPID, start: uint64(f.nextPID) * 7, done: make(chan struct{}), code: -1}
	f.procs[spec.Attempt] = p
	f.specs = append(f.specs, spec)
	return p, nil
}

func (f *fakeLauncher) Adopt(a rm.AttemptID, pid int, start uint64) (rm.Process, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.alive[pid]
	if !ok || p.start != start {
		return nil, fmt.Errorf("adopt %d: %w", pid, rm.ErrProcessGone)
	}
	f.procs[a] = p
	return p, nil
}

func (f *fakeLauncher) Cleanup(a rm.AttemptID, failed bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cleanups[a] = failed
	delete(f.worked, a)
	return nil
}

func (f *fakeLauncher) proc(a rm.AttemptID) *fakeProc {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.procs[a]
}

func (f *fakeLauncher) launches() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.specs)
}

func (f *fakeLauncher) cleanup(a rm.AttemptID) (failed, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	failed, ok = f.cleanups[a]
	return
}

// fakeMeters has fixed figures and remembers how it was told each attempt
// ended.
type fakeMeters struct {
	mu       sync.Mutex
	rss      map[rm.AttemptID]uint64
	expected map[rm.PolicyID]uint64
	ended    map[rm.AttemptID]rm.Outcome
}

var _ rm.Meters = (*fakeMeters)(nil)

func newFakeMeters() *fakeMeters {
	return &fakeMeters{rss: map[rm.AttemptID]uint64{}, expected: map[rm.PolicyID]uint64{}, ended: map[rm.AttemptID]rm.Outcome{}}
}

func (m *fakeMeters) CurrentRSS(a rm.AttemptID) (uint64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.rss[a]
	return v, ok
}

func (m *fakeMeters) Peek(a rm.AttemptID) (rm.AttemptUsage, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.rss[a]
	if !ok {
		return rm.AttemptUsage{}, false
	}
	return rm.AttemptUsage{PeakRSSBytes: v, CPUAvgMillicores: 250, CPUPeakMillicores: 900, Samples: 3}, true
}

func (m *fakeMeters) Ended(a rm.AttemptID, o rm.Outcome) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.ended[a] = o
	delete(m.rss, a)
}

// endedWith is the outcome the meters were last told of a.
func (m *fakeMeters) endedWith(a rm.AttemptID) (rm.Outcome, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o, ok := m.ended[a]
	return o, ok
}

// SampleOnce and Run sample nothing: the tests set the figures.
func (m *fakeMeters) SampleOnce(rm.LiveAttempts, rm.HostID) []rm.PolicyID { return nil }

func (m *fakeMeters) Run(ctx context.Context, _ rm.LiveAttempts, _ rm.HostID, _ func() bool, _ func(rm.PolicyID)) {
	<-ctx.Done()
}

func (m *fakeMeters) ExpectedPeak(p rm.PolicyID, estimate uint64) uint64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if v, ok := m.expected[p]; ok {
		return v
	}
	return estimate
}

// fakeMemory is a host of a fixed size.
type fakeMemory struct{ total uint64 }

func (m fakeMemory) Memory() (uint64, uint64, error) { return m.total, m.total / 2, nil }

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// env is one loop under test over a real journal and the fakes.
type env struct {
	t        *testing.T
	ctx      context.Context
	clock    *clock
	st       store.Store
	host     rm.Host
	policy   rm.Policy
	target   *fakeTarget
	launcher *fakeLauncher
	meters   *fakeMeters
	logs     *syncBuffer
	loop     *reconcile.Loop
	cfg      reconcile.Config
}

// newEnv makes a journal with a host and a policy (built by pb, host set),
// and a loop over fakes; edit adjusts the loop's config.
func newEnv(t *testing.T, pb *storetest.PolicyBuilder, edit func(c *reconcile.Config)) *env {
	t.Helper()
	st := sqlitetest.MustOpen(t)
	ctx := context.Background()
	host := storetest.NewHost().Build()
	require.NoError(t, st.PutHost(ctx, host))
	if pb == nil {
		pb = storetest.NewPolicy().Repository("acme/repo").Autoscale("home", 2).Active()
	}
	pol := pb.Host(host.ID).Build()
	require.NoError(t, st.InsertPolicy(ctx, pol))
	e := &env{t: t, ctx: ctx, clock: newClock(), st: st, host: host, policy: pol,
		target: newFakeTarget(), launcher: newFakeLauncher(), meters: newFakeMeters(), logs: &syncBuffer{}}
	e.cfg = reconcile.Config{
		Store: st, Target: reconcile.TargetOf(e.target), Launcher: e.launcher, Meters: e.meters, Host: host,
		Policies: []rm.Policy{pol}, Now: e.clock.Now,
		Logger:      slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		LoopOptions: reconcile.LoopOptions{ScaleDownAfter: -1},
	}
	if edit != nil {
		edit(&e.cfg)
	}
	loop, err := reconcile.NewLoop(e.cfg)
	require.NoError(t, err)
	e.loop = loop
	t.Cleanup(loop.Close)
	return e
}

// pass runs one pass and fails the test on an error.
func (e *env) pass() reconcile.Result {
	e.t.Helper()
	res, err := e.loop.Reconcile(e.ctx)
	require.NoError(e.t, err)
	return res
}

func (e *env) live() []rm.Attempt {
	e.t.Helper()
	as, err := e.st.ActiveAttempts(e.ctx, e.policy.ID)
	require.NoError(e.t, err)
	return as
}

func (e *env) attempt(id rm.AttemptID) rm.Attempt {
	e.t.Helper()
	a, err := e.st.Attempt(e.ctx, id)
	require.NoError(e.t, err)
	return a
}

func (e *env) ended() []rm.Attempt {
	e.t.Helper()
	as, err := e.st.Attempts(e.ctx, store.AttemptFilter{Policy: e.policy.ID, States: []rm.AttemptState{rm.StateFinished, rm.StateFailed}})
	require.NoError(e.t, err)
	return as
}

func (e *env) demand(n int, events ...rm.JobEvent) {
	e.loop.ReportDemand(rm.Demand{Wanted: n, Events: events, At: e.clock.Now()})
}

// record writes an attempt straight into the journal (a leftover of a
// previous manager).
func (e *env) record(a rm.Attempt) rm.Attempt {
	e.t.Helper()
	require.NoError(e.t, e.st.RecordAttempt(e.ctx, a))
	return a
}

// jobKey is the scale-set jobId of test job n: a UUID, as on github.com,
// that reads as no number.
func jobKey(n int64) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", n) }

func started(name string, job int64) rm.JobEvent {
	return rm.JobEvent{Kind: rm.JobStarted, RunnerName: name, JobID: jobKey(job), RunID: job * 10, DisplayName: fmt.Sprintf("build %d", job), Workflow: "ci.yml"}
}

func completed(name string, job int64) rm.JobEvent {
	return rm.JobEvent{Kind: rm.JobCompleted, RunnerName: name, JobID: jobKey(job), Result: "succeeded"}
}

// runLoop runs a loop of cfg (in a synctest bubble, on its clock when
// cfg.Now is time.Now) until stop, which ends it, waits for Run to return
// and closes it.
func runLoop(t *testing.T, cfg reconcile.Config) (loop *reconcile.Loop, stop func()) {
	t.Helper()
	loop, err := reconcile.NewLoop(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = loop.Run(ctx)
	}()
	return loop, func() {
		cancel()
		<-done
		loop.Close()
	}
}
