// Package container runs each runner attempt in a container of its own,
// through the Docker Engine API: Docker, or Podman's Docker-compatible
// service. It owns the container backend (Backend, the launcher a daemon
// registers: one Launcher per policy over one Engine, with each
// container's memory limit and its end's memory), the container launcher
// (Launcher, one per policy's settings), the connection to an engine
// (Engine, one per host), the image contract a runner image must meet, and
// the recovery helpers that find this host's runner containers after a
// restart; and, as Kind, what the rest of the manager asks of the
// backend: the rules of a policy's rm.ContainerSettings and its doctor
// checks (the engine, the images, leftover containers).
//
// The image contract: the image holds an installed GitHub Actions runner
// in one directory (DefaultRunnerDir, /home/runner, as in GitHub's own
// actions-runner image; Settings.RunnerDir for another), so that
// <dir>/bin/Runner.Listener exists and <dir> is writable by the image's
// user: the runner writes its JIT files, _work/ and _diag/ there. Each
// attempt's container runs <dir>/bin/Runner.Listener run (the image's
// ENTRYPOINT and CMD are replaced), in <dir>, with the JIT configuration in
// ACTIONS_RUNNER_INPUT_JITCONFIG, never in its command line.
//
// A container's processes are host processes when the engine runs on this
// host: a Process's PID is the container's init process as the engine
// reports it (State.Pid), checked to be that container's on this host, so
// the meters walk its tree as they do a native runner's.
//
// Failures come back as errors wrapping this package's sentinels:
// ErrEngineDown, ErrImageMissing, ErrPullFailed, ErrStartFailed, and, for
// a container the kernel's OOM killer ended, ErrOOMKilled from
// Process.Failure.
package container
