package app

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/runner-manager/runner-manager/backend"
	"github.com/runner-manager/runner-manager/doctor"
	"github.com/runner-manager/runner-manager/localapi"
)

// DoctorCmd checks the setup.
type DoctorCmd struct {
	Fix  bool `help:"Repair what can be: the data directory's mode, leftover registrations, attempt directories, runner processes, runner containers and message sessions (not while the daemon runs), and scale sets this host created that no policy serves."`
	JSON bool `help:"Print JSON (docs/json.md): every check with its status, detail and hint."`
}

// doctorJSON is the JSON form of doctor's report.
type doctorJSON struct {
	OK     bool        `json:"ok"`
	Failed int         `json:"failed"`
	Checks []checkJSON `json:"checks"`
}

type checkJSON struct {
	Name   string `json:"name"`
	Status string `json:"status"` // ok, warn or fail
	Detail string `json:"detail"`
	Hint   string `json:"hint"`
}

func toDoctorJSON(checks []doctor.Check) doctorJSON {
	out := doctorJSON{Failed: doctor.Failed(checks), Checks: make([]checkJSON, 0, len(checks))}
	out.OK = out.Failed == 0
	for _, c := range checks {
		out.Checks = append(out.Checks, checkJSON{c.Name, strings.ToLower(c.Status.String()), c.Detail, c.Hint})
	}
	return out
}

// Help is the long help of doctor.
func (c *DoctorCmd) Help() string {
	return `doctor checks, and says how to fix: the configuration, the data directory
(mode 0700, the journal's integrity), free disk against the floor, memory
against the reserve, the installed runner (present, not older than what
GitHub offers), the GitHub credentials and their permissions on every
policy's scope, for container policies the engine (it answers, its API
version) and each policy's image, and leftovers: registrations of this
host that no live attempt owns (classic policies: GitHub's runner list;
scale-set policies: the runner names of the journal's recently ended
attempts, and of live ones whose process is gone, looked up at the
Actions service), attempt directories of ended attempts,
runner processes and runner containers no live attempt owns, and
scale-set message sessions this host's daemon left open (GitHub refuses a
new session while one exists). With --fix it removes the leftovers (only
while the daemon is not running: the daemon reaps them itself).

It exits with status 1 when a check failed. With --json it prints the
checks as one JSON document instead (docs/json.md), with the same status.`
}

// Run checks.
func (c *DoctorCmd) Run(ctx context.Context, a *App) error {
	cfg, err := a.Config()
	if err != nil {
		return err
	}
	checks, err := doctor.Run(ctx, doctor.Setup{
		ConfigPath: cfg.Path, DataDir: cfg.DataDir,
		MemoryReserve: cfg.Admission.MemoryReserve.Bytes(), DiskFloor: cfg.Admission.DiskFloor.Bytes(),
		Journal: a.ExistingStore, Host: a.Host, GitHub: a.GitHub, SessionOwner: sessionOwner,
		Config: cfg, Backends: backend.Doctors(),
		DaemonRunning: func(ctx context.Context) (bool, error) {
			d, err := a.Daemon()
			if err != nil {
				return false, err
			}
			_, err = d.Status(ctx)
			if errors.Is(err, localapi.ErrNotRunning) {
				return false, nil
			}
			return err == nil, err
		},
		Fix: c.Fix,
		Report: func(ch doctor.Check) {
			if !c.JSON {
				a.printf("%s\n", ch)
			}
		},
	})
	if err != nil {
		return err
	}
	if c.JSON {
		if err := writeJSON(a.Stdout, toDoctorJSON(checks)); err != nil {
			return err
		}
	}
	if n := doctor.Failed(checks); n > 0 {
		return fmt.Errorf("%d check(s) failed: see above", n)
	}
	return nil
}
