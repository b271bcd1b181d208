//go:build !windows

package runnerpkg

// ListenerName is the runner's listener in bin/.
const ListenerName = "Runner.Listener"
