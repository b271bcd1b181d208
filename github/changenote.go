package github

import "log/slog"

// changeNote logs a watch's failures once per change: the first failure
// of a kind at WARN, its repeats at DEBUG (a retry every few seconds would
// otherwise fill the log with one fact), and the recovery at INFO.
type changeNote struct {
	last string // the last failure logged at WARN; "" while healthy
}

// failed logs err: at WARN when it differs from the last failure.
func (n *changeNote) failed(log *slog.Logger, err error, args ...any) {
	msg := err.Error()
	args = append([]any{"err", msg}, args...)
	if msg == n.last {
		log.Debug("scale-set watch still failing, retrying", args...)
		return
	}
	n.last = msg
	log.Warn("scale-set watch failed, retrying", args...)
}

// recovered logs the end of a run of failures, once.
func (n *changeNote) recovered(log *slog.Logger) {
	if n.last == "" {
		return
	}
	log.Info("scale-set watch serving again", "after", n.last)
	n.last = ""
}
