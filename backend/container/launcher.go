package container

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/platform"
)

// Labels on every runner container, so that a restarted manager finds its
// host's containers and each one's attempt.
const (
	// LabelManaged marks a container as a runner-manager attempt's; its
	// value is "true".
	LabelManaged = "io.github.runner-manager.managed"
	// LabelHost is the id of the host whose manager launched it.
	LabelHost = "io.github.runner-manager.host"
	// LabelAttempt is the attempt id.
	LabelAttempt = "io.github.runner-manager.attempt"
)

// NamePrefix starts every runner container's name; the attempt id follows.
const NamePrefix = "runner-manager-"

// ContainerName is the name of attempt a's container.
func ContainerName(a rm.AttemptID) string { return NamePrefix + a.String() }

// Launcher runs each attempt of one policy in a new container of the
// policy's image (see the package doc for the image contract), labelled
// with the attempt and the host, named ContainerName(attempt). Its runner
// gets the JIT configuration in ACTIONS_RUNNER_INPUT_JITCONFIG, which the
// engine keeps in the container's configuration: whoever can reach the
// engine's socket reads it with inspect (they can also run anything as
// root on the engine's host, so the socket is the boundary to guard), until
// Cleanup removes the container.
//
// It implements the launcher contract (rm.Launcher): Launch, Adopt (by the
// container of the attempt, checked against the journal's pid and start
// stamp), Cleanup (the container is removed), and RanJob.
type Launcher struct {
	e        *Engine
	host     rm.HostID
	s        Settings
	memoryOf func(rm.AttemptID) uint64
	log      *slog.Logger
	// failedLogs is where a failed attempt's runner output is saved.
	failedLogs string

	ctx    context.Context // ends the watches at Close
	cancel context.CancelFunc

	warnOnce sync.Once
}

var _ rm.Launcher = (*Launcher)(nil)

// Option configures a Launcher.
type Option func(*Launcher)

// WithMemoryFor gives the memory limit of each new container: called at
// each launch with its attempt, e.g. answering the admitted expected peak
// of the policy plus headroom, so that one job cannot take the host; the
// settings' MemoryBytes where it answers 0 (at least MinMemory either
// way).
func WithMemoryFor(f func(rm.AttemptID) uint64) Option {
	return func(l *Launcher) { l.memoryOf = f }
}

// WithFailedLogs saves a failed attempt's runner output (the container's
// stdout and stderr) to dir/<attempt>.log, 0600, before Cleanup removes
// its container: the container, and the engine's log of it, go with it.
func WithFailedLogs(dir string) Option { return func(l *Launcher) { l.failedLogs = dir } }

// NewLauncher returns the launcher of a policy whose runners run in
// containers of engine e as settings s say, labelled as host's.
func NewLauncher(e *Engine, host rm.HostID, s Settings, opts ...Option) (*Launcher, error) {
	if e == nil {
		return nil, errors.New("container launcher: no engine")
	}
	if host.IsZero() {
		return nil, errors.New("container launcher: no host id to label the containers with")
	}
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("container launcher: %w", err)
	}
	l := &Launcher{e: e, host: host, s: s, log: e.log}
	for _, o := range opts {
		o(l)
	}
	l.ctx, l.cancel = context.WithCancel(context.Background())
	return l, nil
}

// Close ends the watches of the launcher's containers (their Done stays
// open) and leaves the containers running: a manager that stops without
// draining re-adopts them at its next start.
func (l *Launcher) Close() error {
	l.cancel()
	return nil
}

// Settings are the launcher's settings.
func (l *Launcher) Settings() Settings { return l.s }

// Launch creates and starts the attempt's container. spec.RunnerDir is not
// used: the runner is the image's. ctx bounds the creation (and a pull);
// the container outlives it. On error a container may exist; Cleanup
// removes it. Errors wrap ErrImageMissing, ErrPullFailed, ErrEngineDown or
// ErrStartFailed where those are the cause.
func (l *Launcher) Launch(ctx context.Context, spec rm.LaunchSpec) (rm.Process, error) {
	if spec.Attempt.IsZero() {
		return nil, errors.New("launch: the spec names no attempt")
	}
	if spec.JITConfig == "" {
		return nil, fmt.Errorf("launch attempt %s: no JIT configuration to start the runner with", spec.Attempt)
	}
	opts := l.createOptions(spec)
	if spec.Warm != nil {
		if err := l.warmLaunch(ctx, &opts, spec.Warm); err != nil {
			return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
		}
	}
	id, err := l.create(ctx, opts)
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, err)
	}
	if _, err := l.e.cli.ContainerStart(ctx, id, client.ContainerStartOptions{}); err != nil {
		if !isDown(err) && ctx.Err() == nil {
			err = fmt.Errorf("%w: %w", ErrStartFailed, err)
		}
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, engineErr("start container "+ContainerName(spec.Attempt), err))
	}
	// Started: the container runs whatever ctx does now.
	ictx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callTimeout)
	defer cancel()
	ins, err := inspectStarted(ictx, func(ctx context.Context) (client.ContainerInspectResult, error) {
		return l.e.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	})
	if err != nil {
		return nil, fmt.Errorf("launch attempt %s: %w", spec.Attempt, engineErr("inspect started container", err))
	}
	p := newProcess(l.e, id, spec.Attempt, 0, 0)
	p.limit = uint64(max(opts.HostConfig.Memory, 0))
	if st := ins.Container.State; st != nil && st.Pid > 0 {
		p.pid, p.start = l.hostProcess(st.Pid, id, spec.Attempt)
		if p.pid > 0 {
			p.oom = watchOOM(p.pid)
		}
	}
	go p.watch(l.ctx)
	return p, nil
}

