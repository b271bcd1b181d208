package attempts

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	rm "github.com/runner-manager/runner-manager"
	"github.com/runner-manager/runner-manager/datadir"
	"github.com/runner-manager/runner-manager/platform"
	"github.com/runner-manager/runner-manager/store"
)

// LogPath is where the attempt's runner log is: in its root under
// <dataDir>/attempts/ while it is live, then where the launcher kept it
// (<dataDir>/logs/<id>/, with the runner's _diag/ logs gzipped beside it)
// (datadir.Dir.RunnerLog).
func LogPath(dataDir string, id rm.AttemptID) string {
	return datadir.New(dataDir).RunnerLog(id)
}

// tailMaxBytes bounds how much of a log TailLog reads: a log of very long
// lines gives fewer lines rather than a huge read.
const tailMaxBytes = 1 << 20

// TailLog returns the last lines of the attempt's runner log (see LogPath),
// read from its end; none, and no error, if the attempt has no log (yet,
// or any more).
func TailLog(dataDir string, id rm.AttemptID, lines int) ([]string, error) {
	if id.IsZero() {
		return nil, errors.New("no attempt given")
	}
	f, err := os.Open(LogPath(dataDir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open the runner log: %w", err)
	}
	defer f.Close()
	return platform.TailLines(f, lines, tailMaxBytes)
}

// LogOptions say how much of a log to print.
type LogOptions struct {
	// Lines prints only the last lines first; 0 prints it all.
	Lines int
	// Follow keeps printing what the runner writes until the attempt ends
	// in the journal, or ctx ends.
	Follow bool
	// Every is how often a follow looks for more (default 200 ms).
	Every time.Duration
}

// CopyLog writes attempt at's runner log to w. An attempt with no log yet
// is an error unless following; an ended attempt whose log is gone says
// where it was and why it went.
func CopyLog(ctx context.Context, st store.Store, dataDir string, at rm.Attempt, w io.Writer, o LogOptions) error {
	path := LogPath(dataDir, at.ID)
	f, err := os.Open(path)
	switch {
	case err == nil:
		defer f.Close()
		if o.Lines > 0 {
			if err := platform.SeekLastLines(f, o.Lines); err != nil {
				return err
			}
		}
		if _, err := io.Copy(w, f); err != nil {
			return err
		}
	case !errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("read the log: %w", err)
	case !at.Live():
		return fmt.Errorf("attempt %s ended and its log is gone (%s): ended attempts' logs are kept under %s as [logs] max_age and max_size allow (14d, 1GiB by default)",
			at.ID, path, datadir.New(dataDir).KeptLogs())
	case !o.Follow:
		return fmt.Errorf("attempt %s (%s) has no log yet: try again with -f", at.ID, at.State)
	default:
		f = nil
	}
	if !o.Follow {
		return nil
	}
	return follow(ctx, st, dataDir, at.ID, f, w, o.Every)
}

// follow copies what is appended to the attempt's log (opened as f, or nil
// while it does not exist yet) until the attempt is no longer live. A log
// first seen after the attempt ended is read where it was kept.
func follow(ctx context.Context, st store.Store, dataDir string, id rm.AttemptID, f *os.File, w io.Writer, every time.Duration) error {
	if every <= 0 {
		every = 200 * time.Millisecond
	}
	open := func() {
		if f != nil {
			return
		}
		if g, err := os.Open(LogPath(dataDir, id)); err == nil {
			f = g
		}
	}
	opened := f == nil // a file follow opens is closed by it
	defer func() {
		if opened && f != nil {
			f.Close()
		}
	}()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		open()
		if f != nil {
			if _, err := io.Copy(w, f); err != nil {
				return err
			}
		}
		cur, err := st.Attempt(ctx, id)
		if err != nil {
			return err
		}
		if !cur.Live() {
			open()
			if f != nil {
				_, _ = io.Copy(w, f)
			}
			return nil
		}
	}
}
