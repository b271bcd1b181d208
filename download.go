package runnermanager

// RunnerDownload is one package of the runner (actions/runner) as its
// publisher offers it: GitHub's runner-downloads list or a release's
// assets. The runner's own names for systems and architectures are in OS
// and Arch (linux, osx, win; x64, arm64, arm).
type RunnerDownload struct {
	OS, Arch, URL, Filename, SHA256 string
}
