//go:build windows

package platform

// ListenerName is the runner's listener in bin\.
const ListenerName = "Runner.Listener.exe"
