package native

import (
	"context"
	"log/slog"
	"runtime"
	"strings"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/backend/jobreport"
)

// jobReport is the job report's part of a launch (WithJobReport).
type jobReport struct {
	host string
}

// WithJobReport makes every job report its own footprint in its log and
// step summary (package jobreport): each attempt's root gets the runner's
// job hooks, which chain any hook the runner's environment (or the
// install's .env) already names. host is the host's name the report
// shows. Keep the usage files current with a jobreport.Tracker over Root.
// The hooks are shell scripts: on Windows nothing is written.
func WithJobReport(host string) Option {
	return func(l *Launcher) {
		if runtime.GOOS != "windows" {
			l.report = &jobReport{host: host}
		}
	}
}

// install writes the hooks into root and returns env with them set; on
// an error the runner starts without them (a job is never refused for
// its report).
func (r *jobReport) install(ctx context.Context, log *slog.Logger, root string, spec rm.LaunchSpec, env []string) []string {
	info := jobreport.Info{Attempt: spec.Attempt.String(), Policy: spec.Policy.Name, Host: r.host, Backend: string(rm.BackendNative),
		Workspace: jobreport.Workspace(spec.Warm)}
	set, err := jobreport.Install(root, info, env)
	if err != nil {
		log.WarnContext(ctx, "the job report's hooks could not be written: this job's log will not show its footprint",
			"attempt", spec.Attempt.String(), "err", err)
		return env
	}
	var b envBuilder
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		b.set(name, kv)
	}
	for _, kv := range set {
		name, _, _ := strings.Cut(kv, "=")
		b.set(name, kv)
	}
	return b.env
}

// HookJob is the job the attempt's started hook recorded (the job report,
// WithJobReport), as the journal's job: the workflow ref, the job's id in
// its workflow, the run id. False when no hook recorded one, or the root
// is gone.
func (l *Launcher) HookJob(a rm.AttemptID) (rm.Job, bool) {
	if a.IsZero() {
		return rm.Job{}, false
	}
	seen, ok := jobreport.ReadJob(l.Root(a))
	if !ok {
		return rm.Job{}, false
	}
	return seen.AsJob(), true
}
