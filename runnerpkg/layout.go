package runnerpkg

import "path/filepath"

// ListenerPath is where an installed runner in runnerDir keeps its
// listener: bin/Runner.Listener (bin\Runner.Listener.exe on Windows).
func ListenerPath(runnerDir string) string { return filepath.Join(runnerDir, "bin", ListenerName) }

// WorkerLogPattern matches the logs the runner's Worker process writes in
// its root's _diag/, one per job it runs (the listener's own are Runner_*):
// the runner's own trace of a job, whatever the backend.
const WorkerLogPattern = "Worker_*.log"
