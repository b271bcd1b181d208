package daemon

import (
	"context"
	"time"

	"github.com/runner-manager/runner-manager/datadir"
)

// pruneLogsEvery is how often the daemon bounds the kept attempt logs.
const pruneLogsEvery = 10 * time.Minute

// logRetention is the retention of kept logs the daemon enforces: the
// Config's, else the defaults.
func (d *Daemon) logRetention() datadir.LogRetention {
	if r := d.cfg.Logs; r != nil {
		return *r
	}
	return datadir.LogRetention{MaxAge: datadir.DefaultLogMaxAge, MaxBytes: datadir.DefaultLogMaxBytes}
}

// pruneLogs bounds the kept attempt logs (<data>/logs/) now and every
// pruneLogsEvery until ctx ends, the oldest first.
func (d *Daemon) pruneLogs(ctx context.Context) {
	r := d.logRetention()
	t := time.NewTicker(pruneLogsEvery)
	defer t.Stop()
	for {
		got, err := d.dir.PruneKeptLogs(r, time.Now())
		if err != nil {
			d.log.Warn("cannot remove old attempt logs", "err", err)
		}
		if got.Removed > 0 {
			d.log.Info("removed old attempt logs", "attempts", got.Removed, "bytes", got.RemovedBytes,
				"kept", got.Kept, "kept_bytes", got.KeptBytes)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