// inspectStartedTries is how often a container just started is inspected
// before its inspection's error is taken.
const inspectStartedTries = 5

// inspectStarted inspects a container just started. Podman fails the
// inspection of a container whose process has just exited ("open
// /proc/PID/cgroup: no such process", its state not yet updated): it is
// asked again, a little later each time, while it says so; if it still
// does, the container is taken as exited (a zero result, no pid: the
// attempt runs unmetered and Done says how it ended). Other errors are
// returned at once.
func inspectStarted(ctx context.Context, inspect func(context.Context) (client.ContainerInspectResult, error)) (client.ContainerInspectResult, error) {
	for i := 1; ; i++ {
		ins, err := inspect(ctx)
		if err == nil || !processGone(err) {
			return ins, err
		}
		if i == inspectStartedTries {
			return client.ContainerInspectResult{}, nil
		}
		select {
		case <-ctx.Done():
			return client.ContainerInspectResult{}, err
		case <-time.After(time.Duration(i) * 20 * time.Millisecond):
		}
	}
}

// processGone reports whether the engine's error says that the
// container's process it looked at has exited meanwhile.
func processGone(err error) bool {
	return strings.Contains(err.Error(), "no such process")
}

// hostProcess returns pid and its start stamp if pid is the container's
// process on this host; (0, 0), said once at WARN, if not: the attempt
// then runs unmetered.
func (l *Launcher) hostProcess(pid int, id string, a rm.AttemptID) (int, uint64) {
	if !hostPID(pid, id) {
		l.warnOnce.Do(func() {
			l.log.Warn("the engine's container processes are not this host's: container attempts run unmetered and cannot be re-adopted after a restart",
				"engine", l.e.host, "attempt", a.String(), "pid", pid)
		})
		return 0, 0
	}
	start, err := platform.StartTime(pid)
	if err != nil {
		// Exited already: Done will say so.
		return pid, 0
	}
	return pid, start
}

// create creates the attempt's container, pulling the image first when it
// is missing and the settings allow.
func (l *Launcher) create(ctx context.Context, opts client.ContainerCreateOptions) (string, error) {
	res, err := l.e.cli.ContainerCreate(ctx, opts)
	if err != nil && isNotFound(err) && ctx.Err() == nil {
		if l.s.Pull == PullNever {
			return "", fmt.Errorf("image %s: %w on the engine at %s, and pulling is off (pull it, or allow pulls)", l.s.Image, ErrImageMissing, l.e.host)
		}
		if err := l.e.pull(ctx, l.s.Image); err != nil {
			return "", err
		}
		res, err = l.e.cli.ContainerCreate(ctx, opts)
	}
	switch {
	case err == nil:
		return res.ID, nil
	case isConflict(err) || strings.Contains(err.Error(), "already in use"): // Podman answers 500
		return "", fmt.Errorf("container %s exists already: each attempt is launched once: %w", opts.Name, err)
	case isNotFound(err):
		return "", fmt.Errorf("image %s: %w: %w", l.s.Image, ErrImageMissing, err)
	}
	return "", engineErr("create container "+opts.Name, err)
}

// createOptions is the attempt's container: the runner's listener started
// directly in the runner directory, the policy's limits, labels.
func (l *Launcher) createOptions(spec rm.LaunchSpec) client.ContainerCreateOptions {
	dir := l.s.runnerDir()
	cfg := &container.Config{
		Image:      l.s.Image,
		User:       l.s.User,
		Env:        containerEnv(environ(), l.s.PassEnv, spec),
		Entrypoint: []string{path.Join(dir, "bin", "Runner.Listener")},
		Cmd:        []string{"run"},
		WorkingDir: dir,
		Labels: map[string]string{
			LabelManaged: "true",
			LabelHost:    l.host.String(),
			LabelAttempt: spec.Attempt.String(),
		},
	}
	hc := &container.HostConfig{
		NetworkMode: container.NetworkMode(l.s.Network),
		Binds:       append([]string(nil), l.s.Volumes...),
	}
	memory := l.s.MemoryBytes
	if l.memoryOf != nil {
		if m := l.memoryOf(spec.Attempt); m > 0 {
			memory = max(m, MinMemory)
		}
	}
	if memory > 0 {
		memory = min(memory, math.MaxInt64)
		hc.Memory = int64(memory)
		hc.MemorySwap = int64(memory) // no swap: an OOM is an OOM, and RSS tells the truth
	}
	if l.s.CPUs > 0 {
		hc.NanoCPUs = int64(l.s.CPUs * 1e9)
	}
	if l.s.Init {
		init := true
		hc.Init = &init
	}
	return client.ContainerCreateOptions{Name: ContainerName(spec.Attempt), Config: cfg, HostConfig: hc}
}
